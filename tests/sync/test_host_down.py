"""A Source that stops answering mid-run (issue 29, item 1): the run stops soon after, with one
error naming the host and what was kept, and a log of tens of lines, not one per resource."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from airflow_provider_resourcesync.errors import SyncIncompleteError
from airflow_provider_resourcesync.shell.next_step import next_step
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.sync.tally import SHOWN, STOP_AFTER
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.writer import MirrorState

from .conftest import client_for, held

#: Resources the Source lists: many more than a stopped run may try.
COUNT = 300
CONCURRENCY = 4


def resources() -> dict[str, bytes]:
    return {f"r{number:03d}.txt": f"resource {number}\n".encode() for number in range(COUNT)}


def resource_requests(source: ResourceSyncSource) -> int:
    return sum(record.path.endswith(".txt") for record in source.server.requests)


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


def test_a_baseline_stops_soon_after_the_source_refuses_connections(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    server = SourceServer(max_lifetime=120, delay=0.05).start()  # a run of about 4 s
    source = ResourceSyncSource(server, resources=resources())
    source.publish()
    host = urlsplit(server.base_url).netloc

    def stop_after_twenty() -> None:
        deadline = time.monotonic() + 60
        while resource_requests(source) < 20 and time.monotonic() < deadline:
            time.sleep(0.001)
        server.stop()

    stopper = threading.Thread(target=stop_after_twenty, daemon=True)
    stopper.start()
    mirror = LocalDestination(tmp_path / "mirror")
    with caplog.at_level(logging.INFO), client_for(server) as client, \
            pytest.raises(SyncIncompleteError) as raised:
        run_baseline(client, mirror, capability_list_url=source.capability_list_url,
                     concurrency=CONCURRENCY, processes=1, remove_missing=True)
    stopper.join(timeout=60)
    error = raised.value
    assert error.stopped == host
    assert f"stopped early: {host} stopped answering" in str(error)
    assert host in next_step(error) and "re-run" in next_step(error)
    # it stopped after STOP_AFTER failures in a row, and those under way or queued
    assert STOP_AFTER <= error.failed <= STOP_AFTER + 2 * CONCURRENCY
    kept = held(mirror)
    assert len(kept) >= 20 and len(kept) + error.failed <= COUNT // 2  # far from the end
    assert f"Kept: {len(kept)} fetched" in str(error)
    with MirrorState.load(mirror) as state:  # what was fetched is recorded: not fetched again
        assert {record.uri for record in state.records()} == set(kept)
    logged = warnings(caplog)
    assert len(logged) <= SHOWN + 3, logged  # the first failures, "more...", the stop
    assert any(line.startswith("Stopping: ") for line in logged)
    assert len(caplog.records) < 60  # tens of lines: retries past the first ten at DEBUG


def test_an_incremental_stopped_by_a_source_answering_503_stands_before_what_it_did_not_take(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Every resource answers 503 for a while: the run stops after STOP_AFTER; its checkpoint
    stands before the changes it did not try, so the next run, once the Source answers again,
    brings every change."""
    with SourceServer(max_lifetime=120) as server, client_for(server) as client:
        source = ResourceSyncSource(server, resources=resources())
        source.publish()
        mirror = LocalDestination(tmp_path / "mirror")
        start = run_baseline(client, mirror, capability_list_url=source.capability_list_url,
                             concurrency=CONCURRENCY, processes=1)
        for name in resources():
            source.update(name, b"changed\n")
        source.publish()
        for name in resources():
            server.fail(urlsplit(source.uri(name)).path, 503, times=1000)
        with caplog.at_level(logging.INFO), pytest.raises(SyncIncompleteError) as raised:
            run_incremental(client, mirror, capability_list_url=source.capability_list_url,
                            checkpoint=start, concurrency=CONCURRENCY)
        assert raised.value.stopped == urlsplit(server.base_url).netloc
        assert raised.value.failed <= STOP_AFTER + 2 * CONCURRENCY
        assert len(warnings(caplog)) <= SHOWN + 3
        assert len(caplog.records) < 60  # tens of lines: retries past the first ten at DEBUG
        with MirrorState.load(mirror) as state:
            saved = state.checkpoint()
        assert saved is not None and saved["position"] == start.to_json()["position"]
        server.clear_faults()
        client.budget.restart()
        run_incremental(client, mirror, capability_list_url=source.capability_list_url,
                        checkpoint=Checkpoint.from_json(saved), concurrency=CONCURRENCY)
        assert held(mirror) == source.state()
