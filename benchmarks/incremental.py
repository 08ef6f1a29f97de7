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
(d) Scale, on local disk: mirrors of 10,000 and 1,000,000 resources, built directly as a
    baseline would leave them (``scale_mirror.py``; the set-up is not timed, its time printed).
    Runs of ten changes each (seven updates, a delete, two creates), each in a fresh
    interpreter, the sizes taking turns, three runs a size; medians of the time of
    ``run_incremental``, the run's peak RSS, and the bytes it read and wrote under
    ``.resourcesync/``. Bars: the time at 1M within 1.5x of the time at 10k; bytes read and
    written at 1M within 1.3x of those at 10k (a lookup index shard holds about 1,000 records
    at either size); peak RSS under 150 MB.
(e) Scale, on S3 (moto's server, over HTTP): the S3 requests of a run of ten changes, then of
    one of a hundred, on mirrors of 10,000 and 100,000 resources, by operation. Not 1M: moto
    answers some hundred requests a second and holds every object in memory, and at 100,000
    the lookup index already has ten times the shards it has at 10,000 (at 1M, a hundred
    times, each as large), so a request count that grew with the mirror would show tenfold.
    A change costs at most a HEAD and a PUT or DELETE of its object, a read of its snapshot
    shard, and a read and a write of its delta shard; at 10,000 a hundred changes share the
    index's ten delta shards, so they cost fewer there. Bars: the requests at 100k within 1.5x
    of those at 10k, for ten changes and for a hundred; more for a hundred changes than for ten.

``--scale`` runs (d) and (e) only; ``--quick`` runs them on smaller mirrors (2,000 and 20,000;
1,000 and 10,000): a try of the benchmark itself, not a measure.

Run: ``make bench-incremental`` or ``uv run python benchmarks/incremental.py``.
"""

from __future__ import annotations

import json
import logging
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
from moto.server import ThreadedMotoServer
from scale_mirror import (
    MeteredDestination,
    Plan,
    baseline_checkpoint,
    build_mirror,
    file_store,
    moto_store,
    source_of,
)

from airflow_provider_resourcesync.client.navigate import ChangeItem
from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.client.watch import drive, new_changes
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.protocol.model import Entry, Metadata
from airflow_provider_resourcesync.protocol.position import ChangeListRef, ChangePosition
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.sync.coalesce import coalesce
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

RESOURCES = 1_000
UPDATES_EACH = 10
DISTINCT = 1_000_000
RSS_BAR_MB = 150
#: (d) and (e): the sizes of the mirrors, on local disk and on moto; with ``--quick``.
SCALE = (10_000, 1_000_000)
SCALE_S3 = (10_000, 100_000)
QUICK = (2_000, 20_000)
QUICK_S3 = (1_000, 10_000)
SCALE_RUNS = 3
TIME_BAR = 1.5  # (d): the time at the larger mirror over the time at the smaller
BYTES_BAR = 1.3  # (d): the bytes read, and written, at the larger over the smaller
REQUESTS_BAR = 1.5  # (e): the S3 requests at the larger over the smaller
S3_CHANGES = (10, 100)  # (e): the changes of its first run, then of its second
SERVED = 7200  # the longest a Source of (d) or (e) is served, in seconds


def resource_gets(server: SourceServer, source: ResourceSyncSource) -> int:
    return sum(1 for record in server.requests
               if record.method == "GET" and record.path.startswith(f"{source.prefix}/res/"))


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    quick = "--quick" in sys.argv
    ok = "--scale" in sys.argv or small_runs()
    ok = scale_s3(QUICK_S3 if quick else SCALE_S3) and ok
    ok = scale_local(QUICK if quick else SCALE) and ok  # last: removing 1M files takes long
    print("bars met" if ok else "bars NOT met")
    return 0 if ok else 1


def small_runs() -> bool:
    """(a), (b) and (c): whether their bars are met."""
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
    return poll_ok and sync_ok and coalesce_ok


def coalesced(held: int | None) -> dict[str, float]:
    """Coalesce :data:`DISTINCT` changes in a fresh interpreter; its seconds and peak RSS."""
    output = subprocess.run([sys.executable, __file__, "--coalesce", str(held)], check=True,
                            capture_output=True, text=True).stdout
    return json.loads(output)


def peak_mb() -> float:
    """This process's peak RSS since it started its program, in MB: ``VmHWM``. Not
    ``ru_maxrss``, which Linux carries over an exec, so a child started by a parent of 150 MB
    reports at least 150 MB, whatever it used itself."""
    status = Path("/proc/self/status").read_text()
    return int(status.partition("VmHWM:")[2].split()[0]) / 1024


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
                      "peak_mb": peak_mb()}))


@dataclass
class Mirror:
    """A mirror of (d) or (e), the Source it mirrors, and the checkpoint it stands at."""

    source: ResourceSyncSource
    destination: Destination
    checkpoint: dict[str, Any]

    def apply(self, plan: Plan, after: dict[str, Any]) -> bool:
        """Take ``after``, the checkpoint of a run of ``plan``; whether the run applied it."""
        self.checkpoint = after
        return (after["stats"]["changes"] == plan.changes
                and plan.applied(self.source, self.destination))


def mirror(stack: ExitStack, scenario: str, size: int, plans: list[Plan],
           destination: Destination, store: Any) -> Mirror:
    """A Source for ``plans`` (served until ``stack`` closes) and a mirror of ``size`` of its
    resources at ``destination``, the objects the runs never touch written by ``store``."""
    server = stack.enter_context(SourceServer(max_lifetime=SERVED))
    source = source_of(server, plans)
    started = time.perf_counter()
    checkpoint = baseline_checkpoint(server, source, destination)
    build_mirror(destination, source, size, checkpoint, store)
    print(f"{scenario} set-up: a mirror of {size:,} resources built in "
          f"{time.perf_counter() - started:.0f} s (not timed)", flush=True)
    return Mirror(source, destination, checkpoint)


def scale_local(sizes: tuple[int, int]) -> bool:
    """(d): whether its bars are met."""
    measured: dict[int, list[dict[str, float]]] = {size: [] for size in sizes}
    applied = True
    with ExitStack() as stack:
        mirrors = {}
        for size in sizes:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mirror-")))
            mirrors[size] = mirror(stack, "(d)", size, [Plan(size, run) for run in range(
                SCALE_RUNS)], LocalDestination(root), file_store(root))
        for run in range(SCALE_RUNS):
            for size in sizes:  # the sizes take turns: a slower spell of the machine hits both
                plan, held = Plan(size, run), mirrors[size]
                plan.apply(held.source)
                result = scaled_run(held)
                applied = held.apply(plan, result.pop("checkpoint")) and applied
                measured[size].append(result)
        return local_report(sizes, measured, applied)  # before the mirrors are removed


def local_report(sizes: tuple[int, int], measured: dict[int, list[dict[str, float]]],
                 applied: bool) -> bool:
    """Print (d)'s medians and ratios; whether its bars are met."""
    small, large = ({what: statistics.median(result[what] for result in measured[size])
                     for what in ("seconds", "peak_mb", "read", "written")} for size in sizes)
    for size, median in zip(sizes, (small, large), strict=True):
        print(f"(d) ten changes to a mirror of {size:,} on local disk (median of {SCALE_RUNS}): "
              f"{median['seconds']:.2f} s, peak RSS {median['peak_mb']:.0f} MB, "
              f"{median['read']:,.0f} bytes read and {median['written']:,.0f} written under "
              f".resourcesync/; runs: " + ", ".join(f"{result['seconds']:.2f} s"
                                                    for result in measured[size]))
    ratios = {what: large[what] / small[what] for what in ("seconds", "read", "written")}
    print(f"(d) {sizes[1]:,} over {sizes[0]:,}: time {ratios['seconds']:.2f}x (bar: "
          f"{TIME_BAR}x), bytes read {ratios['read']:.2f}x and written "
          f"{ratios['written']:.2f}x (bar: {BYTES_BAR}x), peak RSS under {RSS_BAR_MB} MB: "
          f"{max(small['peak_mb'], large['peak_mb']) < RSS_BAR_MB}; every run applied its "
          f"changes: {applied}")
    return (applied and ratios["seconds"] <= TIME_BAR and ratios["read"] <= BYTES_BAR
            and ratios["written"] <= BYTES_BAR
            and max(small["peak_mb"], large["peak_mb"]) < RSS_BAR_MB)


def scaled_run(held: Mirror) -> dict[str, Any]:
    """An incremental run of ``held`` in a fresh interpreter: what it measured."""
    assert isinstance(held.destination, LocalDestination)
    output = subprocess.run(
        [sys.executable, __file__, "--run", str(held.destination.root),
         held.source.capability_list_url], input=json.dumps(held.checkpoint), check=True,
        capture_output=True, text=True).stdout
    return json.loads(output)


def scaled_child(root: str, capability_list_url: str) -> None:
    """(d)'s run, in the child: the checkpoint in on stdin, what it measured out on stdout."""
    checkpoint = Checkpoint.from_json(json.load(sys.stdin))
    destination = MeteredDestination(root)
    with ResourceSyncClient(ClientPolicy(allow_private=True),
                            source_urls=[capability_list_url]) as client:
        started = time.perf_counter()
        after = run_incremental(client, destination, capability_list_url=capability_list_url,
                                checkpoint=checkpoint)
        seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "read": destination.read,
                      "written": destination.written, "checkpoint": after.to_json(),
                      "peak_mb": peak_mb()}))


