"""The provider's errors as task failures whose first log line says what to do next: to re-run
only where re-running can succeed (``rerun_helps``), else what to change."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import (
    ChangeGapError,
    ConfigurationError,
    ContentMismatchError,
    DestinationError,
    DocumentError,
    FetchError,
    NoCheckpointError,
    ResourceSyncError,
    SourceNotFoundError,
    SyncIncompleteError,
    UnsafeContentError,
    UnstorableKeyError,
)
from ..sync.log import Log

__all__ = ["next_step", "says_what_next"]

_RERUN = ("re-run this task (clear it, or let its retries run). What was done is committed and "
          "a re-run does only what is missing, so it converges")
#: The most specific class first.
_NEXT: tuple[tuple[type[ResourceSyncError], str], ...] = (
    (SyncIncompleteError, _RERUN),
    (ChangeGapError, "run a baseline into the mirror (ResourceSyncBaselineOperator), or give "
                     "the incremental operator on_gap='baseline': the Source no longer offers "
                     "the changes named below, so re-running this task cannot succeed"),
    (NoCheckpointError, "run a baseline into the mirror first (ResourceSyncBaselineOperator): "
                        "nothing was mirrored yet, so there is no checkpoint to start from"),
    (ConfigurationError, "fix the connection field or the argument named below"),
    (FetchError, "check that the Source is up and reachable from the worker (URL and status "
                 "below), then re-run this task"),
    (ContentMismatchError, "the Source serves content unlike its own description: re-run "
                           "later (it may be mid-update), and tell its maintainers if it lasts"),
    (UnsafeContentError, "the Source sent content refused by the safety rule named below; "
                         "nothing was written from it"),
    (SourceNotFoundError, "check the connection's host, port and path (or capability_list_url): "
                          "no ResourceSync Source answers at the URL named below, nor by any "
                          "route of discovery from it (each step tried is listed)"),
    (DocumentError, "a document of the Source cannot be read or breaks the spec (URL, line and "
                    "section below): tell its maintainers, or set capability_list_url to "
                    "another Capability List"),
    (UnstorableKeyError, "the destination can never hold the key named below: map such URIs "
                         "to other keys with key_prefixes, or mirror into a destination that "
                         "can hold them (S3)"),
    (DestinationError, "check the destination (permissions, free space, the bucket, the AWS "
                       "connection), then re-run this task"),
)


def next_step(error: ResourceSyncError) -> str:
    """What to do about ``error``."""
    if isinstance(error, SyncIncompleteError) and error.stopped is not None:
        return (f"check that {error.stopped} is up and reachable from the worker (and, if it "
                "never answered, the connection's host and port), then re-run this task: what "
                "was fetched before the run stopped is kept")
    if isinstance(error, SourceNotFoundError) and error.unreachable:
        return ("check the connection's host and port, and that the Source is up: the URL "
                "named below got no answer from the worker; then re-run this task")
    if isinstance(error, SyncIncompleteError) and not error.rerun_helps:
        return (f"change what makes {error.lasting} of the failures lasting, as running the "
                f"task again cannot fix them: {'; '.join(error.fixes) or 'see the reasons'}")
    return next((step for kind, step in _NEXT if isinstance(error, kind)),
                "see the error below")


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
