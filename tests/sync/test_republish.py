"""A mirror others sync from (spec 14.8): its own documents, published over HTTP, carry a
Destination of the mirror through every run of the mirror, not only the latest, and through
the changes a baseline makes as well as an incremental run's."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX, KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from .conftest import client_for, held


def publish(mirror: LocalDestination, server: SourceServer, prefix: str,
            served: set[str]) -> set[str]:
    """Serve every object and document of ``mirror`` under ``prefix``, as a web server over
    its directory would; what is no longer there answers 404. The paths served."""
    paths = set()
    for key in [*mirror.keys(""), *mirror.keys(RESERVED_PREFIX)]:
        path = prefix + quote(key, safe="/")
        info = mirror.info(key)
        body = mirror.read_bytes(key)
        assert body is not None
        server.put(path, body, (info.type if info else None) or "application/xml")
        paths.add(path)
    for gone in served - paths:
        server.remove(gone)
    return paths


def as_published(state: dict[str, bytes], base: str) -> dict[str, bytes]:
    """The Source's resources by their URL at the published mirror."""
    return {base + quote(KeyMapper().key(uri), safe="/"): body for uri, body in state.items()}


def test_a_destination_of_the_mirror_misses_no_run_of_it(
        client: ResourceSyncClient, source: ResourceSyncSource, tmp_path: Path) -> None:
    upstream = LocalDestination(tmp_path / "mirror")
    downstream = LocalDestination(tmp_path / "mirror-of-the-mirror")
    with SourceServer(max_lifetime=120) as web, client_for(web) as reader:
        base = web.url("/mirror/")
        capability_list = base + quote(RESERVED_PREFIX) + "capabilitylist.xml"
        position = run_baseline(client, upstream, capability_list_url=source.capability_list_url,
                                public_url=base)
        served = publish(upstream, web, "/mirror/", set())
        standing = run_baseline(reader, downstream, capability_list_url=capability_list)
        assert held(downstream) == as_published(source.state(), base)

        def mirror_run(*changes: tuple[str, bytes | None]) -> Checkpoint:
            """Changes at the Source, then one incremental run of the mirror (which keeps the
            public URL the baseline was given), published."""
            for name, body in changes:
                if body is None:
                    source.delete(name)
                elif source.uri(name) in source.state():
                    source.update(name, body)
                else:
                    source.create(name, body)
            source.publish()
            checkpoint = run_incremental(client, upstream, checkpoint=position,
                                         capability_list_url=source.capability_list_url)
            nonlocal served
            served = publish(upstream, web, "/mirror/", served)
            return checkpoint

        # three runs of the mirror before its Destination looks again (12.2)
        position = mirror_run(("r01.txt", b"one, changed\n"))
        position = mirror_run(("r02.txt", b"two, changed\n"), ("new.txt", b"new\n"))
        position = mirror_run(("r03.txt", None))
        standing = run_incremental(reader, downstream, checkpoint=standing,
                                   capability_list_url=capability_list)
        assert standing.stats["fetched"] == 3 and standing.stats["removed"] == 1
        assert held(downstream) == as_published(source.state(), base)

        position = mirror_run(("r04.txt", b"four, changed\n"))
        standing = run_incremental(reader, downstream, checkpoint=standing,
                                   capability_list_url=capability_list)
        assert standing.stats["fetched"] == 1 and standing.stats["removed"] == 0
        assert held(downstream) == as_published(source.state(), base)

        # a baseline of the mirror again (a Source without Change Lists, say) changes it too
        source.update("r05.txt", b"five, changed\n")
        source.delete("r06.txt")
        source.publish()
        run_baseline(client, upstream, capability_list_url=source.capability_list_url,
                     remove_missing=True)
        publish(upstream, web, "/mirror/", served)
        standing = run_incremental(reader, downstream, checkpoint=standing,
                                   capability_list_url=capability_list)
        assert standing.stats["fetched"] == 1 and standing.stats["removed"] == 1
        assert held(downstream) == as_published(source.state(), base)


def test_a_late_destination_of_the_mirror_baselines_from_its_resource_list_and_changes(
        tmp_path: Path) -> None:
    """The mirror rewrites its Resource List only at a compaction: a Destination joining after
    an incremental run of the mirror baselines from the older list and takes what changed
    since from the mirror's Change Lists, in one run (issue 26)."""
    resources = {f"r{n:02d}.txt": f"resource {n}\n".encode() for n in range(30)}
    with (SourceServer(max_lifetime=120) as server, SourceServer(max_lifetime=120) as web,
          client_for(server) as client, client_for(web) as reader):
        source = ResourceSyncSource(server, resources=resources)
        source.publish()
        upstream = LocalDestination(tmp_path / "mirror")
        base = web.url("/mirror/")
        start = run_baseline(client, upstream, capability_list_url=source.capability_list_url,
                             public_url=base)
        source.update("r01.txt", b"one, changed and longer\n")
        source.delete("r02.txt")
        source.create("new.txt", b"new\n")
        source.publish()
        run_incremental(client, upstream, checkpoint=start,
                        capability_list_url=source.capability_list_url)
        publish(upstream, web, "/mirror/", set())
        late = LocalDestination(tmp_path / "late")
        joined = run_baseline(reader, late, capability_list_url=base + quote(RESERVED_PREFIX)
                              + "capabilitylist.xml")
        assert held(late) == as_published(source.state(), base)
        assert joined.stats["changed_after"] == 3
