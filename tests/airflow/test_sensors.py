"""The Change List sensors and their triggers in real ``dag.test()`` runs against a loopback
Source: poke, reschedule and deferrable modes, woken by changes made while they wait."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from pkgutil import resolve_name
from typing import Any

import pytest

from airflow_provider_resourcesync.errors import ConfigurationError, NoCheckpointError
from airflow_provider_resourcesync.protocol.datetimes import format_datetime
from airflow_provider_resourcesync.protocol.position import ChangePosition
from airflow_provider_resourcesync.sensors.changelist import (
    ResourceSyncChangeListSensor,
    ResourceSyncClosedChangeListSensor,
)
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.testing import ResourceSyncSource
from airflow_provider_resourcesync.triggers.changelist import (
    ResourceSyncChangeListTrigger,
    ResourceSyncClosedChangeListTrigger,
)
from airflow_provider_resourcesync.writer import MirrorState

from .runs import run_dag, states, xcom

#: ``later(seconds, action)``: run ``action`` on a timer.
Later = Callable[[float, Callable[[], object]], None]


def checkpoint_of(source: ResourceSyncSource) -> dict[str, Any]:
    """A baseline's checkpoint of ``source`` as published by the fixture: before any change."""
    return Checkpoint(kind="baseline", source=source.capability_list_url,
                      document=source.resource_list_url, destination="file:///mirror/",
                      at=source.created, position=ChangePosition.at(source.created)).to_json()


def changelist_statuses(source: ResourceSyncSource) -> list[int | None]:
    """The statuses the Source answered requests for its Change List with, in order."""
    path = source.change_list_url.removeprefix(source.server.base_url)
    return [record.status for record in source.server.requests if record.path == path]


def create_and_publish(source: ResourceSyncSource, name: str = "new.txt") -> Callable[[], None]:
    def act() -> None:
        source.create(name, b"created while the sensor waits\n")
        source.publish()
    return act


def once_read(source: ResourceSyncSource, times: int, action: Callable[[], object]
              ) -> Callable[[], None]:
    """``action``, once the Source has answered ``times`` requests for its Change List (at most
    a minute later): not after a fixed delay, since a process's first task starts seconds late,
    and the sensor must be waiting when the change comes."""
    def act() -> None:
        deadline = time.monotonic() + 60
        while len(changelist_statuses(source)) < times and time.monotonic() < deadline:
            time.sleep(0.05)
        action()
    return act


@pytest.fixture
def later() -> Iterator[Later]:
    """``later(seconds, action)``: run ``action`` on a timer, cancelled at teardown."""
    timers: list[threading.Timer] = []

    def schedule(seconds: float, action: Callable[[], object]) -> None:
        timer = threading.Timer(seconds, action)
        timers.append(timer)
        timer.start()

    yield schedule
    for timer in timers:
        timer.cancel()


def test_poke_mode_returns_what_it_saw(source: ResourceSyncSource) -> None:
    record = source.create("new.txt", b"new\n")
    source.publish()
    run = run_dag("watch_poke", lambda: ResourceSyncChangeListSensor(
        task_id="wait", checkpoint=checkpoint_of(source), poke_interval=0.5, timeout=30))
    assert states(run) == {"wait": "success"}
    seen = xcom(run, "wait")
    assert (seen["count"], seen["samples"]) == (1, [[record.uri, "created"]])


def test_poke_mode_keeps_one_client_so_a_poke_that_sees_nothing_costs_one_304(
        source: ResourceSyncSource, later: Later) -> None:
    later(0, once_read(source, 2, create_and_publish(source)))
    run = run_dag("watch_poke_waits", lambda: ResourceSyncChangeListSensor(
        task_id="wait", checkpoint=checkpoint_of(source), poke_interval=0.3, timeout=30))
    assert states(run) == {"wait": "success"}
    assert xcom(run, "wait")["count"] == 1
    statuses = changelist_statuses(source)
    assert statuses[0] == statuses[-1] == 200 and set(statuses[1:-1]) == {304}
    assert len(statuses) >= 3


