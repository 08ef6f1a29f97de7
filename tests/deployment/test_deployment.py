"""The provider in a real Airflow deployment (issues 16 and 29): Airflow's own api-server,
scheduler (CeleryExecutor), dag-processor and triggerer as separate processes on SQLite, and two
Celery workers, each with its own HOME and scratch folder, driven through the REST API as a user
drives them, against a loopback Source, into a bucket of moto's S3 server over HTTP.

The sharded baseline's mapped tasks run on both workers, and the combining task makes one mirror
of what they wrote to the bucket. ``dag.test()`` runs triggers inline in the test's process;
here the Change List sensor defers to the triggerer process, which must wake it when the Source
changes, and the checkpoint must chain from one run to the next through the XCom the deployment
stored, whichever worker runs each task. Then the event-driven example,
``incremental_on_change``, is unpaused: the triggerer runs its Asset watcher, and a change at the
Source starts a run with no one triggering it; and again once the triggerer is restarted, for a
change made while it was down (Airflow 3.3, whose Asset state store keeps what the watcher saw),
or only for the next change after the restart (before 3.3).

It runs the Airflow of the interpreter running pytest, and asserts what that release does
(``compat.AIRFLOW_VERSION``); ``run-on.sh`` runs it on the oldest supported Airflow 3.x
(docs/deployment.md, "Tested").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from packaging.version import Version

from airflow_provider_resourcesync import __version__
from airflow_provider_resourcesync.compat import AIRFLOW_VERSION
from airflow_provider_resourcesync.hooks.resourcesync import EXTRA_FIELDS
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.testing import ResourceSyncSource

from .deployment import WORKERS, Deployment

SHARDED = "sharded_baseline"
INCREMENTAL = "incremental_mirror"
ON_CHANGE = "incremental_on_change"
#: The first release whose triggerer gives an Asset watcher a state store (AIP-103).
ASSET_STATE_STORE = Version("3.3")


def test_sharded_baseline_on_two_workers_then_incremental_runs_woken_by_the_triggerer(
        source: ResourceSyncSource, deployment: Deployment, mirror: str, s3_client: Any,
        s3_endpoint: str) -> None:
    # (the Source first: it is stopped after the deployment that reads it)
    deployment.api("POST", "/connections", json={
        "connection_id": "resourcesync_default", "conn_type": "resourcesync",
        "host": source.server.url("/"), "extra": json.dumps({"allow_private": True})})
    _test_button_passes(deployment, source)
    _listed_with_its_form(deployment)
    deployment.api("POST", "/connections", json={
        "connection_id": "aws_default", "conn_type": "aws", "login": "test", "password": "test",
        "extra": json.dumps({"endpoint_url": s3_endpoint, "region_name": "us-east-1"})})
    held = _Mirror(s3_client, mirror, source)

    # the baseline in three shards, run by both workers, each in its own scratch folder; then
    # combined into one mirror, and audited
    deployment.wait_dag(SHARDED)
    deployment.unpause(SHARDED)
    baseline_run = deployment.trigger(SHARDED)
    deployment.wait_run(SHARDED, baseline_run)
    shards = deployment.mapped(SHARDED, baseline_run, "baseline")
    assert [shard["map_index"] for shard in shards] == [0, 1, 2]
    assert {shard["hostname"] for shard in shards} == set(WORKERS)
    assert sum(deployment.xcom(SHARDED, baseline_run, "baseline", index)["stats"]["fetched"]
               for index in range(3)) == 12
    for folder in deployment.workers.values():
        assert list((folder / "tmp").glob("resourcesync-cache.*"))  # its tasks: its TMPDIR
    assert deployment.xcom(SHARDED, baseline_run, "audit")["clean"] is True
    assert held.objects() == held.expected()

    # unpaused, the hourly DAG runs at once (catchup=False): its sensor defers, and the
    # triggerer wakes it once the Source publishes a change
    deployment.wait_dag(INCREMENTAL)
    deployment.unpause(INCREMENTAL)
    first = deployment.wait_for(f"a scheduled run of {INCREMENTAL}",
                                lambda: _only_run(deployment.runs(INCREMENTAL)), timeout=120)
    first_checkpoint = _woken_by_change(deployment, first, source, lambda: (
        source.update("item-01.txt", b"item 1, revised\n"),
        source.create("item-new.txt", b"new item\n")))
    assert first_checkpoint["stats"]["changes"] == 2
    assert held.objects() == held.expected()
    assert held.objects()[held.key("item-new.txt")] == b"new item\n"
    assert "Starting from the mirror's saved checkpoint" in deployment.task_log(
        INCREMENTAL, first, "sync")

    # a second run, triggered through the API, starts where the first run's save left the
    # mirror (its checkpoint, also the first run's XCom)
    second = deployment.trigger(INCREMENTAL)
    second_checkpoint = _woken_by_change(deployment, second, source,
                                         lambda: source.delete("item-02.txt"))
    assert second_checkpoint["stats"]["changes"] == 1  # this change only, not the first run's
    first_position, second_position = first_checkpoint["position"], second_checkpoint["position"]
    assert second_position["list_url"] == first_position["list_url"]
    assert second_position["consumed"] == first_position["consumed"] + 1
    assert held.key("item-02.txt") not in held.objects()
    assert held.objects() == held.expected()
    assert "Starting from the mirror's saved checkpoint" in deployment.task_log(
        INCREMENTAL, second, "sync")

    # an Asset event per run that wrote the mirror, saying what the run did
    events = deployment.api("GET", "/assets/events", params={"order_by": "timestamp"})
    written = [(event["source_dag_id"], event["extra"]) for event in events["asset_events"]
               if event["uri"] == mirror.rstrip("/")]
    assert [(dag, extra["kind"]) for dag, extra in written] == [
        (SHARDED, "baseline"), (INCREMENTAL, "incremental"),
        (INCREMENTAL, "incremental")]
    assert written[-1][1]["position"] == second_checkpoint["position"]

    # the event-driven DAG runs on its own when the Source changes, from the mirror's checkpoint
    deployment.pause(INCREMENTAL)
    on_change = _run_on_change(deployment, source, lambda: source.update(
        "item-03.txt", b"item 3, revised\n"))
    assert on_change["stats"]["changes"] == 1
    assert on_change["position"]["consumed"] == second_position["consumed"] + 1
    assert held.objects()[held.key("item-03.txt")] == b"item 3, revised\n"
    assert held.objects() == held.expected()

    # the triggerer restarted, with a change made while it was down: on Airflow 3.3 the watcher
    # kept what it saw in its Asset's state store, and that change starts a run at the restarted
    # trigger's first poll; before 3.3 it kept it in memory only, so its first poll records what
    # the Source says then, the change starts nothing, and the next change's run brings both
    [before] = deployment.runs(ON_CHANGE)
    change_list = urlsplit(source.change_list_url).path
    source.server.reset_log()
    deployment.restart("triggerer", lambda: (
        source.update("item-04.txt", b"item 4, revised\n"), source.publish()))
    kept = AIRFLOW_VERSION >= ASSET_STATE_STORE
    if not kept:
        deployment.wait_for(
            "the restarted triggerer's watcher polling the Change List (six answers 304)",
            lambda: True if source.server.count(change_list, status=304) >= 6 else None,
            timeout=180)
        assert [run["dag_run_id"] for run in deployment.runs(ON_CHANGE)] == [
            before["dag_run_id"]]
        source.update("item-05.txt", b"item 5, revised\n")
        source.publish()
    after_restart = deployment.wait_for(
        f"a run of {ON_CHANGE} started by a change "
        + ("made while the triggerer was down" if kept else "made after the restart"),
        lambda: _only_run([run for run in deployment.runs(ON_CHANGE)
                           if run["dag_run_id"] != before["dag_run_id"]]), timeout=180)
    deployment.wait_run(ON_CHANGE, after_restart)
    assert deployment.xcom(ON_CHANGE, after_restart, "sync")["stats"]["changes"] == (
        1 if kept else 2)
    assert held.objects()[held.key("item-04.txt")] == b"item 4, revised\n"
    assert held.objects() == held.expected()


class _Mirror:
    """The mirror in the bucket, beside what it must hold: the Source's resources, each under the
    key the provider maps its URI to (its own state under ``.resourcesync/`` left out)."""

    def __init__(self, s3_client: Any, url: str, source: ResourceSyncSource) -> None:
        self.s3_client = s3_client
        parts = urlsplit(url)
        self.bucket, self.prefix = parts.netloc, parts.path.lstrip("/")
        self.source = source
        self.keys = KeyMapper()

    def key(self, name: str) -> str:
        return self.prefix + self.keys.key(self.source.uri(name))

    def expected(self) -> dict[str, bytes]:
        return {self.prefix + self.keys.key(uri): body
                for uri, body in self.source.state().items()}

    def objects(self) -> dict[str, bytes]:
        pages = self.s3_client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix)
        keys = [item["Key"] for page in pages for item in page.get("Contents", ())
                if not item["Key"].startswith(self.prefix + ".resourcesync/")]
        return {key: self.s3_client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
                for key in keys}


def _test_button_passes(deployment: Deployment, source: ResourceSyncSource) -> None:
    """Issue 29: the Test button of Airflow 3.3's connection list posts the connection as listed,
    blanks as "" and the port as a number, 0 where none is stored; Airflow answers that with
    Bad Request unless it is the stored port. A connection saved from the form with the base
    URL's port passes the button's exact request. (Airflow 3.0's UI has no Test button; its
    endpoint tests the body as posted, and passes this one too.)"""
    url = source.server.url("/")
    deployment.api("POST", "/connections", json={
        "connection_id": "resourcesync_form", "conn_type": "resourcesync", "host": url,
        "port": urlsplit(url).port, "extra": json.dumps({"allow_private": True})})
    listed = deployment.api("GET", "/connections/resourcesync_form")
    pressed = {name: listed[name] or "" for name in (
        "conn_type", "connection_id", "description", "host", "login", "password", "schema")}
    tested = deployment.api("POST", "/connections/test", json=pressed | {
        "extra": listed["extra"] or "{}", "port": listed["port"] or 0})
    assert tested["status"] is True, tested["message"]
    assert f"a baseline would read {source.resource_list_url}" in tested["message"]


def _listed_with_its_form(deployment: Deployment) -> None:
    """The api-server lists the provider at its version (the Providers page), and has the
    connection form of the ``resourcesync`` type, with the provider's labels and extra fields:
    from Airflow 3.2 read from the provider info; before, from the hook's methods (wtforms
    fields, hooks/form.py), which Airflow reads where the FAB provider is installed (as the
    deployment's environment has it)."""
    providers = deployment.api("GET", "/providers", params={"limit": 1000})["providers"]
    assert {provider["package_name"]: provider["version"] for provider in providers}[
        "airflow-provider-resourcesync"] == __version__
    meta = deployment.client.get(f"{deployment.url}/ui/connections/hook_meta")
    assert meta.status_code == 200, meta.text
    [form] = [hook for hook in meta.json() if hook["connection_type"] == "resourcesync"]
    assert form["standard_fields"]["host"]["title"] == "Base URL"
    assert form["standard_fields"]["url_schema"]["hidden"] is True
    assert set(form["extra_fields"]) == EXTRA_FIELDS


def _only_run(runs: list[dict[str, Any]]) -> str | None:
    return str(runs[0]["dag_run_id"]) if len(runs) == 1 else None


def _run_on_change(deployment: Deployment, source: ResourceSyncSource,
                   change: Callable[[], object]) -> dict[str, Any]:
    """Unpause ``incremental_on_change`` and have it parsed again (its watcher's trigger is
    registered only for an unpaused DAG, when the DAG is parsed); once the trigger in the
    triggerer has polled the Change List twice (the first poll only records what it says),
    make ``change`` at the Source and publish it; the run the Asset event starts must succeed.
    Its sync's checkpoint (its XCom)."""
    deployment.wait_dag(ON_CHANGE)
    change_list = urlsplit(source.change_list_url).path
    source.server.reset_log()
    deployment.unpause(ON_CHANGE)
    deployment.reparse(ON_CHANGE)
    deployment.wait_for(
        "the triggerer polling the Change List for the Asset watcher (two answers 304)",
        lambda: True if source.server.count(change_list, status=304) >= 2 else None,
        timeout=180)
    assert deployment.runs(ON_CHANGE) == []  # nothing runs it but a change
    change()
    source.publish()
    run_id = deployment.wait_for(f"a run of {ON_CHANGE} started by the Asset event",
                                 lambda: _only_run(deployment.runs(ON_CHANGE)), timeout=120)
    assert deployment.api("GET", f"/dags/{ON_CHANGE}/dagRuns/{run_id}")["run_type"] == (
        "asset_triggered")
    deployment.wait_run(ON_CHANGE, run_id)
    assert "Starting from the mirror's saved checkpoint" in deployment.task_log(
        ON_CHANGE, run_id, "sync")
    return dict(deployment.xcom(ON_CHANGE, run_id, "sync"))


def _woken_by_change(deployment: Deployment, run_id: str, source: ResourceSyncSource,
                     change: Callable[[], object]) -> dict[str, Any]:
    """Wait until the run's sensor is deferred to the triggerer, then make ``change`` at the
    Source and publish it; once the run succeeded, the sync's checkpoint (its XCom)."""
    deployment.wait_deferred(INCREMENTAL, run_id, "changes")
    change()
    source.publish()
    deployment.wait_run(INCREMENTAL, run_id)
    return dict(deployment.xcom(INCREMENTAL, run_id, "sync"))
