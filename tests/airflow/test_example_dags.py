"""Real runs of the example DAGs: ``dag.test()`` on SQLite, against a loopback Source over real
sockets and moto's S3 server over HTTP.

The example DAGs read their destination from the environment when parsed, so each test sets it,
then parses the DAG (``dag.test()`` parses the DAGs folder again, in the same environment).
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from airflow_provider_resourcesync.compat import AIRFLOW_3
from airflow_provider_resourcesync.demo import load_example_dag, run_demo
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.testing import ResourceSyncSource

from .conftest import AWS_CONN_ID
from .runs import (
    HOURLY,
    assert_mirrors,
    asset_event_uris,
    asset_events,
    error_lines,
    event_driven,
    resource_bodies_sent,
    run_example,
    states,
    xcom,
)


def test_mirror_to_local_mirrors_the_source_and_the_audit_finds_it_clean(
        source: ResourceSyncSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    mirror = tmp_path / "mirror"
    monkeypatch.setenv("RESOURCESYNC_MIRROR_DIR", str(mirror))
    capfd.readouterr()
    run = run_example("mirror_to_local")
    assert states(run) == {"baseline": "success", "audit": "success"}
    assert error_lines(capfd.readouterr().out) == []  # a first run that succeeds (issue 29)
    assert_mirrors(source, mirror)
    checkpoint = Checkpoint.from_json(xcom(run, "baseline"))
    assert (checkpoint.kind, checkpoint.source, checkpoint.document, checkpoint.destination) == (
        "baseline", source.capability_list_url, source.resource_list_url, mirror.as_uri() + "/")
    assert checkpoint.stats["fetched"] == 20
    report = xcom(run, "audit")
    assert (report["clean"], report["listed"], report["missing"]) == (True, 20, 0)
    [(uri, extra)] = asset_events(run)  # what the run did, for downstream DAGs (issue 16)
    assert uri == mirror.as_uri()
    assert extra == {"kind": "baseline", "at": checkpoint.to_json()["at"],
                     "position": checkpoint.position.to_json(), "stats": checkpoint.stats}


def test_a_second_run_transfers_no_unchanged_bytes(
        source: ResourceSyncSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESOURCESYNC_MIRROR_DIR", str(tmp_path / "mirror"))
    assert run_example("mirror_to_local").state == "success"
    source.server.reset_log()
    again = run_example("mirror_to_local")
    assert again.state == "success"
    assert resource_bodies_sent(source) == []
    assert xcom(again, "baseline")["stats"]["unchanged"] == 20
    source.update("item-03.txt", b"item 3, changed\n")
    source.publish()
    source.server.reset_log()
    assert run_example("mirror_to_local").state == "success"
    assert resource_bodies_sent(source) == ["/dataset1/res/item-03.txt"]
    assert_mirrors(source, tmp_path / "mirror")


def test_a_resource_that_keeps_failing_fails_the_task_saying_what_next_and_a_rerun_converges(
        source: ResourceSyncSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_RESOURCESYNC_DEFAULT", json.dumps({
        "conn_type": "resourcesync", "host": source.server.url("/"),
        "extra": {"allow_private": True, "max_tries": 2}}))
    monkeypatch.setenv("RESOURCESYNC_MIRROR_DIR", str(tmp_path / "mirror"))
    broken = "/dataset1/res/item-07.txt"
    source.server.fail(broken, 500, times=1000)
    capfd.readouterr()
    failed = run_example("mirror_to_local")
    assert states(failed) == {"baseline": "failed", "audit": "upstream_failed"}
    assert source.server.url(broken) in first_line(capfd.readouterr().out,
                                                   "Next: re-run this task")
    source.server.clear_faults()
    source.server.reset_log()
    rerun = run_example("mirror_to_local")
    assert states(rerun) == {"baseline": "success", "audit": "success"}
    assert resource_bodies_sent(source) == [broken]
    assert_mirrors(source, tmp_path / "mirror")


def first_line(out: str, starting: str) -> str:
    """The line of ``out`` that starts with ``starting``, which comes before the task's failure."""
    first = out.index(starting)
    assert first < out.index("Task failed with exception")
    return out[first:out.index("\n", first)]


