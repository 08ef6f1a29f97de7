"""A function over a stream of items on a few threads, with as much work in flight as pays.

Items are drawn on the caller's thread only as slots free up, so a million-entry list never
becomes a million queued futures; results come back on the caller's thread as they complete.

How many items are in flight follows :class:`Throttle`: concurrency pays while the workers wait
on the network, and costs once the interpreter's one lock keeps them waiting on each other.
Which of the two a Source is, only measuring tells.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from queue import SimpleQueue
from typing import TypeVar

__all__ = ["Throttle", "bounded_map"]

T = TypeVar("T")
R = TypeVar("R")


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
            self._judge(rate)
        elif self._hold > 0:
            self._hold -= 1
        else:
            self._upward = not self._upward
            self._try(rate, self._upward)

    def _judge(self, rate: float) -> None:
        before, before_rate = self._probe  # type: ignore[misc]
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


def bounded_map(function: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``function`` over ``items`` on up to ``workers`` threads, results in completion order:
    :class:`Throttle`'s limit of threads, with as many items again queued (a thread that finishes
    finds its next item waiting); at a limit of one, on the caller's thread, with no hand-over
    between threads. When the limit changes, the calls in flight finish, then new items go to a
    pool of the new size. Completed calls arrive through one queue, so each costs the
    same however many are in flight. Leaving early waits for the running calls and cancels the
    queued ones; an exception ``function`` raises is raised here."""
    throttle = Throttle(workers, time.monotonic())
    pool: ThreadPoolExecutor | None = None
    size = 0  # the threads of ``pool``
    pending: set[Future[R]] = set()
    completed: SimpleQueue[Future[R]] = SimpleQueue()

    def settle() -> R:
        future = completed.get()
        pending.discard(future)
        throttle.completed(time.monotonic())
        return future.result()

    try:
        for item in items:
            while len(pending) >= (2 * throttle.limit if throttle.limit > 1 else 1):
                yield settle()
            if throttle.limit == 1:
                result = function(item)
                throttle.completed(time.monotonic())
                yield result
                continue
            if pool is None or size != throttle.limit:
                while pending:  # the old pool's calls end first: never more than one pool's
                    yield settle()
                if pool is not None:
                    pool.shutdown()
                size = throttle.limit
                pool = ThreadPoolExecutor(size, thread_name_prefix="resourcesync")
            future = pool.submit(function, item)
            pending.add(future)
            future.add_done_callback(completed.put)
        while pending:
            yield settle()
    finally:
        for future in pending:
            future.cancel()
        wait(pending)
        if pool is not None:
            pool.shutdown()
