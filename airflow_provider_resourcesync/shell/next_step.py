"""The provider's errors as task failures whose first log line says what to do next (the table
of :mod:`~..sync.next_step`, which a resource's lasting failure also reads)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import ResourceSyncError, SyncIncompleteError
from ..sync.log import Log
from ..sync.next_step import next_step

__all__ = ["next_step", "says_what_next"]


@contextmanager
def says_what_next(log: Log) -> Iterator[None]:
    """Log what to do next before the provider's errors fail the task (they propagate)."""
    try:
        yield
    except SyncIncompleteError as error:
        log.error("Next: %s. %s failed; if the same ones keep failing, check them at the "
                  "Source. First: %s", next_step(error), error.failed,
                  "; ".join(f"{uri} : {why}" for uri, why in error.failures[:3]))
        raise
    except ResourceSyncError as error:
        log.error("Next: %s. %s", next_step(error), error)
        raise
