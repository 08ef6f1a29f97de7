"""What resync 2.0.1 verifies of a download, which ``benchmarks/baseline.py`` relies on when it
compares the engine with it: asked for ``--hash md5 --hash sha-256`` against a Source that lists
both (spec 5.2.2, ``hash``), it drops them as if the Source listed neither, and stores a corrupt
body without a word. Our engine refuses the same body and fetches it again."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from ..sync.conftest import held
from .resync import Resync

BODY = b"0123456789" * 100


def test_resync_verifies_no_listed_hash_where_the_engine_refuses_a_corrupt_body(
        resync: Resync, server: SourceServer, client: ResourceSyncClient,
        tmp_path: Path) -> None:
    source = ResourceSyncSource(server, resources={"a.bin": BODY})
    source.publish()
    uri = source.uri("a.bin")
    into = tmp_path / "resync"
    into.mkdir()

    server.corrupt(urlsplit(uri).path)
    done = resync.run("resync-sync", "--baseline", "-v", "--hash", "md5", "--hash", "sha-256",
                      f"--capabilitylist={source.capability_list_url}",
                      f"{server.url('/')}={into}", cwd=tmp_path)

    stored = (into / urlsplit(uri).path.lstrip("/")).read_bytes()
    assert stored != BODY and len(stored) == len(BODY)  # the corrupt body, kept
    said = done.stdout + done.stderr
    assert "Not calculating md5, sha-256 hash(es)" in said
    assert "does not match" not in said

    server.corrupt(urlsplit(uri).path)
    mirror = LocalDestination(tmp_path / "mirror")
    checkpoint = run_baseline(client, mirror, capability_list_url=source.capability_list_url)

    assert held(mirror) == {uri: BODY}
    assert server.count(urlsplit(uri).path) == 2 + 1  # resync's one, our refused one and retry
    assert checkpoint.stats["fetched"] == 1
