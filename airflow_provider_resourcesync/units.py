"""Amounts as a person reads them in a log line: bytes in binary units, the counts of a run with
its bytes so shown, and how far a long run is, said at one cadence."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["PROGRESS_EVERY", "PROGRESS_SECONDS", "Pacer", "byte_size", "counted", "pace"]

#: The longest silence between two progress lines of a run, in seconds, however slowly it goes.
PROGRESS_SECONDS = 30.0
#: Items between two progress lines of a run, however fast it goes.
PROGRESS_EVERY = 1000

_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def byte_size(amount: float) -> str:
    """``amount`` bytes as ``512 B``, ``15.6 MiB``, ``1.2 GiB``: the largest binary unit it
    holds one of, to one decimal; a rate is ``f"{byte_size(amount / seconds)}/s"``."""
    if amount < 1024:
        return f"{amount:.0f} B"
    for unit in _UNITS:
        amount /= 1024
        if round(amount, 1) < 1024 or unit == _UNITS[-1]:
            break
    return f"{amount:.1f} {unit}"


def counted(stats: Mapping[str, int]) -> str:
    """A run's counts, ``12 fetched, 0 failed, 15.6 MiB``: each count and its name, the one
    named ``bytes`` as a :func:`byte_size`."""
    return ", ".join(byte_size(value) if name == "bytes" else f"{value} {name}"
                     for name, value in stats.items())


def pace(done: int, total: int | None, amount: float | None, elapsed: float, noun: str, *,
         about: bool = False) -> str:
    """How far a run is: ``done`` (of ``total``, where known; ``about`` it, where guessed)
    ``noun`` in ``elapsed`` seconds, at what rates (of them, and of ``amount`` bytes, unless
    None), and about how long is left."""
    elapsed = max(elapsed, 1e-6)
    rate = done / elapsed
    of = f"{done} of {'about ' if about else ''}{total}" if total else str(done)
    line = f"{of} {noun} done in {elapsed:.0f} s ({rate:.1f}/s"
    if amount is not None:
        line += f", {byte_size(amount / elapsed)}/s"
    if total and total > done and rate > 0:
        line += f", about {(total - done) / rate:.0f} s left"
    return line + ")"


@dataclass
class Pacer:
    """When a long run says how far it is: each ``every`` items done, and
    :data:`PROGRESS_SECONDS` after its last line however few; ``clock`` is ``time.monotonic``'s
    kind of clock."""

    every: int = PROGRESS_EVERY
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    _told: float = field(init=False)  # when the last line was due

    def __post_init__(self) -> None:
        self.started = self._told = self.clock()

    def due(self, done: int) -> float | None:
        """The seconds since the start, if a line is due now that ``done`` items are; else
        None."""
        now = self.clock()
        if done % self.every and now - self._told < PROGRESS_SECONDS:
            return None
        self._told = now
        return now - self.started
