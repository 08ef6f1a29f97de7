"""Baseline benchmark: our engine against bare fetch-and-write loops, in one run.

The Source runs in a process of its own, as it would across a network. Contestants alternate over
several rounds and each keeps its best rate: a shared VM's speed drifts by several times within a
minute, and back-to-back single runs would compare them at different speeds. Every run's files
stay until the benchmark ends (about 300 MB; see :func:`timed`).

(a) 2,000 resources of 4 KB served on 127.0.0.1 by a server that answers each request after 20 ms
    (a Source across a network), mirrored to a local directory by our baseline engine, by a bare
    concurrent loop at the same concurrency (threads over one ``httpx.Client`` on the engine's
    wire), and by a bare sequential loop. Bars: engine >= 0.5 x the bare concurrent loop, and
    >= 10 x the sequential one.
(b) 10,000 such resources with no delay: our engine against the bare sequential loop.
    Bar: engine >= 0.5 x the bare sequential loop (our overhead per resource at most double).

Run: ``make bench-baseline`` or ``uv run python benchmarks/baseline.py [--concurrency N]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path

import httpx

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.client.transport import SocketTransport
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

BODY = 4096


def resources(count: int) -> dict[str, bytes]:
    return {f"r{n:06d}.bin": (f"{n:06d}".encode() * (BODY // 6 + 1))[:BODY]
            for n in range(count)}


def bare_loop(urls: list[str], directory: Path, workers: int) -> None:
    """The floor: GET each URL and write its body to a file, nothing else, on the engine's wire
    (:class:`SocketTransport`), so that the ratio measures the engine, not the wire."""
    with httpx.Client(transport=SocketTransport(max_idle_per_origin=workers)) as client:
        def fetch(numbered: tuple[int, str]) -> None:
            number, url = numbered
            (directory / f"{number}").write_bytes(client.get(url).content)

        if workers == 1:
            for item in enumerate(urls):
                fetch(item)
        else:
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(fetch, enumerate(urls)))


def engine(capability_list: str, directory: Path, workers: int) -> None:
    policy = ClientPolicy(allow_private=True, concurrency_per_host=workers)
    with ResourceSyncClient(policy, source_urls=[capability_list]) as client:
        run_baseline(client, LocalDestination(directory), capability_list_url=capability_list,
                     concurrency=workers)


def timed(run: Callable[[Path], None], scratch: Path) -> float:
    """Seconds ``run`` takes to fill a new directory under ``scratch``. The directory stays
    until the benchmark ends: on ext4 without a journal (as here), every file created in the
    half minute after a deletion checks the inodes recently deleted in its group, so removing
    one contestant's thousands of files would tax the next contestant's every file."""
    directory = Path(tempfile.mkdtemp(dir=scratch))
    started = time.perf_counter()
    run(directory)
    return time.perf_counter() - started


def serve(count: int, delay: float, pipe: Connection) -> None:
    """The Source, in a process of its own (as across a network): no share of our CPU or GIL."""
    with SourceServer(max_lifetime=1800) as server:
        source = ResourceSyncSource(server, resources=resources(count))
        source.publish()
        server.delay = delay
        pipe.send((source.capability_list_url, sorted(source.state())))
        pipe.recv()  # until told to stop


@contextmanager
def source_process(count: int, delay: float) -> Iterator[tuple[str, list[str]]]:
    ours, theirs = multiprocessing.Pipe()
    process = multiprocessing.get_context("fork").Process(
        target=serve, args=(count, delay, theirs), daemon=True)
    process.start()
    try:
        yield ours.recv()
    finally:
        ours.send("stop")
        process.join(timeout=30)


def scenario(count: int, delay: float, workers: int, rounds: int,
             scratch: Path) -> dict[str, float]:
    """Resources per second of each contestant against one Source: the contestants alternate
    for ``rounds`` rounds and each keeps its best, so drift in the machine's speed (large on a
    shared VM) hits them alike. The latency-bound sequential loop under a delay runs once."""
    with source_process(count, delay) as (capability_list, urls):
        contestants = {
            "engine": lambda d: engine(capability_list, d, workers),
            "sequential": lambda d: bare_loop(urls, d, 1),
        }
        if delay:
            contestants["concurrent"] = lambda d: bare_loop(urls, d, workers)
        best: dict[str, float] = {}
        for round_number in range(rounds):
            for name, run in contestants.items():
                if name == "sequential" and delay and round_number:
                    continue
                best[name] = max(best.get(name, 0.0), count / timed(run, scratch))
        return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (best kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rs-bench-") as scratch:
        return report(args.concurrency, args.rounds, Path(scratch))


def report(workers: int, rounds: int, scratch: Path) -> int:
    """Run both scenarios, print their ratios; 0 if every bar is met."""
    ok = True
    delayed = scenario(2_000, 0.020, workers, rounds, scratch)
    vs_concurrent = delayed["engine"] / delayed["concurrent"]
    vs_sequential = delayed["engine"] / delayed["sequential"]
    print(f"(a) 2,000 x 4 KB, 20 ms per answer, {workers} workers: engine "
          f"{delayed['engine']:.0f}/s, bare concurrent {delayed['concurrent']:.0f}/s, bare "
          f"sequential {delayed['sequential']:.0f}/s | engine/concurrent {vs_concurrent:.2f} "
          f"(bar >= 0.5), engine/sequential {vs_sequential:.1f} (bar >= 10; the bare "
          f"concurrent loop made {delayed['concurrent'] / delayed['sequential']:.1f} this run)")
    ok &= vs_concurrent >= 0.5 and vs_sequential >= 10
    plain = scenario(10_000, 0.0, workers, rounds, scratch)
    ratio = plain["engine"] / plain["sequential"]
    print(f"(b) 10,000 x 4 KB, no delay: engine {plain['engine']:.0f}/s, bare sequential "
          f"{plain['sequential']:.0f}/s | engine/sequential {ratio:.2f} (bar >= 0.5)")
    ok &= ratio >= 0.5
    print("bars met" if ok else "bars NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
