"""Memory benchmark: what the mirror's state and a run's coalescing hold, against holding
everything in a dict, at two sizes, in one run.

Two workloads, each contestant in a fresh interpreter (so that each peak RSS is its own),
alternating round by round; the peak RSS growth over the interpreter's RSS once the workload's
inputs are ready is compared:

- **state**: ``MirrorState.load`` of a saved mirror of N records, counted, iterated and looked
  up, against a dict of the same records as Python objects (what a state kept in memory holds);
- **coalesce**: coalescing N distinct changes (each one a winner), streamed out, against the
  same coalescing with every winner held in memory (``held`` past N: no spill).

Ours pays a bounded price (SQLite's page cache, ``storage/scratch.py``: up to 16 MB) and then
grows little; the dict grows with N. Bars, at two sizes (``--records``, default 120,000, and a
quarter of it): ours at most 0.5x the dict at the larger size, and what ours adds from the
smaller size to the larger at most a quarter of what the dict adds (the marginal cost of a
record). These were assertions of the unit suite (``tests/storage/test_state.py``,
``tests/sync/test_coalesce.py``), which now keep one small size each.

Run: ``make bench-memory`` or ``uv run python benchmarks/memory.py [--records N] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

RATIO_BAR = 0.5
MARGINAL_BAR = 0.25
T0 = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
DIGEST = "1e0d5cb8ef6ba40c99b14c0237be735e"


def _rss() -> int:
    """This process's resident set now, in bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _records(count: int) -> Iterator[object]:
    from airflow_provider_resourcesync.protocol.hashes import Hashes
    from airflow_provider_resourcesync.writer import ObjectRecord

    for n in range(count):
        yield ObjectRecord(uri=f"https://example.org/r/{n:06d}", key=f"https/example.org/r/{n:06d}",
                           length=n, hashes=Hashes.of(md5=f"{n:032x}", sha_256=f"{n:064x}"),
                           lastmod=T0 - timedelta(microseconds=n), type="text/plain")


def saved_mirror(count: int, folder: Path) -> Path:
    """A mirror's state of ``count`` records saved under ``folder`` (once per run)."""
    from airflow_provider_resourcesync.storage.local import LocalDestination
    from airflow_provider_resourcesync.writer import MirrorState

    root = folder / f"mirror-{count}"
    if not root.exists():
        with MirrorState.load(LocalDestination(root), clock=lambda: T0) as state:
            for record in _records(count):
                state.put(record)  # type: ignore[arg-type]
            state.save(checkpoint={})
    return root


def state_ours(count: int, folder: Path) -> Callable[[], int]:
    from airflow_provider_resourcesync.storage.local import LocalDestination
    from airflow_provider_resourcesync.writer import MirrorState

    root = saved_mirror(count, folder)

    def work() -> int:
        with MirrorState.load(LocalDestination(root)) as state:
            assert state.get(f"https://example.org/r/{count // 2:06d}") is not None
            return sum(1 for _ in state.records()) if len(state) == count else -1
    return work


def state_dict(count: int, _folder: Path) -> Callable[[], int]:
    def work() -> int:
        held = {record.uri: record for record in _records(count)}  # type: ignore[attr-defined]
        assert held[f"https://example.org/r/{count // 2:06d}"] is not None
        return len(held)
    return work


def _coalesced(count: int, held: int | None) -> Callable[[], int]:
    from airflow_provider_resourcesync.client.navigate import ChangeItem
    from airflow_provider_resourcesync.protocol.hashes import Hashes
    from airflow_provider_resourcesync.protocol.model import Entry, Metadata
    from airflow_provider_resourcesync.protocol.position import ChangeListRef, ChangePosition
    from airflow_provider_resourcesync.sync.coalesce import coalesce

    listed = ChangeListRef("http://h/changelist.xml", T0)
    digest = Hashes.of(md5=DIGEST)

    def changes() -> Iterator[ChangeItem]:
        for n in range(count):
            yield ChangeItem(listed, n, Entry(f"http://h/r/{n}", md=Metadata(
                change="created", datetime=T0 + timedelta(seconds=n), hash=digest,
                length=n)))

    def work() -> int:
        coalesced = coalesce(changes(), ChangePosition(), held=held)
        return sum(1 for _ in coalesced.winners)
    return work


WORKLOADS: dict[str, dict[str, Callable[[int, Path], Callable[[], int]]]] = {
    "state": {"ours": state_ours, "dict": state_dict},
    "coalesce": {"ours": lambda count, _: _coalesced(count, None),
                 "dict": lambda count, _: _coalesced(count, count + 1)},
}


def child(workload: str, contestant: str, count: int, folder: Path) -> None:
    work = WORKLOADS[workload][contestant](count, folder)
    before = _rss()
    done = work()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"growth_mb": max(0, peak - before) / 2**20, "count": done}))


def measure(workload: str, contestant: str, count: int, folder: Path) -> float:
    """One contestant in a fresh interpreter: its peak RSS growth in MiB."""
    output = subprocess.run([sys.executable, __file__, "--child", workload, contestant,
                             str(count), str(folder)], check=True, capture_output=True,
                            text=True).stdout
    result = json.loads(output)
    assert result["count"] == count, result
    return float(result["growth_mb"])


def least_growth(workload: str, count: int, folder: Path, rounds: int) -> dict[str, float]:
    """Each contestant's least peak RSS growth over ``rounds`` alternating rounds, in MiB."""
    least: dict[str, float] = {}
    for _ in range(rounds):
        for name in WORKLOADS[workload]:  # alternate, so drift hits both alike
            growth = measure(workload, name, count, folder)
            least[name] = min(least.get(name, growth), growth)
    return least


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=120_000, help="the larger size")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (least kept)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        workload, contestant, count, folder = args.child
        child(workload, contestant, int(count), Path(folder))
        return 0
    ok = True
    sizes = (args.records // 4, args.records)
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as scratch:
        for workload in WORKLOADS:
            small, large = (least_growth(workload, count, Path(scratch), args.rounds)
                            for count in sizes)
            for count, least in zip(sizes, (small, large), strict=True):
                print(f"{workload:<9} {count:>9,} records: ours {least['ours']:6.1f} MiB, "
                      f"dict {least['dict']:6.1f} MiB, ratio {least['ours'] / least['dict']:.2f}")
            ratio = large["ours"] / large["dict"]
            marginal = (large["ours"] - small["ours"]) / (large["dict"] - small["dict"])
            met = ratio <= RATIO_BAR and marginal <= MARGINAL_BAR
            ok &= met
            print(f"{workload:<9} ratio {ratio:.2f} (bar {RATIO_BAR}), marginal ratio "
                  f"{marginal:.2f} (bar {MARGINAL_BAR}): {'met' if met else 'NOT met'}")
    print("bars met" if ok else "bars NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
