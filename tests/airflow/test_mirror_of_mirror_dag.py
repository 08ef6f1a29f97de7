"""A Destination of the mirror follows it across its compactions (spec 14.8; issue 14), in real
``dag.test()`` runs: mirror A follows a loopback Source with the incremental operator, A's
directory is served over HTTP under its public URL, and mirror B follows A with the same
operator. A runs twice before B looks, the second time past a tenth of A changed, so A rewrites
its Resource List; B, two lists behind, still goes on from its checkpoint, never baselining, and
again after a run of A past the compaction."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from airflow.sdk import task

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.operators.incremental import ResourceSyncIncrementalOperator
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.writer import CAPABILITY_LIST, RESOURCE_LIST, ShardIndex

from ..sync.conftest import held
from ..sync.test_republish import as_published, publish
from .runs import run_dag, states, xcom


def snapshot_at(mirror: LocalDestination) -> datetime | None:
    """When A's Resource List was last written (its ``at``)."""
    head = read_document(mirror.read_bytes(RESOURCE_LIST) or b"").head
    return head.md.at if head.md is not None else None


def test_a_mirror_of_the_mirror_follows_it_across_a_compaction(
        source: ResourceSyncSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    upstream = LocalDestination(tmp_path / "mirror")
    downstream = LocalDestination(tmp_path / "mirror-of-the-mirror")
    with SourceServer(max_lifetime=300) as web:
        base = web.url("/mirror/")
        capability_list = base + quote(CAPABILITY_LIST)
        served: set[str] = set()
        policy = ClientPolicy(allow_private=True)
        with ResourceSyncClient(policy, source_urls=[source.server.base_url]) as client:
            run_baseline(client, upstream, capability_list_url=source.capability_list_url,
                         public_url=base)
        served = publish(upstream, web, "/mirror/", served)
        with ResourceSyncClient(policy, source_urls=[web.base_url]) as client:
            run_baseline(client, downstream, capability_list_url=capability_list)
        monkeypatch.setenv("AIRFLOW_CONN_RESOURCESYNC_MIRROR", json.dumps({
            "conn_type": "resourcesync", "host": base, "extra": {"allow_private": True}}))

        def a_then_b(follow: bool) -> None:
            """A follows the Source and is published; then, if ``follow``, B follows A."""

            @task
            def publish_a() -> None:
                nonlocal served
                served = publish(upstream, web, "/mirror/", served)

            published = ResourceSyncIncrementalOperator(
                task_id="a", destination=str(upstream.root)) >> publish_a()
            if follow:
                published >> ResourceSyncIncrementalOperator(
                    task_id="b", destination=str(downstream.root),
                    resourcesync_conn_id="resourcesync_mirror",
                    capability_list_url=capability_list)

        def a_run(changes: list[tuple[Any, ...]], *, follow: bool, compacts: bool) -> Any:
            """``changes`` at the Source, then a run of A (and of B if ``follow``): A rewrites
            its Resource List and empties its index's delta if and only if ``compacts``."""
            written = snapshot_at(upstream)
            for change, *arguments in changes:
                change(*arguments)
            source.publish()
            web.reset_log()
            run = run_dag(f"mirror{'_and_its_mirror' if follow else ''}",
                          lambda: a_then_b(follow))
            assert states(run) == {"a": "success", "publish_a": "success"} | (
                {"b": "success"} if follow else {})
            assert held(upstream) == source.state()
            index = ShardIndex.open(upstream, RESERVED_PREFIX + "index/")
            assert (snapshot_at(upstream) != written, index.delta_records == 0) == (
                compacts, compacts)
            return run

        made, gone, new = source.update, source.delete, source.create
        # B is two runs of A behind when A compacts (past a tenth of its 20 objects); then one
        a_run([(made, "item-01.txt", b"one, changed\n")], follow=False, compacts=False)
        rounds = [
            (True, [(made, "item-02.txt", b"two, changed\n"), (gone, "item-03.txt"),
                    (made, "item-04.txt", b"four, changed\n"), (new, "new-1.txt", b"new\n"),
                    (new, "new-2.txt", b"newer\n"), (gone, "item-01.txt")], 7),  # both lists
            (False, [(made, "item-05.txt", b"five, changed\n"),
                     (made, "new-1.txt", b"new, changed\n")], 2),
        ]
        for number, (compacts, changes, changed) in enumerate(rounds):
            run = a_run(changes, follow=True, compacts=compacts)
            followed = Checkpoint.from_json(xcom(run, "b"))
            assert (followed.kind, followed.stats["changes"]) == ("incremental", changed), number
            assert held(downstream) == as_published(source.state(), base), number
            # B went on from its checkpoint by A's Change Lists, not from A's Resource List
            assert web.count("/mirror/" + quote(RESOURCE_LIST)) == 0, number
