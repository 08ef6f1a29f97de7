"""Progress in the log: a line every 1,000 resources, and at most 30 s apart however slowly a
Source answers, with the rate and, where the run knows its total, the time left (issue 16); in
a baseline, an incremental run and an audit alike (issue 29, item 4)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync import audit as audit_module
from airflow_provider_resourcesync.sync import tally as tally_module
from airflow_provider_resourcesync.sync.audit import run_audit
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.sync.tally import Outcome, Tally
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from .conftest import client_for


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _progress(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Progress")]


def _how_far(said: list[str]) -> list[str]:
    return [line.split(" resources done")[0].removeprefix("Progress: ") for line in said]


def test_a_slow_run_says_how_far_it_is_at_least_every_30_seconds(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = _Clock()
    tally = Tally(logging.getLogger("test.tally"), total=100, clock=clock)
    with caplog.at_level(logging.INFO, logger="test.tally"):
        for _ in range(20):  # one resource every 2 s: a line every 15 resources
            clock.now += 2.0
            tally.count(Outcome("http://example.org/r", "fetched", length=10))
    assert _progress(caplog) == [
        "Progress: 15 of 100 resources done in 30 s (0.5/s, 5 B/s, about 170 s left): 0 listed, "
        "15 fetched, 0 unchanged, 0 removed, 0 failed, 150 B"]


def test_a_fast_run_logs_every_thousand_without_a_total(caplog: pytest.LogCaptureFixture) -> None:
    clock = _Clock()
    tally = Tally(logging.getLogger("test.tally"), clock=clock)
    with caplog.at_level(logging.INFO, logger="test.tally"):
        for _ in range(2500):
            clock.now += 0.001
            tally.count(Outcome("http://example.org/r", "unchanged"))
    lines = _progress(caplog)
    assert len(lines) == 2
    assert lines[0].startswith("Progress: 1000 resources done in 1 s (1000.0/s, 0 B/s): ")


def test_progress_shows_bytes_and_their_rate_in_binary_units(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = _Clock()
    tally = Tally(logging.getLogger("test.tally"), total=2000, clock=clock)
    with caplog.at_level(logging.INFO, logger="test.tally"):
        for _ in range(1000):  # 16,384 bytes every 10 ms
            clock.now += 0.01
            tally.count(Outcome("http://example.org/r", "fetched", length=16_384))
    assert _progress(caplog) == [
        "Progress: 1000 of 2000 resources done in 10 s (100.0/s, 1.6 MiB/s, about 10 s left): "
        "0 listed, 1000 fetched, 0 unchanged, 0 removed, 0 failed, 15.6 MiB"]


@pytest.mark.parametrize(("max_entries", "lines"), [
    (1000, ["10 of 30", "20 of 30", "30 of 30"]),  # a single list, counted
    (10, ["10 of about 30", "20 of about 30", "30 of 30"])],  # an index: parts guessed
    ids=["list", "index"])
def test_a_baseline_says_how_many_of_how_many_and_the_time_left(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
        max_entries: int, lines: list[str]) -> None:
    """Issue 29: a baseline's progress lines said "3000 listed", never of how many, nor the
    time left (spec 10.1, 10.2: a Resource List, or an index of parts read as they come)."""
    monkeypatch.setattr(tally_module, "PROGRESS_EVERY", 10)
    with SourceServer(max_lifetime=60) as server, client_for(server) as client:
        source = ResourceSyncSource(server, resources={f"r{n:02d}.txt": b"x" for n in range(30)})
        source.publish(max_entries=max_entries)
        with caplog.at_level(logging.INFO):
            run_baseline(client, LocalDestination(tmp_path / "mirror"),
                         capability_list_url=source.capability_list_url, concurrency=1,
                         processes=1)
    said = _progress(caplog)
    assert _how_far(said) == lines
    assert all(" s left" in line for line in said[:-1])


Mirrored = tuple[ResourceSyncClient, ResourceSyncSource, LocalDestination, Checkpoint]


@pytest.fixture
def mirrored(tmp_path: Path) -> Iterator[Mirrored]:
    """A Source of 30 resources, and a mirror baselined from it (its checkpoint)."""
    with SourceServer(max_lifetime=60) as server, client_for(server) as client:
        source = ResourceSyncSource(server, resources={f"r{n:02d}.txt": b"x" for n in range(30)})
        source.publish()
        mirror = LocalDestination(tmp_path / "mirror")
        yield client, source, mirror, run_baseline(
            client, mirror, capability_list_url=source.capability_list_url, processes=1)


def test_an_incremental_run_says_how_many_of_how_many_and_the_time_left(
        mirrored: Mirrored, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29, item 4: the changes coalesced are counted before they are applied."""
    monkeypatch.setattr(tally_module, "PROGRESS_EVERY", 10)
    client, source, mirror, start = mirrored
    for uri in source.state():
        source.update(uri.rpartition("/")[2], b"y")
    source.publish()
    with caplog.at_level(logging.INFO):
        run_incremental(client, mirror, capability_list_url=source.capability_list_url,
                        checkpoint=start, concurrency=1)
    said = _progress(caplog)
    assert _how_far(said) == ["10 of 30", "20 of 30", "30 of 30"]
    assert all(" s left" in line for line in said[:-1])


def test_an_audit_says_how_many_of_how_many_it_checked_and_repaired(
        mirrored: Mirrored, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29, item 4: an audit of a large mirror said nothing until its summary."""
    monkeypatch.setattr(audit_module, "PROGRESS_EVERY", 10)
    client, source, mirror, _ = mirrored
    for path in sorted((tmp_path / "mirror").rglob("r0*.txt")):  # 10 resources lost
        path.unlink()
    with caplog.at_level(logging.INFO):
        report = run_audit(client, mirror, capability_list_url=source.capability_list_url,
                           repair=True, deep=True, concurrency=1)
    assert (report.repaired, report.clean) == (10, True)
    said = _progress(caplog)
    assert _how_far(said) == ["checking: 10 of 30", "checking: 20 of 30", "checking: 30 of 30",
                              "repairing: 10 of 10"]
    assert said[0].endswith(" s left): 10 missing, 0 extra, 0 mismatched")
    assert "B/s, about" in said[1]  # a deep audit reads the bytes: their rate too
    assert said[-1].endswith("/s): 0 missing, 0 extra, 0 mismatched") and "B/s" not in said[-1]
