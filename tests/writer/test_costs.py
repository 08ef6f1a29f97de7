"""What the shard index costs (docs/design.md, "Lookups in O(changes)"): a run's lookups and
apply read and write about as much on an index ten times larger, counted in calls and bytes at
the destination (local disk, and S3 through moto's server), not timed; a rebuild of 200,000
records stays within a memory bound (SQLite's page cache and sorter, and a shard)."""

from __future__ import annotations

import resource
from pathlib import Path

from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.writer import ShardIndex

from ..killing import report, run_child
from .records import PREFIX, Counting, changes, records


def run_cost(destination: Destination, size: int) -> Counting:
    """What a run of ten changes asks of ``destination`` on an index of ``size`` records: open,
    look the changed URIs up, apply the changes."""
    prefix = f"{PREFIX}{size}/"
    ShardIndex.build(destination, prefix, records(size), "changes/0001.xml")
    counting = Counting(destination)
    index = ShardIndex.open(counting, prefix)
    found = index.lookup(uri for uri, _ in changes(size))
    assert sum(held is not None for held in found.values()) == 9  # all but the one created
    index.apply(changes(size), "changes/0002.xml")
    return counting


def test_a_run_costs_its_changes_not_the_size_of_the_index(destination: Destination) -> None:
    """With more shards than changes (from 20,000 records), ten changes touch about ten shards
    of each layer, whatever the size; on a smaller index they share fewer shards, and cost less."""
    small, large = run_cost(destination, 20_000), run_cost(destination, 200_000)
    for run in (small, large):  # the manifest, a delta and a snapshot shard per change, at most
        assert set(run.calls) == {"read_bytes", "write_bytes"}, run.calls
        assert run.calls["read_bytes"] <= 1 + 2 * 10
        assert run.calls["write_bytes"] <= 10 + 1
    assert large.calls.total() <= 2 * small.calls.total(), (small.calls, large.calls)
    assert large.read <= 2 * small.read, (small.read, large.read)
    assert large.written <= 2 * small.written, (small.written, large.written)


def rebuild(root: Path) -> None:
    """In a child: rebuilds an index of 200,000 records in the directory ``root`` and reports
    how much its peak resident memory grew, in KiB."""
    destination = LocalDestination(root)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    index = ShardIndex.build(destination, PREFIX, records(200_000), "changes/0001.xml")
    assert index.snapshot_records == 200_000
    report(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before))


def test_a_rebuild_of_200000_records_stays_under_50_mb(tmp_path: Path) -> None:
    """Peak resident memory, SQLite's included (in a process of its own, so that nothing else
    has raised it before: a forked child's peak starts at its resident size, not at the fork
    server's peak). ObjectRecord in memory, the 200,000 records take about 120 MB; their JSON rows
    grouped by shard in a dict of lists, about 50 MB (measured here)."""
    run = run_child(rebuild, tmp_path / "mirror")
    assert run.exitcode == 0, run.traceback
    assert int(run.said) < 50 * 1024, f"peak resident memory grew {run.said} KiB"
