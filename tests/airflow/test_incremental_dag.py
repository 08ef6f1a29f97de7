"""The hourly incremental example DAG in real runs over successive logical dates, with changes at
a loopback Source in between: after each run the mirror equals the Source and audits clean."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.operators.incremental import ResourceSyncIncrementalOperator
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.audit import run_audit
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.writer import CHECKPOINT

from .runs import (
    HOURLY,
    assert_mirrors,
    error_lines,
    resource_bodies_sent,
    run_dag,
    run_example,
    states,
    xcom,
)

HOUR = timedelta(hours=1)
FIRST = datetime(2026, 2, 1, tzinfo=UTC)


class Clock:
    """The Source's time: one second per reading, or none (``step = 0``: changes sharing one
    ``datetime``)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)
        self.step = timedelta(seconds=1)

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def source(clock: Clock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
           ) -> Iterator[ResourceSyncSource]:
    """A published loopback Source of 12 resources on its own clock, the connection to it, and
    the mirror directory the example DAGs use, baselined by ``mirror_to_local``."""
    resources = {f"doc-{number:02d}.txt": f"doc {number}\n".encode() for number in range(12)}
    with SourceServer(max_lifetime=300) as server:
        published = ResourceSyncSource(server, resources=resources, clock=clock)
        published.publish()
        monkeypatch.setenv("AIRFLOW_CONN_RESOURCESYNC_DEFAULT", json.dumps({
            "conn_type": "resourcesync", "host": server.url("/"),
            "extra": {"allow_private": True, "max_tries": 2, "backoff": 0.01}}))
        monkeypatch.setenv("RESOURCESYNC_MIRROR_DIR", str(tmp_path / "mirror"))
        assert run_example("mirror_to_local").state == "success"
        yield published


def hourly(run_number: int) -> Any:
    return run_example("incremental_mirror", FIRST + run_number * HOUR)


def published_hour(source: ResourceSyncSource, run_number: int, **publish: Any) -> Any:
    """Publish the Source's changes, then run hour ``run_number`` with the Source's request log
    started afresh; both tasks succeed."""
    source.publish(**publish)
    source.server.reset_log()
    run = hourly(run_number)
    assert states(run) == HOURLY
    return run


def in_step(source: ResourceSyncSource, mirror: Path) -> None:
    """The mirror holds what the Source holds, nothing more, and an audit finds it clean."""
    assert_mirrors(source, mirror)
    held = [path for path in mirror.rglob("*") if path.is_file()
            and ".resourcesync" not in path.parts]
    assert len(held) == len(source.state())
    policy = ClientPolicy(allow_private=True)
    with ResourceSyncClient(policy, source_urls=[source.server.base_url]) as client:
        report = run_audit(client, LocalDestination(mirror),
                           capability_list_url=source.capability_list_url, deep=True)
    assert report.clean, report.to_json()


