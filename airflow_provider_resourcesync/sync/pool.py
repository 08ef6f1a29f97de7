"""A function over a stream of items on a few threads, with as much work in flight as pays.

Items are drawn on the caller's thread only as slots free up, so a million-entry list never
becomes a million queued futures; results come back on the caller's thread as they complete.

How many items are in flight follows :class:`Throttle`: concurrency pays while the workers wait
on the network, and costs once the interpreter's one lock keeps them waiting on each other.
Which of the two a Source is, only measuring tells.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from queue import Empty, SimpleQueue
from typing import Any, Literal, TypeVar

__all__ = ["Throttle", "bounded_map"]

T = TypeVar("T")
R = TypeVar("R")
#: What a call on a crew's thread came to: its result, or what it raised.
_Outcome = tuple[Literal[True], R] | tuple[Literal[False], BaseException]


class Throttle:
    """The number of items to keep in flight, between 1 and ``ceiling``, found by trying.

    By Little's law, throughput is items in flight over time per item. Against a distant Source
    time per item is mostly waiting, and doubling what is in flight nearly doubles throughput;
    against a near one it is mostly our own work under the GIL, and more threads only contend.
    So the limit starts at ``ceiling`` (what a distant Source wants) and probes: half as many is
    kept when it raises the rate of completions by ``GAIN / 2`` (a tie keeps the higher limit,
    which a Source that slows down needs), twice as many when it raises it by ``GAIN``, and a
    probe that pays is followed by another the same way; one that does not is undone. After
    ``HOLD`` windows at one limit it probes again, down and up in turn (a turn with no room that
    way is skipped), so the limit follows a Source whose latency changes. Each probe that does
    not pay doubles the wait before the next, up to ``MAX_HOLD`` windows: a probe costs while it
    lasts (half the workers against a distant Source), and a steady Source is probed ever more
    rarely. Each probe is judged against the window just before it, so a machine whose speed
    drifts over minutes misleads it little.
    """

    GAIN = 0.1
    HOLD = 8
    MAX_HOLD = 64
    #: A window closes after this many seconds and at least two completions per item in flight.
    WINDOW = 0.25

    def __init__(self, ceiling: int, now: float) -> None:
        self.ceiling = max(ceiling, 1)
        self.limit = self.ceiling
        self._start, self._done = now, 0
        self._probe: tuple[int, float] | None = None  # the limit and rate a probe left
        self._hold, self._upward = 0, True  # the first probe goes down from the ceiling
        self._patience = self.HOLD  # windows to hold after a probe that did not pay

    def completed(self, now: float) -> None:
        """One item done at ``now`` (a monotonic clock)."""
        self._done += 1
        elapsed = now - self._start
        if elapsed < self.WINDOW or self._done < 2 * self.limit:
            return
        rate = self._done / elapsed
        self._start, self._done = now, 0
        if self._probe is not None:
            self._judge(rate, *self._probe)
        elif self._hold > 0:
            self._hold -= 1
        else:
            self._upward = not self._upward
            self._try(rate, self._upward)

    def _judge(self, rate: float, before: int, before_rate: float) -> None:
        self._probe = None
        if self.limit > before and rate >= before_rate * (1 + self.GAIN):
            self._patience = self.HOLD
            self._try(rate, upward=True)  # it paid: keep climbing
        elif self.limit < before and rate >= before_rate * (1 + self.GAIN / 2):
            self._patience = self.HOLD
            self._try(rate, upward=False)  # more for less: keep descending
        else:
            self.limit, self._hold = before, self._patience
            self._patience = min(2 * self._patience, self.MAX_HOLD)

    def _try(self, rate: float, upward: bool) -> None:
        """Probe the next limit in the direction asked for; hold where there is none."""
        target = min(self.ceiling, 2 * self.limit) if upward else max(1, self.limit // 2)
        if target == self.limit:
            self._hold = self.HOLD
        else:
            self._probe, self.limit = (self.limit, rate), target


class _Crew:
    """``size`` threads calling ``function`` on the items put in :attr:`inbox`, each outcome
    put in ``outbox``: ``(True, result)`` or ``(False, exception)``. Lighter than an executor's
    futures (a lock and a condition each): a pool of small resources hands over thousands a
    second."""

    def __init__(self, function: Callable[[T], R], size: int,
                 outbox: SimpleQueue[_Outcome[R]]) -> None:
        self.size = size
        self.inbox: SimpleQueue[Any] = SimpleQueue()
        self._threads = [threading.Thread(target=_work, args=(self.inbox, function, outbox),
                                          name=f"resourcesync_{number}")
                         for number in range(size)]
        for thread in self._threads:
            thread.start()

    def stop(self) -> int:
        """Take back the items no thread started, and end the threads once their calls have
        returned; how many items were taken back."""
        taken = 0
        while True:
            try:
                self.inbox.get_nowait()
            except Empty:
                break
            taken += 1
        for _ in self._threads:
            self.inbox.put(_STOP)
        for thread in self._threads:
            thread.join()
        return taken


_STOP = object()


def _work(inbox: SimpleQueue[Any], function: Callable[[Any], R],
          outbox: SimpleQueue[_Outcome[R]]) -> None:
    while (item := inbox.get()) is not _STOP:
        outcome: _Outcome[R]
        try:
            outcome = (True, function(item))
        except BaseException as error:  # handed to the caller, raised there
            outcome = (False, error)
        outbox.put(outcome)


def bounded_map(function: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``function`` over ``items`` on up to ``workers`` threads, results in completion order:
    :class:`Throttle`'s limit of threads, with as many items again queued (a thread that finishes
    finds its next item waiting); at a limit of one, on the caller's thread, with no hand-over
    between threads. When the limit changes, the calls in flight finish, then new items go to a
    crew of threads of the new size. Completed calls arrive through one queue, so each costs the
    same however many are in flight. Leaving early waits for the running calls and takes back
    the queued ones; an exception ``function`` raises is raised here."""
    throttle = Throttle(workers, time.monotonic())
    outbox: SimpleQueue[_Outcome[R]] = SimpleQueue()
    crew: _Crew | None = None
    pending = 0  # items handed to the crew whose outcome is not taken yet

    def settle() -> R:
        nonlocal pending
        outcome = outbox.get()
        pending -= 1
        throttle.completed(time.monotonic())
        if outcome[0]:
            return outcome[1]
        raise outcome[1]

    try:
        for item in items:
            while pending >= (2 * throttle.limit if throttle.limit > 1 else 1):
                yield settle()
            if throttle.limit == 1:
                result = function(item)
                throttle.completed(time.monotonic())
                yield result
                continue
            if crew is None or crew.size != throttle.limit:
                while pending:  # the old crew's calls end first: never more than one crew's
                    yield settle()
                if crew is not None:
                    crew.stop()
                crew = _Crew(function, throttle.limit, outbox)
            crew.inbox.put(item)
            pending += 1
        while pending:
            yield settle()
    finally:
        if crew is not None:
            crew.stop()
