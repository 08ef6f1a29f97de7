"""A baseline on worker processes (issue 17): the mirror, its state and its documents are those
one process makes; failures in any worker come back as one error, with everything committed
recorded; a worker killed mid-run fails the run saying which, and a re-run converges; a killed
parent takes its workers with it; "auto" starts workers only where they pay and are safe."""

from __future__ import annotations

import logging
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.client.policy import Credentials
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.cores import CpuSample
from airflow_provider_resourcesync.errors import ConfigurationError, SyncIncompleteError
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX, KeyMapper, normalized
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.sync.processes import jobs, shares, worker_count
from airflow_provider_resourcesync.sync.shard import Shard, part_of
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.writer import MirrorState

from .conftest import INITIAL, client_for, held, path_of, resource_gets
from .test_baseline import audit_is_clean

ROOT = Path(__file__).parents[2]
PUBLIC = "https://mirror.example.org/data/"
#: The longest wait for anything a test waits for (a worker to start, to die, to commit).
PATIENCE = 60.0


def baseline(client: ResourceSyncClient, destination: Destination, source: ResourceSyncSource,
             **options: Any) -> Checkpoint:
    return run_baseline(client, destination, capability_list_url=source.capability_list_url,
                        public_url=PUBLIC, **options)


def until(condition: Callable[[], Any], what: str) -> Any:
    """``condition()`` once true, polled; fails the test after :data:`PATIENCE` seconds."""
    deadline = time.monotonic() + PATIENCE
    while not (value := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"waited {PATIENCE:.0f} s for {what}")
        time.sleep(0.02)
    return value


def workers_of(pid: int) -> list[int]:
    """The live worker processes whose parent is ``pid``."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return [child for child in children if _alive(child) and b"sync.worker" in _cmdline(child)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    """Running: not gone, and not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def objects(destination: LocalDestination) -> set[str]:
    return {key for key in destination.keys("") if not key.startswith(RESERVED_PREFIX)}


def documented(destination: LocalDestination, key: str) -> list[tuple[Any, ...]]:
    """The entries of one of the mirror's own documents, without the times its clock gave."""
    document = read_document(destination.read_bytes(key) or b"")
    return sorted((entry.loc, entry.md and (entry.md.change, str(entry.md.hash), entry.md.length,
                                            entry.md.type),
                   tuple((link.rel, link.href) for link in entry.links)) for entry in document)


def change_lists(destination: LocalDestination) -> list[tuple[Any, ...]]:
    return sorted(entry for key in destination.keys(RESERVED_PREFIX + "changes/")
                  for entry in documented(destination, key))


def records(destination: Destination) -> list[Any]:
    with MirrorState.load(destination) as state:
        return list(state.records())


# -- the same mirror ---------------------------------------------------------------------------


