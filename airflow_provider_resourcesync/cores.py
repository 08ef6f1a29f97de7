"""The cores this process may use, and how many of them nobody else is using now."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CpuSample", "usable_cores"]

#: The shortest span idle cores are measured over: ``/proc/stat`` counts in ticks of 10 ms.
MIN_SPAN = 0.25
_TICK = 1 / os.sysconf("SC_CLK_TCK")


def usable_cores() -> float:
    """Cores this process may run on: its CPU affinity, or fewer under a container's CPU quota
    (cgroup v2's ``cpu.max``)."""
    cores = float(len(_cpus()))
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        return min(cores, int(quota) / int(period)) if quota != "max" else cores
    except (OSError, ValueError):  # no cgroup v2 quota to read
        return cores


@dataclass(frozen=True, slots=True)
class CpuSample:
    """The machine's idle time and this process's CPU time at one moment."""

    at: float  # monotonic seconds
    idle: float | None  # seconds its CPUs spent idle since boot; None: not known here
    own: float  # this process's CPU seconds

    @classmethod
    def take(cls) -> CpuSample:
        return cls(time.monotonic(), _idle_seconds(), time.process_time())

    def spare_cores(self) -> float | None:
        """Cores that nothing but this process used since the sample, on average (idle, or
        busy with this process's own work); None where the machine's idle time is not known.
        Waits until :data:`MIN_SPAN` has passed since the sample."""
        if self.idle is None:
            return None
        time.sleep(max(0.0, self.at + MIN_SPAN - time.monotonic()))
        now = CpuSample.take()
        if now.idle is None:
            return None
        return (now.idle - self.idle + now.own - self.own) / (now.at - self.at)


def _cpus() -> set[int]:
    """The CPUs this process may run on (all of them where the system cannot say)."""
    if hasattr(os, "sched_getaffinity"):  # not on macOS
        return os.sched_getaffinity(0)
    return set(range(os.cpu_count() or 1))


def _idle_seconds() -> float | None:
    """Idle and I/O-wait time of the CPUs this process may run on (``/proc/stat``'s ``cpuN``
    lines), in seconds."""
    mine = _cpus()
    ticks = 0
    try:
        with open("/proc/stat", "rb") as stat:
            for line in stat:
                if not line.startswith(b"cpu"):
                    break
                fields = line.split()
                name = fields[0][3:]
                if name and int(name) in mine:
                    ticks += int(fields[4]) + int(fields[5])
    except (OSError, ValueError, IndexError):
        return None
    return ticks * _TICK
