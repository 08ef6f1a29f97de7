"""Idle cores measured from ``/proc/stat`` (``cores.py``): what "auto" starts workers by."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from airflow_provider_resourcesync.cores import MIN_SPAN, CpuSample, usable_cores
from airflow_provider_resourcesync.sync.processes import free_cores

#: A process that keeps one core busy for a few seconds at most (bounded, whatever happens).
_BURN = "import time\nend = time.monotonic() + 5\nwhile time.monotonic() < end: pass\n"


@contextmanager
def every_core_busy() -> Iterator[None]:
    burners = [subprocess.Popen([sys.executable, "-c", _BURN])
               for _ in range(len(os.sched_getaffinity(0)))]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def test_cores_busy_with_other_processes_are_not_spare(caplog: pytest.LogCaptureFixture) -> None:
    """Another job that keeps every core busy leaves none spare, at once: no lag of a load
    average (which counted, for a minute, a job that had just ended)."""
    caplog.set_level(logging.INFO)
    with every_core_busy():
        since = CpuSample.take()
        spare = since.spare_cores()
        assert spare is not None and spare < 0.6
        assert free_cores(logging.getLogger("test"), CpuSample.take()) == 1
    if usable_cores() >= 2:
        assert "One process: the machine is busy" in caplog.text


def test_this_process_s_own_work_counts_as_spare() -> None:
    """What the run itself did meanwhile (reading the list) is not someone else's load: with
    every core busy, what is spare is this process's own share of them."""
    with every_core_busy():
        since = CpuSample.take()
        # this process busy too, beside the burners, until it has done 0.2 s of work (however
        # little of the cores the machine's other work leaves it: a bound, not an assertion)
        bound = since.at + 60
        while (time.monotonic() < since.at + 4 * MIN_SPAN or time.process_time() - since.own
               < 0.2) and time.monotonic() < bound:
            pass
        spare = since.spare_cores()
        now = CpuSample.take()
    share = (now.own - since.own) / (now.at - since.at)
    assert spare is not None and now.own - since.own >= 0.2  # nothing idle: what it did
    assert spare >= 0.8 * share


def test_a_system_with_no_cpu_affinity_counts_every_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS has no ``sched_getaffinity``: a client (which sizes its bulk slots by the cores)
    and "auto" still work there."""
    with_affinity = usable_cores()
    every_cpu = len(os.sched_getaffinity(0)) == os.cpu_count()
    monkeypatch.delattr(os, "sched_getaffinity")
    without = usable_cores()
    assert without >= with_affinity >= 1
    assert without == with_affinity or not every_cpu
    assert CpuSample.take().idle is not None