def scale_s3(sizes: tuple[int, int]) -> bool:
    """(e): whether its bars are met."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    try:
        host, port = moto.get_host_and_port()
        s3 = boto3.client("s3", endpoint_url=f"http://{host}:{port}", aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
        sent: Counter[str] = Counter()  # requests by operation

        def count(event_name: str, **_: Any) -> None:
            sent[event_name.rpartition(".")[2]] += 1

        s3.meta.events.register("before-send.s3", count)
        requests, applied = {}, True
        with ExitStack() as stack:
            mirrors = {}
            for size in sizes:
                bucket = f"mirror-{size}"
                s3.create_bucket(Bucket=bucket)
                plans = [Plan(size, run, changes) for run, changes in enumerate(S3_CHANGES)]
                mirrors[size] = mirror(stack, "(e)", size, plans, S3Destination(
                    s3, bucket, "mirror"), moto_store(bucket, "mirror/"))
            for run, changes in enumerate(S3_CHANGES):
                for size in sizes:
                    plan, held = Plan(size, run, changes), mirrors[size]
                    plan.apply(held.source)
                    # a task builds its destination anew (its first write lists stale uploads)
                    held.destination = S3Destination(s3, held.destination.bucket, "mirror")
                    sent.clear()
                    with ResourceSyncClient(ClientPolicy(allow_private=True), source_urls=[
                            held.source.capability_list_url]) as client:
                        after = run_incremental(
                            client, held.destination, checkpoint=Checkpoint.from_json(
                                held.checkpoint),
                            capability_list_url=held.source.capability_list_url)
                    requests[size, changes] = Counter(sent)
                    applied = held.apply(plan, after.to_json()) and applied
    finally:
        moto.stop()
    columns = [(size, changes) for changes in S3_CHANGES for size in sizes]
    for size, changes in columns:
        counted = requests[size, changes]
        print(f"(e) {changes} changes to a mirror of {size:,} on S3: "
              f"{sum(counted.values())} requests ("
              + ", ".join(f"{operation} {n}" for operation, n in sorted(counted.items())) + ")")
    totals = {column: sum(requests[column].values()) for column in columns}
    ratios = {changes: totals[sizes[1], changes] / totals[sizes[0], changes]
              for changes in S3_CHANGES}
    grows = all(totals[size, S3_CHANGES[1]] > totals[size, S3_CHANGES[0]] for size in sizes)
    print(f"(e) {sizes[1]:,} over {sizes[0]:,}: "
          + ", ".join(f"{ratio:.2f}x at {changes} changes" for changes, ratio in ratios.items())
          + f" (bar: {REQUESTS_BAR}x); more requests for {S3_CHANGES[1]} changes than for "
          f"{S3_CHANGES[0]}: {grows}; every run applied its changes: {applied}")
    return applied and grows and max(ratios.values()) <= REQUESTS_BAR


if __name__ == "__main__":
    if sys.argv[1:2] == ["--coalesce"]:
        coalesce_child(None if sys.argv[2] == "None" else int(sys.argv[2]))
        sys.exit(0)
    if sys.argv[1:2] == ["--run"]:
        scaled_child(sys.argv[2], sys.argv[3])
        sys.exit(0)
    sys.exit(main())