def test_runs_hour_after_hour_keep_the_mirror_in_step(
        source: ResourceSyncSource, clock: Clock, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    source.create("new.txt", b"created\n")
    source.update("doc-01.txt", b"doc 1, updated\n")
    source.delete("doc-02.txt")
    first = published_hour(source, 0)
    seen = xcom(first, "changes")
    assert seen["count"] == 3
    checkpoint = Checkpoint.from_json(xcom(first, "sync"))
    assert (checkpoint.kind, checkpoint.stats["changes"], checkpoint.stats["removed"]) == (
        "incremental", 3, 1)
    assert sorted(resource_bodies_sent(source)) == ["/dataset1/res/doc-01.txt",
                                                    "/dataset1/res/new.txt"]
    in_step(source, mirror)

    # one resource changed again and again; three changes sharing one datetime
    for version in range(4):
        source.update("doc-03.txt", f"doc 3, version {version}\n".encode())
    clock.step = timedelta(0)
    source.update("doc-04.txt", b"same time, a\n")
    source.update("doc-05.txt", b"same time, b\n")
    source.delete("doc-06.txt")
    published_hour(source, 1)
    assert sorted(resource_bodies_sent(source)) == [f"/dataset1/res/doc-0{n}.txt"
                                                    for n in (3, 4, 5)]
    in_step(source, mirror)

    # another change at that very datetime; the Change List closes and a new one opens;
    # the Source now writes 1.0 lists (times in lastmod)
    source.update("doc-07.txt", b"same time, c\n")
    clock.step = timedelta(seconds=1)
    source.close_changelist()
    source.create("later.txt", b"in the second list\n")
    third = published_hour(source, 2, changelist_style="1.0")
    assert sorted(resource_bodies_sent(source)) == ["/dataset1/res/doc-07.txt",
                                                    "/dataset1/res/later.txt"]
    assert xcom(third, "sync")["stats"]["changes"] == 2
    in_step(source, mirror)


def test_a_change_dump_window(source: ResourceSyncSource, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESOURCESYNC_CHANGES_FROM", "changedump")
    source.update("doc-08.txt", b"doc 8, in a package\n")
    source.delete("doc-09.txt")
    source.create("packaged.txt", b"from a package\n")
    run = published_hour(source, 0, change_dump=True)
    assert resource_bodies_sent(source) == []  # the bitstreams came in the package (13.1)
    assert xcom(run, "sync")["document"] == source.change_dump_url
    in_step(source, tmp_path / "mirror")


def test_a_run_failing_midway_then_run_again_loses_and_duplicates_nothing(
        source: ResourceSyncSource, tmp_path: Path) -> None:
    broken = "/dataset1/res/doc-10.txt"
    source.update("doc-10.txt", b"doc 10, updated\n")
    source.update("doc-11.txt", b"doc 11, updated\n")
    source.publish()
    source.server.fail(broken, 500, times=1000)
    failed = hourly(0)
    assert states(failed) == HOURLY | {"sync": "failed"}
    source.server.clear_faults()
    source.create("meanwhile.txt", b"created between the runs\n")
    published_hour(source, 1)
    assert sorted(resource_bodies_sent(source)) == [broken, "/dataset1/res/meanwhile.txt"]
    in_step(source, tmp_path / "mirror")


def test_unpaused_before_any_baseline_the_hourly_dag_baselines_then_follows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29: before, the first hours were skipped (soft_fail) and green, with no mirror."""
    with SourceServer(max_lifetime=300) as server:
        source = ResourceSyncSource(server, resources={"a.txt": b"a\n", "b.txt": b"b\n"})
        source.publish()
        monkeypatch.setenv("AIRFLOW_CONN_RESOURCESYNC_DEFAULT", json.dumps({
            "conn_type": "resourcesync", "host": server.url("/"),
            "extra": {"allow_private": True, "max_tries": 2, "backoff": 0.01}}))
        monkeypatch.setenv("RESOURCESYNC_MIRROR_DIR", str(tmp_path / "mirror"))
        first = hourly(0)
        assert states(first) == {"baselined": "success", "baseline": "success",
                                 "changes": "skipped", "sync": "skipped"}
        assert_mirrors(source, tmp_path / "mirror")
        source.create("c.txt", b"c\n")
        published_hour(source, 1)
        assert_mirrors(source, tmp_path / "mirror")


def test_a_first_hourly_run_logs_no_error_and_a_lost_checkpoint_baselines_again(
        source: ResourceSyncSource, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Issue 29: the first run logged Airflow's ERROR "XCom not found" (the sensor's template and
    the sync pulled an XCom that did not exist yet); the mirror's checkpoint is what they read."""
    mirror = tmp_path / "mirror"
    capfd.readouterr()
    source.create("new.txt", b"created\n")
    published_hour(source, 0)
    out = capfd.readouterr().out
    assert error_lines(out) == [] and "Starting from the mirror's saved checkpoint" in out
    (mirror / CHECKPOINT).unlink()  # a mirror whose checkpoint is lost is baselined again
    source.create("after.txt", b"after\n")
    source.publish()
    again = hourly(1)
    assert states(again) == HOURLY | {"baseline": "success", "changes": "skipped",
                                      "sync": "skipped"}
    in_step(source, mirror)


def test_the_sync_goes_on_from_its_previous_xcom_where_the_mirror_saved_none(
        source: ResourceSyncSource, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    make = lambda: ResourceSyncIncrementalOperator(  # noqa: E731
        task_id="sync", destination=str(mirror))
    source.create("first.txt", b"first\n")
    source.publish()
    assert states(run_dag("sync_from_xcom", make)) == {"sync": "success"}
    (mirror / CHECKPOINT).unlink()
    source.create("second.txt", b"second\n")
    source.publish()
    second = run_dag("sync_from_xcom", make)
    assert states(second) == {"sync": "success"}
    assert xcom(second, "sync")["stats"]["changes"] == 1  # from the first run's checkpoint
    in_step(source, mirror)