def test_a_resource_refused_for_good_fails_the_task_saying_what_to_change(
        source: ResourceSyncSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    # Issue 12, item 9: running again cannot fetch a URI with credentials in it; the failure
    # says what must change, and does not ask for a re-run.
    monkeypatch.setenv("RESOURCESYNC_MIRROR_DIR", str(tmp_path / "mirror"))
    listed = urlsplit(source.resource_list_url).path
    secret = source.server.url("/dataset1/res/item-01.txt").replace("http://", "http://user@")
    source.server.put(listed, source.server.get_body(listed).replace(
        b"</urlset>", f"<url><loc>{secret}</loc></url></urlset>".encode()), "application/xml")
    capfd.readouterr()
    failed = run_example("mirror_to_local")
    assert states(failed) == {"baseline": "failed", "audit": "upstream_failed"}
    out = capfd.readouterr().out
    line = first_line(out, "Next: change what makes 1 of the failures lasting")
    assert "the Source must fix the document or the URIs it lists" in line and secret in line
    assert "Next: re-run" not in out and "re-run the task" not in out
    assert (tmp_path / "mirror" / KeyMapper().key(source.uri("item-01.txt"))).exists()


def test_mirror_to_s3_mirrors_through_the_aws_connection(
        source: ResourceSyncSource, bucket: str, s3_client: Any,
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RESOURCESYNC_MIRROR_S3_URL", f"s3://{bucket}/mirror/")
    monkeypatch.setenv("RESOURCESYNC_AWS_CONN_ID", AWS_CONN_ID)
    capfd.readouterr()
    run = run_example("mirror_to_s3")
    assert states(run) == {"baseline": "success", "audit": "success"}
    assert error_lines(capfd.readouterr().out) == []
    mapper = KeyMapper()
    for uri, body in source.state().items():
        stored = s3_client.get_object(Bucket=bucket, Key="mirror/" + mapper.key(uri))
        assert stored["Body"].read() == body
    assert xcom(run, "baseline")["destination"] == f"s3://{bucket}/mirror/"
    assert xcom(run, "audit")["clean"] is True
    assert asset_event_uris(run) == [f"s3://{bucket}/mirror"]


def test_the_sharded_baseline_maps_over_shards_combines_and_audits_clean(
        source: ResourceSyncSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    mirror = tmp_path / "sharded"
    monkeypatch.setenv("RESOURCESYNC_SHARDED_DESTINATION", mirror.as_uri())
    capfd.readouterr()
    run = run_example("sharded_baseline")
    assert states(run) == {"baseline[0]": "success", "baseline[1]": "success",
                           "baseline[2]": "success", "combine": "success", "audit": "success"}
    assert error_lines(capfd.readouterr().out) == []
    shards = [Checkpoint.from_json(xcom(run, "baseline", index)) for index in range(3)]
    assert [(shard.shard.index, shard.shard.count) for shard in shards if shard.shard] == [
        (0, 3), (1, 3), (2, 3)]
    assert sum(shard.stats["fetched"] for shard in shards) == 20
    combined = Checkpoint.from_json(xcom(run, "combine"))
    assert (combined.shard, combined.stats["fetched"]) == (None, 20)
    assert xcom(run, "audit")["clean"] is True
    assert_mirrors(source, mirror)
    assert asset_event_uris(run) == [mirror.as_uri()]


def test_a_sharded_baseline_of_an_older_listing_catches_up_in_its_combine_task(
        source: ResourceSyncSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Source's Resource List is older than changes its Change List offers: the shards
    leave those resources out, and the combine task applies the changes (issue 26)."""
    server = source.server
    path = urlsplit(source.resource_list_url).path
    listing = server.get_body(path)
    source.update("item-01.txt", b"item 1, changed and longer\n")
    source.delete("item-02.txt")
    source.create("item-new.txt", b"new\n")
    source.publish()
    server.put(path, listing, "application/xml")
    mirror = tmp_path / "sharded"
    monkeypatch.setenv("RESOURCESYNC_SHARDED_DESTINATION", mirror.as_uri())
    run = run_example("sharded_baseline")
    assert states(run) == {"baseline[0]": "success", "baseline[1]": "success",
                           "baseline[2]": "success", "combine": "success", "audit": "success"}
    assert sum(Checkpoint.from_json(xcom(run, "baseline", index)).stats.get("to_catch_up", 0)
               for index in range(3)) == 3
    assert Checkpoint.from_json(xcom(run, "combine")).stats["changed_after"] == 3
    assert xcom(run, "audit")["clean"] is True
    assert_mirrors(source, mirror)


def test_the_demo_mirrors_its_sample_source_in_a_real_run(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    result = run_demo(tmp_path / "demo", resources=12)
    assert result.succeeded, result.render()
    assert error_lines(capfd.readouterr().out) == []
    assert result.mirrored == 12
    assert result.checkpoint is not None and result.checkpoint["stats"]["fetched"] == 12
    assert result.audit is not None and result.audit["clean"] is True
    assert "12 files mirrored" in result.render()
    assert result.incremental is not None
    assert result.incremental.tasks == HOURLY
    assert [(a.change, a.arrived) for a in result.arrivals] == [
        ("updated", True), ("created", True), ("deleted", True)]
    assert result.incremental.xcoms["sync"]["stats"]["changes"] == 3
    assert "3 of 3 changes arrived in the mirror." in result.render()


@pytest.mark.parametrize("name", ["mirror_to_local", "mirror_to_s3", "incremental_mirror",
                                  "sharded_baseline", "publish_directory", "publish_bucket",
                                  pytest.param("incremental_on_change", marks=event_driven)])
def test_no_example_task_can_run_for_ever(name: str) -> None:
    """Whatever a Source does (a drip, a storm of 429s), every task of an example DAG ends: the
    client's deadlines bound each request and its retry budget each run, and the task's
    ``execution_timeout`` the whole (DESIGN.md, "The wire")."""
    dag = load_example_dag(name)
    timeouts = {task.task_id: task.execution_timeout for task in dag.tasks}
    assert all(timeouts.values()), timeouts
    schedule = dag.schedule if AIRFLOW_3 else dag.schedule_interval  # Airflow 2's name
    if isinstance(schedule, timedelta):  # a task ends before the next run
        assert max(timeouts.values()) < schedule, timeouts
