"""A function over a stream of items on a few threads, with bounded work in flight.

Items are drawn on the caller's thread only as slots free up, so a million-entry list never
becomes a million queued futures; results come back on the caller's thread as they complete.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

__all__ = ["bounded_map"]

T = TypeVar("T")
R = TypeVar("R")


def bounded_map(function: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``function`` over ``items`` on ``workers`` threads, results in completion order, at most
    ``2 * workers`` items in flight. Leaving early waits for the running calls and cancels the
    queued ones; an exception ``function`` raises is raised here."""
    limit = 2 * max(workers, 1)
    with ThreadPoolExecutor(max(workers, 1), thread_name_prefix="resourcesync") as pool:
        pending: set[Future[R]] = set()
        try:
            for item in items:
                if len(pending) >= limit:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    yield from (future.result() for future in done)
                pending.add(pool.submit(function, item))
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                yield from (future.result() for future in done)
        finally:
            for future in pending:
                future.cancel()
