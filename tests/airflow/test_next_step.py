"""What a failed task's first log line tells its user to do: re-run only where that can succeed
(``rerun_helps``), else what to change (issue 12, item 9)."""

from __future__ import annotations

import pytest

from airflow_provider_resourcesync.errors import (
    ConfigurationError,
    ContentMismatchError,
    DestinationError,
    DocumentError,
    FetchError,
    InvalidValueError,
    ResourceSyncError,
    SourceNotFoundError,
    SyncIncompleteError,
    UnsafeContentError,
    UnstorableKeyError,
)
from airflow_provider_resourcesync.shell.next_step import next_step

ERRORS = [
    SyncIncompleteError("incomplete", failures=[], failed=2),
    SyncIncompleteError("incomplete", failures=[], failed=2, lasting=1,
                        fixes=("the Source must fix the document",)),
    ConfigurationError("host: empty"),
    InvalidValueError("'x' is not an integer"),
    FetchError("gone", url="https://example.org/x", status=503),
    ContentMismatchError(url="https://example.org/x", what="md5", expected="a", actual="b"),
    UnsafeContentError("a DTD", rule="no DTDs"),
    DocumentError("not XML", url="https://example.org/list.xml"),
    SourceNotFoundError("no Source found", url="https://example.org/datset1/", unreachable=False),
    SourceNotFoundError("no Source found", url="https://example.org:1/", unreachable=True),
    DestinationError("read-only file system"),
    UnstorableKeyError("key 'a/b': 'a' is a file"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda error: type(error).__name__)
def test_re_run_only_where_a_re_run_can_succeed(error: ResourceSyncError) -> None:
    assert ("re-run" in next_step(error)) is error.rerun_helps


def test_an_incomplete_run_with_lasting_failures_says_what_to_change() -> None:
    error = ERRORS[1]
    assert not error.rerun_helps
    assert next_step(error) == (
        "change what makes 1 of the failures lasting, as running the task again cannot fix "
        "them: the Source must fix the document")
    assert ERRORS[0].rerun_helps and "re-run this task" in next_step(ERRORS[0])


def test_a_key_the_destination_cannot_hold_is_mapped_elsewhere() -> None:
    assert "key_prefixes" in next_step(ERRORS[-1])
