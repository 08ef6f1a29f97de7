"""What to do about each of the provider's errors: one table, the first line of a failed task's
log (``shell/next_step.py``) and what must change for a resource that fails for good
(:class:`~.tally.Tally`, its summary and its ``SyncIncompleteError``). A re-run is advised only
where it can succeed (``rerun_helps``); else the step says what to change."""

from __future__ import annotations

from ..errors import (
    ChangeGapError,
    ConfigurationError,
    ContentMismatchError,
    DestinationError,
    DocumentError,
    FetchError,
    InvalidValueError,
    NoCheckpointError,
    PublishError,
    ResourceSyncError,
    SourceNotFoundError,
    SyncIncompleteError,
    UnsafeContentError,
    UnstorableKeyError,
)

__all__ = ["NEXT_STEPS", "next_step"]

_RERUN = ("re-run this task (clear it, or let its retries run). What was done is committed and "
          "a re-run does only what is missing, so it converges")
#: Each class of error and what to do about it, the most specific class first. A step that can
#: also be a resource's fix (an error a re-run cannot fix) names what is wrong as "named": the
#: resource's reason comes before it in its log line, the error after it in a task's.
NEXT_STEPS: tuple[tuple[type[ResourceSyncError], str], ...] = (
    (SyncIncompleteError, _RERUN),
    (ChangeGapError, "run a baseline into the mirror (ResourceSyncBaselineOperator), or give "
                     "the incremental operator on_gap='baseline': the Source no longer offers "
                     "the changes named, so running this task again cannot succeed"),
    (NoCheckpointError, "run a baseline into the mirror first (ResourceSyncBaselineOperator): "
                        "nothing was mirrored yet, so there is no checkpoint to start from"),
    (ConfigurationError, "fix the connection field or the argument named"),
    (InvalidValueError, "the Source must fix the value named (tell its maintainers)"),
    (FetchError, "check that the Source is up and reachable from the worker (URL and status "
                 "below), then re-run this task"),
    (ContentMismatchError, "the Source serves content unlike its own description: re-run "
                           "later (it may be mid-update), and tell its maintainers if it lasts"),
    (UnsafeContentError, "the Source must fix the document or the URIs it lists (a safety rule "
                         "refused what is named, and nothing was written from it)"),
    (SourceNotFoundError, "check the connection's host, port and path (or capability_list_url): "
                          "no ResourceSync Source answers at the URL named below, nor by any "
                          "route of discovery from it (each step tried is listed)"),
    (DocumentError, "the Source must fix the document or the URIs it lists (tell its "
                    "maintainers: the URL, line and spec section are named), or set "
                    "capability_list_url to another Capability List"),
    (UnstorableKeyError, "map URIs whose keys the destination can never hold to other keys with "
                         "key_prefixes, or mirror into a destination that can hold them (S3)"),
    (DestinationError, "check the destination (permissions, free space, the bucket, the AWS "
                       "connection), then re-run this task"),
    (PublishError, "change the setting or the object named, as the error says"),
)


def next_step(error: ResourceSyncError) -> str:
    """What to do about ``error``: its class's step in :data:`NEXT_STEPS`, made more precise
    where the error knows more (the host a run stopped on, a URL that never answered, a host
    the rules refused, lasting failures, a store that failed for a while)."""
    if isinstance(error, SyncIncompleteError) and error.stopped is not None:
        return (f"check that {error.stopped} is up and reachable from the worker (and, if it "
                "never answered, the connection's host and port), then re-run this task: what "
                "was fetched before the run stopped is kept")
    if isinstance(error, SyncIncompleteError) and not error.rerun_helps:
        return (f"change what makes {error.lasting} of the failures lasting, as running the "
                f"task again cannot fix them: {'; '.join(error.fixes) or 'see the reasons'}")
    if isinstance(error, SourceNotFoundError) and error.unreachable:
        return ("check the connection's host and port, and that the Source is up: the URL "
                "named below got no answer from the worker; then re-run this task")
    if isinstance(error, UnsafeContentError) and "hosts" in error.rule:
        return ("if the host named is to be trusted, add it to the connection's allowed hosts; "
                "else the Source must fix its list")
    if isinstance(error, PublishError) and error.rerun_helps:
        return "re-run this task once the store answers again"
    return next((step for kind, step in NEXT_STEPS if isinstance(error, kind)),
                "see the error below")