def test_reschedule_mode_returns_what_it_saw_once_a_change_comes(
        source: ResourceSyncSource, later: Later) -> None:
    later(0, once_read(source, 1, create_and_publish(source)))
    run = run_dag("watch_reschedule", lambda: ResourceSyncChangeListSensor(
        task_id="wait", checkpoint=checkpoint_of(source), mode="reschedule", poke_interval=1,
        timeout=30))
    assert states(run) == {"wait": "success"}
    assert xcom(run, "wait")["samples"] == [[source.uri("new.txt"), "created"]]
    assert len(changelist_statuses(source)) >= 2  # a try saw nothing and was rescheduled


def test_deferrable_mode_is_woken_by_a_change_made_while_the_trigger_waits(
        source: ResourceSyncSource, later: Later) -> None:
    later(0, once_read(source, 3, create_and_publish(source)))
    run = run_dag("watch_deferred", lambda: ResourceSyncChangeListSensor(
        task_id="wait", checkpoint=checkpoint_of(source), deferrable=True, poll_interval=0.2,
        max_poll_interval=0.5, timeout=30))
    assert states(run) == {"wait": "success"}
    seen = xcom(run, "wait")
    assert (seen["count"], seen["list_urls"]) == (1, [source.change_list_url])
    statuses = changelist_statuses(source)
    # The task's look (200), then the trigger's own client: 200, 304s, and 200 for the change.
    assert statuses[:2] == [200, 200] and statuses[-1] == 200 and 304 in statuses


def test_the_closed_sensor_is_woken_when_the_change_list_closes(
        source: ResourceSyncSource, later: Later) -> None:
    closed: list[datetime] = []

    def close() -> None:
        closed.append(source.close_changelist())
        source.publish()

    later(0, once_read(source, 2, close))
    run = run_dag("watch_closed", lambda: ResourceSyncClosedChangeListSensor(
        task_id="wait", checkpoint=checkpoint_of(source), deferrable=True, poll_interval=0.2,
        max_poll_interval=0.5, timeout=30))
    assert states(run) == {"wait": "success"}
    assert xcom(run, "wait") == {
        "list_url": source.server.url(f"{source.prefix}/changelist-1.xml"),
        "until": format_datetime(closed[0]),
        "newer_list_url": source.server.url(f"{source.prefix}/changelist-2.xml")}


def test_a_trigger_error_fails_the_task_with_its_message(
        source: ResourceSyncSource, later: Later,
        capfd: pytest.CaptureFixture[str]) -> None:
    path = source.change_list_url.removeprefix(source.server.base_url)
    # the task looks once itself, then defers to the trigger
    later(0, once_read(source, 1, lambda: source.server.remove(path, 410)))
    capfd.readouterr()
    run = run_dag("watch_gone", lambda: ResourceSyncChangeListSensor(
        task_id="wait", checkpoint=checkpoint_of(source), change_list_url=source.change_list_url,
        deferrable=True, poll_interval=0.2, max_poll_interval=0.5, timeout=30))
    assert states(run) == {"wait": "failed"}
    out = capfd.readouterr().out
    assert f"Watching the Change List failed: {source.change_list_url}" in out
    assert "Next: check that the Source is up and reachable" in out  # the error's own advice


