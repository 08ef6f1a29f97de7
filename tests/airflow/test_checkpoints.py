"""Where a task starts (issue 29, item 7): one order for the incremental operator, the sensors and
the publishing operator, and this task's previous XCom asked for only where it is used: Airflow
logs an ERROR for an XCom it does not find, so a first run must not ask (item 4)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from airflow_provider_resourcesync.errors import ConfigurationError
from airflow_provider_resourcesync.shell.checkpoints import (
    MIRROR,
    PUBLICATION,
    Found,
    starting_checkpoint,
)

LOG = logging.getLogger("test.checkpoints")
HERE, THERE = "file:///mirror/", "file:///elsewhere/"


def checkpoint(destination: str = HERE, kind: str = "baseline") -> dict[str, Any]:
    return {"version": 1, "kind": kind, "source": "https://example.org/caps.xml",
            "document": "https://example.org/rl.xml", "destination": destination,
            "at": None, "position": {"time": None}, "shard": None, "stats": {}}


class TaskInstance:
    """The task instance's one call made here, recorded: the XCom of its previous run."""

    task_id, map_index = "sync", -1

    def __init__(self, previous: Any) -> None:
        self.previous = previous
        self.pulls: list[dict[str, Any]] = []

    def xcom_pull(self, **asked: Any) -> Any:
        self.pulls.append(asked)
        return self.previous


def start(ti: TaskInstance, saved: dict[str, Any] | None, **arguments: Any) -> Found | None:
    context: Any = {"ti": ti}
    return starting_checkpoint(context, LOG, arguments.pop("saver", MIRROR), of=HERE,
                               saved=lambda: saved, **arguments)


def test_the_argument_then_the_saved_one_then_the_previous_xcom(
        caplog: pytest.LogCaptureFixture) -> None:
    ti = TaskInstance(checkpoint(kind="incremental"))
    with caplog.at_level(logging.INFO, logger=LOG.name):
        given = start(ti, checkpoint(), given=checkpoint(kind="given"), previous="start")
        saved = start(ti, checkpoint(), previous="start")
        assert ti.pulls == []  # asked for only where nothing is saved
        previous = start(ti, None, previous="start")
    assert given and given.where == "the argument" and given.value["kind"] == "given"
    assert saved and saved.where == "the mirror's saved checkpoint"
    assert previous and previous.value["kind"] == "incremental"
    assert ti.pulls == [{"task_ids": "sync", "include_prior_dates": True, "map_indexes": -1}]
    assert caplog.messages[-1] == (
        "Starting from this task's previous XCom (the mirror has none saved): the incremental "
        "checkpoint of https://example.org/rl.xml at the first change")


def test_a_checkpoint_of_another_mirror_is_set_aside(caplog: pytest.LogCaptureFixture) -> None:
    ti = TaskInstance(checkpoint(THERE))
    found = start(ti, checkpoint(), given=checkpoint(THERE))
    assert found and found.where == "the mirror's saved checkpoint"
    assert start(ti, None, given=checkpoint(THERE), previous="start") is None
    aside = f"is of the mirror at {THERE}, not {HERE} : not used"
    assert [message for message in caplog.messages if "not used" in message] == [
        f"The checkpoint from the argument {aside}", f"The checkpoint from the argument {aside}",
        f"The checkpoint from this task's previous XCom (the mirror has none saved) {aside}"]


def test_a_publication_compares_its_previous_xcom_only_once_it_saved_one(
        caplog: pytest.LogCaptureFixture) -> None:
    saved = {"version": 1, "time": "2026-03-01T00:00:00Z", "objects": "state/1.jsonl.gz"}
    ti = TaskInstance({**saved, "stats": {"changes": 4}})
    assert start(ti, None, saver=PUBLICATION, previous="compare") is None
    assert ti.pulls == []  # a first run asks for no XCom: Airflow would log an ERROR
    found = start(ti, saved, saver=PUBLICATION, previous="compare")
    assert found and found.value == saved and len(ti.pulls) == 1
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]
    ti.previous = {**saved, "time": "2026-02-01T00:00:00Z"}
    start(ti, saved, saver=PUBLICATION, previous="compare")
    assert "is not the checkpoint saved" in caplog.records[-2].getMessage()


def test_what_is_not_a_checkpoint_is_refused_naming_where_it_came_from() -> None:
    with pytest.raises(ConfigurationError, match="checkpoint from the argument: not a check"):
        start(TaskInstance(None), None, given="[1, 2]")
    with pytest.raises(ConfigurationError, match="not a ResourceSync checkpoint"):
        start(TaskInstance({"version": 9}), None, previous="start")
