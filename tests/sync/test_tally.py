"""Progress in the log: a line every 1,000 resources, and at most 30 s apart however slowly a
Source answers, with the rate and, where the run knows its total, the time left (issue 16)."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_resourcesync.sync.tally import Outcome, Tally


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _progress(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Progress")]


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
