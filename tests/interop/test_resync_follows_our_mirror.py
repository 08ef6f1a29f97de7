"""resync 2.0.1 as a Destination of our mirror (spec 14.8): given the mirror's Capability List,
its baseline holds every resource of the mirror, byte for byte, and so does its incremental run
given the mirror's Change List."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.writer import CHANGE_LIST_INDEX

from ..sync.conftest import held
from ..sync.test_republish import publish
from .built import ResyncBuiltSource
from .conftest import FILES
from .resync import Resync


def files_under(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file under ``root``."""
    return {path.relative_to(root).as_posix(): path.read_bytes()
            for path in root.rglob("*") if path.is_file()}


def mirror_files(mirror: LocalDestination) -> dict[str, bytes]:
    """What a Destination of the published mirror should hold: each resource's bytes at the
    path of its URL (resync keeps the percent-escapes of a URL's path in its file names)."""
    return {quote(key, safe="/"): mirror.read_bytes(key) or b"" for key in mirror.keys("")
            if mirror.info(key) is not None}


def test_resync_baselines_our_mirror_byte_for_byte(
        client: ResourceSyncClient, filled: ResyncBuiltSource, resync: Resync,
        tmp_path: Path) -> None:
    filled.build_resource_list()
    mirror = LocalDestination(tmp_path / "mirror")
    with SourceServer(max_lifetime=120) as web:
        run_baseline(client, mirror, capability_list_url=filled.capability_list_url,
                     public_url=web.url("/"))
        publish(mirror, web, "/", set())
        into = tmp_path / "resync"
        into.mkdir()

        resync.run("resync-sync", "--baseline",
                   f"--capabilitylist={web.url('/' + RESERVED_PREFIX + 'capabilitylist.xml')}",
                   f"{web.url('/')}={into}", cwd=tmp_path)

    assert held(mirror) == filled.state()
    assert files_under(into) == mirror_files(mirror)
    assert len(files_under(into)) == len(FILES)


def test_resync_follows_our_mirrors_change_list_given_by_hand(
        client: ResourceSyncClient, server: SourceServer, resync: Resync,
        tmp_path: Path) -> None:
    """resync 2.0.1 reads no Change List Index: each Change List the index lists is given to it
    (docs/interop.md)."""
    source = ResourceSyncSource(server, resources={"a.txt": b"a\n", "b.txt": b"b\n"})
    source.publish()
    mirror = LocalDestination(tmp_path / "mirror")
    into = tmp_path / "resync"
    into.mkdir()
    with SourceServer(max_lifetime=120) as web:
        base = web.url("/")
        checkpoint = run_baseline(client, mirror, capability_list_url=source.capability_list_url,
                                  public_url=base)
        served = publish(mirror, web, "/", set())
        resync.run("resync-sync", "--baseline",
                   f"--capabilitylist={web.url('/' + RESERVED_PREFIX + 'capabilitylist.xml')}",
                   f"{base}={into}", cwd=tmp_path)
        source.update("a.txt", b"a, changed\n")
        source.create("c.txt", b"c\n")
        source.delete("b.txt")
        source.publish()
        run_incremental(client, mirror, checkpoint=checkpoint,
                        capability_list_url=source.capability_list_url)
        publish(mirror, web, "/", served)
        [change_list] = read_document(mirror.read_bytes(CHANGE_LIST_INDEX) or b"").entries

        resync.run("resync-sync", "--incremental", "--delete",
                   f"--changelist-uri={change_list.loc}", f"{base}={into}", cwd=tmp_path)

    assert files_under(into) == mirror_files(mirror)
    assert sorted(mirror_files(mirror).values()) == [b"a, changed\n", b"c\n"]