def test_with_no_checkpoint_anywhere_the_task_fails_saying_to_run_a_baseline(
        source: ResourceSyncSource, capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    run = run_dag("watch_nothing", lambda: ResourceSyncChangeListSensor(
        task_id="wait", poke_interval=0.1, timeout=5))
    assert states(run) == {"wait": "failed"}
    out = capfd.readouterr().out
    assert "no checkpoint to watch from: pass checkpoint=" in out
    assert "Next: run a baseline into the mirror first" in out  # not "fix the connection"
    assert source.server.requests == []


def test_before_its_baseline_the_sensor_fails_even_with_soft_fail_and_makes_no_mirror(
        source: ResourceSyncSource, tmp_path: Path) -> None:
    """Issue 29: with soft_fail it was skipped, so an hourly DAG unpaused before its baseline
    stayed green every hour with no mirror at all; issue 16: it created the empty mirror
    directory as it looked for a checkpoint there."""
    mirror = tmp_path / "not-yet"
    run = run_dag("watch_before_baseline", lambda: [
        ResourceSyncChangeListSensor(task_id=f"wait_{mode}", destination=str(mirror),
                                     soft_fail=True, deferrable=mode == "deferred",
                                     poke_interval=0.1, timeout=5)
        for mode in ("poked", "deferred")])
    assert states(run) == {"wait_poked": "failed", "wait_deferred": "failed"}
    assert not mirror.exists()
    assert source.server.requests == []


def test_a_mirror_with_no_saved_checkpoint_is_refused_naming_it(tmp_path: Path) -> None:
    sensor = ResourceSyncClosedChangeListSensor(task_id="wait", destination=str(tmp_path))
    with pytest.raises(NoCheckpointError, match="the mirror has saved no checkpoint; run a "
                                                "baseline into it first"):
        sensor.execute({})


def test_the_checkpoint_saved_at_the_destination_is_used(
        source: ResourceSyncSource, tmp_path: Path) -> None:
    with MirrorState.load(LocalDestination(tmp_path)) as state:
        state.save(checkpoint=checkpoint_of(source))
    record = source.update("item-03.txt", b"changed\n")
    source.publish()
    run = run_dag("watch_destination", lambda: ResourceSyncChangeListSensor(
        task_id="wait", destination=tmp_path.as_uri(), change_list_url=source.change_list_url,
        poke_interval=0.1, timeout=30))
    assert xcom(run, "wait")["samples"] == [[record.uri, "updated"]]


def test_a_checkpoint_of_another_mirror_gives_way_to_the_one_saved_at_the_destination(
        source: ResourceSyncSource, tmp_path: Path) -> None:
    """A previous XCom of a DAG whose destination has changed names another mirror: the
    sensor watches from the checkpoint saved at its destination instead (which stands after
    the change, so nothing is new and the sensor times out, skipped)."""
    source.update("item-03.txt", b"changed\n")
    source.publish()
    now = datetime.now(UTC)
    with MirrorState.load(LocalDestination(tmp_path)) as state:
        state.save(checkpoint=Checkpoint(
            kind="baseline", source=source.capability_list_url,
            document=source.resource_list_url, destination=LocalDestination(tmp_path).url,
            at=now, position=ChangePosition.at(now)).to_json())
    run = run_dag("watch_other_mirror", lambda: ResourceSyncChangeListSensor(
        task_id="wait", checkpoint=checkpoint_of(source), destination=tmp_path.as_uri(),
        change_list_url=source.change_list_url, poke_interval=0.1, timeout=3, soft_fail=True))
    assert states(run) == {"wait": "skipped"}


def test_a_checkpoint_rendered_by_a_template_as_json_is_read(source: ResourceSyncSource) -> None:
    source.delete("item-04.txt")
    source.publish()
    run = run_dag("watch_template", lambda: ResourceSyncChangeListSensor(
        task_id="wait", checkpoint="{{ params.checkpoint | tojson }}", poke_interval=0.1,
        timeout=30, params={"checkpoint": checkpoint_of(source)}))
    assert xcom(run, "wait")["samples"] == [[source.uri("item-04.txt"), "deleted"]]


@pytest.mark.parametrize("trigger_class", [ResourceSyncChangeListTrigger,
                                           ResourceSyncClosedChangeListTrigger])
def test_a_trigger_serializes_to_its_class_path_and_json_kwargs(trigger_class: type[Any]) -> None:

    position = ChangePosition(datetime(2026, 1, 1, 12, tzinfo=UTC), "https://example.org/cl.xml",
                              datetime(2026, 1, 1, tzinfo=UTC), 3)
    trigger = trigger_class(change_list_url="https://example.org/cl.xml", position=position,
                            resourcesync_conn_id="other", poll_interval=5, max_poll_interval=50)
    classpath, kwargs = trigger.serialize()
    assert resolve_name(classpath) is trigger_class
    assert json.loads(json.dumps(kwargs)) == kwargs
    rebuilt = resolve_name(classpath)(**kwargs)
    assert rebuilt.serialize() == (classpath, kwargs) and rebuilt.position == position


def test_the_trigger_backs_off_while_nothing_changes(
        source: ResourceSyncSource, later: Later) -> None:
    trigger = ResourceSyncChangeListTrigger(
        change_list_url=source.change_list_url,
        position=Checkpoint.from_json(checkpoint_of(source)).position,
        poll_interval=0.05, max_poll_interval=0.2)
    later(1.5, create_and_publish(source))
    event = asyncio.run(asyncio.wait_for(anext(trigger.run()), timeout=30))
    assert event.payload["status"] == "success" and event.payload["count"] == 1
    statuses = changelist_statuses(source)
    assert statuses[0] == statuses[-1] == 200 and set(statuses[1:-1]) == {304}
    assert 2 <= len(statuses) - 2 <= 12  # at a steady 0.05 s, about 30 polls


def test_each_poll_of_a_watch_has_the_whole_retry_budget(
        source: ResourceSyncSource, later: Later, monkeypatch: pytest.MonkeyPatch) -> None:
    """A watch may last days: the connection's retry_budget bounds each poll, not the watch.
    Three polls each wait out a 503's ``Retry-After: 1`` on a 2.5 s budget, then a change comes."""
    monkeypatch.setenv("AIRFLOW_CONN_RESOURCESYNC_DEFAULT", json.dumps({
        "conn_type": "resourcesync", "host": source.server.url("/"),
        "extra": {"allow_private": True, "retry_budget": 2.5}}))
    trigger = ResourceSyncChangeListTrigger(
        change_list_url=source.change_list_url,
        position=Checkpoint.from_json(checkpoint_of(source)).position,
        poll_interval=0.05, max_poll_interval=0.1)
    path = source.change_list_url.removeprefix(source.server.base_url)
    for when in (0.3, 1.8, 3.3):
        later(when, lambda: source.server.fail(path, 503, headers={"Retry-After": "1"}))
    later(4.8, create_and_publish(source))
    event = asyncio.run(asyncio.wait_for(anext(trigger.run()), timeout=30))
    assert event.payload["status"] == "success", event.payload
    assert changelist_statuses(source).count(503) == 3


def test_wrong_intervals_fail_when_the_dag_is_parsed() -> None:
    with pytest.raises(ConfigurationError, match="max_poll_interval 1: must not be less"):
        ResourceSyncChangeListSensor(task_id="wait", poll_interval=2, max_poll_interval=1)
    with pytest.raises(ConfigurationError, match="poll_interval 0: must be a positive"):
        ResourceSyncChangeListTrigger(change_list_url="https://example.org/cl.xml",
                                      position={}, poll_interval=0)


@pytest.mark.parametrize(("configured", "expected"), [("true", "True"), (None, "False")])
def test_deferrable_defaults_to_airflows_default_deferrable(configured: str | None,
                                                            expected: str) -> None:
    """As Airflow's own providers do: ``[operators] default_deferrable`` (issue 16)."""
    env = {k: v for k, v in os.environ.items() if k != "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE"}
    if configured is not None:
        env["AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE"] = configured
    done = subprocess.run([sys.executable, "-c", (
        "from airflow_provider_resourcesync.sensors.changelist import "
        "ResourceSyncChangeListSensor as S; print(S(task_id='w').deferrable)")],
        capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.stdout.strip().splitlines()[-1:] == [expected], done.stderr
