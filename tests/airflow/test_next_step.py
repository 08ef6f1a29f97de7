"""What a failed task's first log line tells its user to do: re-run only where that can succeed
(``rerun_helps``), else what to change (issue 12, item 9); and the same step, from one table, is
what a resource failing for good says to change (issue 29, item 7)."""

from __future__ import annotations

import inspect
import logging

import pytest

from airflow_provider_resourcesync import errors
from airflow_provider_resourcesync.errors import (
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
from airflow_provider_resourcesync.shell.next_step import next_step, says_what_next
from airflow_provider_resourcesync.sync.next_step import NEXT_STEPS
from airflow_provider_resourcesync.sync.tally import Outcome, Tally

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
    UnsafeContentError("https://elsewhere.example/x : another host", rule="hosts allowed"),
    ChangeGapError("the changes after 2026-01-01T00:00:00Z are no longer offered"),
    NoCheckpointError("no checkpoint to start from"),
    PublishError("resource_dump: 'maybe' is neither true nor false"),
    PublishError("the store failed", rerun_helps=True),
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


def test_each_error_class_has_one_step_in_one_table() -> None:
    """Every class is listed once, after its subclasses (so each entry is the one its class
    reaches), and every error of the package has a step of its own or its parent's."""
    kinds = [kind for kind, _ in NEXT_STEPS]
    assert len(kinds) == len(set(kinds))
    for later, kind in enumerate(kinds):
        assert not any(issubclass(kind, earlier) for earlier in kinds[:later]), kind
    defined = [kind for _, kind in inspect.getmembers(errors, inspect.isclass)
               if issubclass(kind, ResourceSyncError) and kind is not ResourceSyncError]
    assert defined and all(issubclass(kind, tuple(kinds)) for kind in defined)


@pytest.mark.parametrize("error", [error for error in ERRORS if not error.rerun_helps
                                   and not isinstance(error, SyncIncompleteError)],
                         ids=lambda error: type(error).__name__)
def test_a_resource_failing_for_good_says_the_step_its_task_would(
        error: ResourceSyncError, caplog: pytest.LogCaptureFixture) -> None:
    """The same words whether the error fails the task or one resource of a run: its
    ``Failed:`` line, the run's error and the task's first line all say the step."""
    log = logging.getLogger("test.next_step")
    step = next_step(error)
    tally = Tally(log)
    with caplog.at_level(logging.INFO, logger=log.name), pytest.raises(SyncIncompleteError) \
            as raised, says_what_next(log):
        tally.count(Outcome.failed("https://example.org/r", str(error), error))
        tally.raise_if_failed("The baseline")
    failed, first = (record.getMessage() for record in caplog.records)
    assert failed.endswith(f"(to fix: {step})")
    assert step in str(raised.value) and not raised.value.rerun_helps
    assert first.startswith(f"Next: change what makes 1 of the failures lasting, as running "
                            f"the task again cannot fix them: {step}. 1 failed")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=log.name), pytest.raises(type(error)), \
            says_what_next(log):
        raise error
    assert caplog.messages == [f"Next: {step}. {error}"]