@pytest.mark.parametrize("parts", [1000, 7], ids=["one-list", "index"])
def test_workers_make_the_mirror_state_and_documents_one_process_makes(
        client: ResourceSyncClient, server: SourceServer, source: ResourceSyncSource,
        tmp_path: Path, parts: int, caplog: pytest.LogCaptureFixture) -> None:
    """Spec 10.1 and 10.2: from a Resource List and from an index of parts, which the parent
    reads while the workers fetch."""
    caplog.set_level(logging.INFO)
    source.publish(max_entries=parts)
    one, two = LocalDestination(tmp_path / "one"), LocalDestination(tmp_path / "two")
    alone = baseline(client, one, source, processes=1)
    assert "worker process" not in caplog.text
    for part in (0, 1):  # a retry in each worker, which it logs
        server.fail(path_of(next(uri for uri in sorted(source.state())
                                 if part_of(normalized(uri), 2) == part)), 503)
    shared = baseline(client, two, source, processes=2)
    assert "Fetching on 2 worker processes" in caplog.text
    # each worker's records reach this process's log, naming its part of the list
    assert "worker process for shard 1-of-2: Retrying http" in caplog.text
    assert "worker process for shard 2-of-2: Retrying http" in caplog.text

    def same(alone: Checkpoint, shared: Checkpoint) -> None:
        assert held(one) == held(two) == source.state()
        assert records(one) == records(two)
        assert ({**alone.to_json(), "destination": None} ==
                {**shared.to_json(), "destination": None})
        for document in ("resourcelist.xml", "capabilitylist.xml"):
            assert documented(one, RESERVED_PREFIX + document) == documented(
                two, RESERVED_PREFIX + document), document
        assert change_lists(one) == change_lists(two)

    same(alone, shared)
    assert shared.stats["fetched"] == 20 and workers_of(os.getpid()) == []

    # a second baseline over the mirror: changes, a removal, the mirror's own Change List
    source.update("r01.txt", b"one, changed\n")
    source.create("new.txt", b"new\n")
    source.delete("r02.txt")
    source.publish(max_entries=parts)
    alone = baseline(client, one, source, processes=1, remove_missing=True)
    shared = baseline(client, two, source, processes=2, remove_missing=True)
    same(alone, shared)
    assert (shared.stats["fetched"], shared.stats["unchanged"], shared.stats["removed"]) == (
        2, 18, 1)
    assert {(loc.rpartition("/")[2], md[0]) for loc, md, _ in change_lists(two)} == {
        ("r01.txt", "updated"), ("new.txt", "created"), ("r02.txt", "deleted")}

    # an incremental run goes on from the workers' mirror
    source.update("r03.txt", b"three, changed\n")
    source.publish(max_entries=parts)
    for destination, start in ((one, alone), (two, shared)):
        run_incremental(client, destination, capability_list_url=source.capability_list_url,
                        checkpoint=start)
    assert held(two) == source.state()
    assert records(one) == records(two) and change_lists(one) == change_lists(two)
    assert audit_is_clean(client, two, source)


# -- failures ----------------------------------------------------------------------------------


def test_failures_in_several_workers_make_one_error_and_the_rest_is_recorded(
        fragile: ResourceSyncClient, server: SourceServer, source: ResourceSyncSource,
        local: LocalDestination) -> None:
    """A transient failure (500) in one worker's part, a lasting one (a resource on a host the
    connection does not allow) in the other's: one SyncIncompleteError with both counted."""
    foreign = "http://elsewhere.example/dataset1/foreign.txt"
    transient = next(uri for uri in sorted(source.state())
                     if part_of(normalized(uri), 2) != part_of(foreign, 2))
    server.fail(path_of(transient), 500)
    listed = path_of(source.resource_list_url)
    server.put(listed, server.get_body(listed).replace(
        b"</urlset>", f"<url><loc>{foreign}</loc></url></urlset>".encode()), "application/xml")

    with pytest.raises(SyncIncompleteError) as raised:
        baseline(fragile, local, source, processes=2)
    error = raised.value
    assert (error.failed, error.lasting, error.rerun_helps) == (2, 1, False)
    assert "allowed hosts" in str(error) and "19 fetched" in str(error)
    assert {what for what, _ in error.failures} == {transient, foreign}
    with MirrorState.load(local) as state:  # everything committed is recorded, no checkpoint
        assert len(state) == 19 and state.checkpoint() is None

    server.put(listed, server.get_body(listed).replace(
        f"<url><loc>{foreign}</loc></url>".encode(), b""), "application/xml")
    server.reset_log()
    checkpoint = baseline(fragile, local, source, processes=2)
    assert resource_gets(server) == [path_of(transient)]
    assert checkpoint.stats["fetched"] == 1 and held(local) == source.state()


@pytest.fixture
def slow(server: SourceServer, source: ResourceSyncSource) -> Iterator[SourceServer]:
    """The Source answering each request after a pause, so that a run is caught mid-way."""
    server.delay = 0.3  # 20 resources, two at a time: 3 s at least
    yield server
    server.delay = 0.0


