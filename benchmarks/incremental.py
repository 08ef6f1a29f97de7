"""Incremental benchmark: what polling and syncing cost, in requests counted at the Source.

(a) A poll that finds no change: the Change List asked for again by the client that read it
    before (as a sensor in poke mode, or a trigger, keeps one). Bar: one conditional request,
    answered 304, and no resource GET.
(b) 10,000 changes spread over 1,000 resources (ten updates each, interleaved), applied by one
    incremental run after a baseline. Bar: 1,000 resource GETs (the last change of each resource
    wins), and the mirror equals the Source.
(c) 1,000,000 changes of distinct resources coalesced, each in a fresh interpreter: as the
    engine does (winners past ``HELD`` spill into a scratch database and stream back) and with
    every winner held in memory (the engine before issue 14), printing time and peak RSS.
    Bar: the engine's peak RSS under 150 MB.

Run: ``make bench-incremental`` or ``uv run python benchmarks/incremental.py``.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from airflow_provider_resourcesync.client.navigate import ChangeItem
from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.client.watch import drive, new_changes
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.protocol.model import Entry, Metadata
from airflow_provider_resourcesync.protocol.position import ChangeListRef, ChangePosition
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.coalesce import coalesce
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

RESOURCES = 1_000
UPDATES_EACH = 10
DISTINCT = 1_000_000
RSS_BAR_MB = 150


def resource_gets(server: SourceServer, source: ResourceSyncSource) -> int:
    return sum(1 for record in server.requests
               if record.method == "GET" and record.path.startswith(f"{source.prefix}/res/"))


def main() -> int:
    names = [f"r{number:04d}.txt" for number in range(RESOURCES)]
    with SourceServer(max_lifetime=1800) as server, tempfile.TemporaryDirectory() as directory:
        source = ResourceSyncSource(server, resources={name: b"0\n" for name in names})
        source.publish()
        policy = ClientPolicy(allow_private=True)
        destination = LocalDestination(Path(directory))
        with ResourceSyncClient(policy, source_urls=[server.base_url]) as client:
            start = run_baseline(client, destination,
                                 capability_list_url=source.capability_list_url)

            # (a) poll, then poll again with nothing changed in between
            drive(client, new_changes(source.change_list_url, start.position))
            server.reset_log()
            seen = drive(client, new_changes(source.change_list_url, start.position))
            polled = [(record.path, record.status) for record in server.requests]
            poll_ok = seen.count == 0 and len(polled) == 1 and polled[0][1] == 304
            print(f"(a) a poll with no change: {len(polled)} request(s) "
                  f"{[status for _, status in polled]}, {resource_gets(server, source)} resource "
                  f"GETs (bar: one conditional request answered 304, no resource GET)")

            # (b) ten updates of each resource, interleaved, then one incremental run
            order = names * UPDATES_EACH
            random.Random(7).shuffle(order)
            for number, name in enumerate(order):
                source.update(name, f"{name} version {number}\n".encode())
            source.publish()
            server.reset_log()
            after = run_incremental(client, destination,
                                    capability_list_url=source.capability_list_url,
                                    checkpoint=start)
            gets = resource_gets(server, source)
            mapper = KeyMapper()
            equal = all((Path(directory) / mapper.key(uri)).read_bytes() == body
                        for uri, body in source.state().items())
            documents = len(server.requests) - gets
            sync_ok = gets == RESOURCES and after.stats["changes"] == len(order) and equal
            print(f"(b) {len(order):,} changes over {RESOURCES:,} resources: {gets:,} resource "
                  f"GETs and {documents} document requests; the mirror equals the Source: "
                  f"{equal} (bar: {RESOURCES:,} resource GETs)")
    spilled, in_memory = coalesced(None), coalesced(DISTINCT + 1)
    coalesce_ok = spilled["peak_mb"] < RSS_BAR_MB
    print(f"(c) {DISTINCT:,} distinct changes coalesced: {spilled['seconds']:.1f} s, peak RSS "
          f"{spilled['peak_mb']:.0f} MB | all held in memory: {in_memory['seconds']:.1f} s, peak "
          f"RSS {in_memory['peak_mb']:.0f} MB (bar: under {RSS_BAR_MB} MB)")
    ok = poll_ok and sync_ok and coalesce_ok
    print("bars met" if ok else "bars NOT met")
    return 0 if ok else 1


def coalesced(held: int | None) -> dict[str, float]:
    """Coalesce :data:`DISTINCT` changes in a fresh interpreter; its seconds and peak RSS."""
    output = subprocess.run([sys.executable, __file__, "--coalesce", str(held)], check=True,
                            capture_output=True, text=True).stdout
    return json.loads(output)


def coalesce_child(held: int | None) -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    listed = ChangeListRef("http://example.org/changelist.xml", at)
    digest = Hashes.parse("md5:1e0d5cb8ef6ba40c99b14c0237be735e")

    def changes() -> Iterator[ChangeItem]:
        for number in range(DISTINCT):
            md = Metadata(change="updated", datetime=at + timedelta(seconds=number),
                          hash=digest, length=number)
            yield ChangeItem(listed, number, Entry(f"http://example.org/r/{number}", md=md))

    started = time.perf_counter()
    with coalesce(changes(), ChangePosition.at(at), held=held) as result:
        count = sum(1 for _ in result.winners)
    assert count == DISTINCT, count
    print(json.dumps({"seconds": time.perf_counter() - started,
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--coalesce"]:
        coalesce_child(None if sys.argv[2] == "None" else int(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