def test_a_worker_killed_mid_run_fails_the_run_naming_it_and_a_rerun_converges(
        client: ResourceSyncClient, slow: SourceServer, source: ResourceSyncSource,
        local: LocalDestination) -> None:
    with ThreadPoolExecutor(1) as pool:
        running: Future[Checkpoint] = pool.submit(baseline, client, local, source,
                                                  processes=2, concurrency=2)
        workers = until(lambda: len(workers_of(os.getpid())) == 2 and workers_of(os.getpid()),
                        "two workers")
        until(lambda: len(objects(local)) >= 2, "two resources committed")
        os.kill(workers[0], signal.SIGKILL)
        with pytest.raises(SyncIncompleteError) as raised:
            running.result(timeout=PATIENCE)
    error = raised.value
    assert error.rerun_helps and "re-run the task" in str(error)
    [(what, reason)] = error.failures
    assert what.startswith("worker process for shard ") and f"(pid {workers[0]})" in what
    assert "killed by signal 9" in reason
    assert workers_of(os.getpid()) == []
    committed = held(local)
    with MirrorState.load(local) as state:  # what the workers reported is recorded
        assert state.checkpoint() is None
        assert {record.uri for record in state.records()} <= set(committed)
    assert all(source.state()[uri] == body for uri, body in committed.items())

    slow.delay = 0.0
    slow.reset_log()
    checkpoint = baseline(client, local, source, processes=2)
    # nothing committed is fetched again, even what the killed worker never reported
    assert sorted(resource_gets(slow)) == sorted(
        path_of(uri) for uri in set(source.state()) - set(committed))
    assert checkpoint.stats["unchanged"] == len(committed)
    assert held(local) == source.state() and audit_is_clean(client, local, source)


#: A baseline on two workers in a process of its own. argv: capability list, mirror directory.
_PARENT = """
import sys
from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline

capability_list, root = sys.argv[1:3]
policy = ClientPolicy(allow_private=True, backoff=0.01, max_backoff=1)
with ResourceSyncClient(policy, source_urls=[capability_list]) as client:
    run_baseline(client, LocalDestination(root), capability_list_url=capability_list,
                 processes=2, concurrency=2)
"""


def test_workers_die_with_a_killed_parent_and_a_rerun_converges(
        client: ResourceSyncClient, slow: SourceServer, source: ResourceSyncSource,
        local: LocalDestination) -> None:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, source.capability_list_url,
                               str(local.root)], cwd=ROOT)
    try:
        workers = until(lambda: len(workers_of(parent.pid)) == 2 and workers_of(parent.pid),
                        "two workers")
        until(lambda: len(objects(local)) >= 2, "two resources committed")
        parent.kill()
        assert parent.wait(timeout=PATIENCE) == -signal.SIGKILL
    finally:
        parent.kill()
        parent.wait()
    until(lambda: not any(map(_alive, workers)), "the workers to die with their parent")
    assert len(objects(local)) < len(source.state())  # they died mid-run, writing no more

    slow.delay = 0.0
    checkpoint = baseline(client, local, source, processes=2)
    assert checkpoint.stats["failed"] == 0 and held(local) == source.state()
    assert audit_is_clean(client, local, source)


def test_a_worker_whose_parent_is_not_the_one_that_started_it_ends_at_once() -> None:
    """A container reuses process IDs: a worker told of a parent it does not have (its own died
    before it could ask the kernel to be killed with it) ends without reading a thing."""
    read, write = os.pipe()
    up_read, up_write = os.pipe()
    try:
        ended = subprocess.run(
            [sys.executable, "-P", "-m", "airflow_provider_resourcesync.sync.worker", str(read),
             str(up_write), str(os.getpid() + 1)], pass_fds=(read, up_write), timeout=PATIENCE,
            cwd=ROOT)
    finally:
        for descriptor in (read, write, up_read, up_write):
            os.close(descriptor)
    assert ended.returncode == 3


# -- when workers are used ---------------------------------------------------------------------


def test_auto_keeps_one_process_for_a_short_list_and_for_s3(
        client: ResourceSyncClient, source: ResourceSyncSource, local: LocalDestination,
        destination: Destination, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.INFO)
    baseline(client, local, source)  # 20 entries: starting workers would not pay
    assert "worker process" not in caplog.text and held(local) == source.state()

    monkeypatch.setattr("airflow_provider_resourcesync.sync.baseline.AUTO_LISTING", 10)
    monkeypatch.setattr(CpuSample, "spare_cores", lambda _: 64.0)  # an idle machine
    caplog.clear()
    baseline(client, destination, source, remove_missing=True)
    cores = min(len(os.sched_getaffinity(0)), 4)
    uses_workers = isinstance(destination, LocalDestination) and cores > 1
    assert (f"Fetching on {cores} worker processes" in caplog.text) == uses_workers
    assert held(destination) == source.state()
    if not isinstance(destination, LocalDestination):  # S3: each worker cannot open it
        caplog.clear()
        baseline(client, destination, source, processes=2)
        assert "One process, not 2: the destination is not a local directory" in caplog.text


def test_auto_holds_nothing_back_where_workers_cannot_run(
        client: ResourceSyncClient, server: SourceServer, source: ResourceSyncSource,
        local: LocalDestination, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard (or an S3 destination) never gets workers, so "auto" does not read ahead to
    count the list first: the first resource is fetched before the index's last part is read
    (spec 10.2). One fetch at a time, on the caller's thread: the order of the requests is the
    order of the run's steps, not of threads racing."""
    monkeypatch.setattr("airflow_provider_resourcesync.sync.baseline.AUTO_LISTING", len(INITIAL))
    source.publish(max_entries=5)
    server.reset_log()
    baseline(client, local, source, shard=Shard(0, 2), concurrency=1)
    paths = [record.path for record in server.requests]
    first_resource = next(n for n, path in enumerate(paths) if "/res/" in path)
    last_part = max(n for n, path in enumerate(paths) if "resourcelist" in path)
    assert first_resource < last_part


def test_limits_on_requests_in_flight_are_split_between_the_workers(
        server: SourceServer, local: LocalDestination, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("test")
    caplog.set_level(logging.INFO)
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setattr(CpuSample, "spare_cores", lambda _: 64.0)  # an idle machine
    assert shares(16, 2) == [8, 8] and shares(15, 2) == [8, 7] and shares(5, 3) == [2, 2, 1]
    credentials = Credentials(server.base_url, username="user", password="secret")
    with client_for(server, concurrency_per_host=5, credentials=credentials) as client:
        def count(processes: int | None, **options: Any) -> int:
            return worker_count(processes, **({"destination": local, "shard": None,
                                                "concurrency": 16, "policy": client.policy,
                                                "parent_fetches": False, "log": log,
                                                "since": CpuSample.take()} | options))

        assert count(8) == 5  # no more workers than requests may be in flight on the host
        assert count(8, parent_fetches=True) == 4  # one request left for the parent
        assert count(8, concurrency=3) == 3 and count(1) == 1
        assert count(None) == min(cores, 4)
        # auto: a worker per core nobody else needs, the one this run is on included
        monkeypatch.setattr(CpuSample, "spare_cores", lambda _: 0.4)
        assert count(None) == 1 and count(3) == 3
        assert (f"One process: the machine is busy (0.4 of {cores} cores spare)"
                in caplog.text) == (cores > 1)
        assert count(4, shard=Shard(0, 2)) == 1
        mapper = KeyMapper({server.base_url + "/dataset1/": "data/"})
        given = jobs(2, client=client, destination=local, mapper=mapper, concurrency=9,
                     parent_fetches=True, log=log)
    assert [job.concurrency for job in given] == [4, 4]
    assert [job.policy.concurrency_per_host for job in given] == [2, 2]
    # what a worker is sent survives the trip, credentials included
    trip = pickle.loads(pickle.dumps(given[0]))
    assert trip.policy == given[0].policy and trip.policy.credentials == credentials
    assert trip.mapper.key(server.base_url + "/dataset1/x") == "data/x"
    assert given[0].origins == (f"{server.base_url}/",)


@pytest.mark.parametrize("processes", [0, -1, 2.5, "2", True])
def test_processes_must_be_a_whole_number_of_at_least_one(
        client: ResourceSyncClient, source: ResourceSyncSource, local: LocalDestination,
        processes: Any) -> None:
    with pytest.raises(ConfigurationError, match="processes"):
        baseline(client, local, source, processes=processes)
    assert objects(local) == set()



def test_a_run_that_cannot_start_its_workers_goes_on_in_one_process(
        client: ResourceSyncClient, source: ResourceSyncSource, local: LocalDestination,
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", str(local.root / "no-such-python"))
    checkpoint = baseline(client, local, source, processes=2)
    assert "One process: cannot start worker processes" in caplog.text
    assert checkpoint.stats["fetched"] == 20 and held(local) == source.state()
