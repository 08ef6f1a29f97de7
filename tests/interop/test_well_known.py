"""The mirror's Source Description at ``.well-known/resourcesync`` (spec 6.3.2), when asked
(``well_known``): resync finds the mirror from its URL alone, the mirror's own runs keep it, and
no resource can take its place."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import ConfigurationError
from airflow_provider_resourcesync.operators.audit import ResourceSyncAuditOperator
from airflow_provider_resourcesync.operators.baseline import (
    ResourceSyncBaselineOperator,
    ResourceSyncCombineShardsOperator,
)
from airflow_provider_resourcesync.operators.incremental import ResourceSyncIncrementalOperator
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.audit import run_audit
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.shard import Shard
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.writer import (
    DESCRIPTION,
    WELL_KNOWN,
    publish_well_known,
)

from ..sync.conftest import client_for
from ..sync.test_republish import publish
from .resync import Resync
from .test_resync_follows_our_mirror import files_under, mirror_files

RESOURCES = {f"item-{number:02d}.txt": f"item {number}\n".encode() for number in range(5)}


@pytest.fixture
def source(server: SourceServer, monkeypatch: pytest.MonkeyPatch) -> ResourceSyncSource:
    """Our loopback Source, and ``resourcesync_default`` pointing at it."""
    published = ResourceSyncSource(server, resources=RESOURCES)
    published.publish()
    monkeypatch.setenv("AIRFLOW_CONN_RESOURCESYNC_DEFAULT", json.dumps({
        "conn_type": "resourcesync", "host": server.url("/"), "extra": {"allow_private": True}}))
    return published


@pytest.fixture
def web() -> Iterator[SourceServer]:
    """The web server the mirror is published on, at the root of its host."""
    with SourceServer(max_lifetime=120) as running:
        yield running


def baseline(source: ResourceSyncSource, root: Path, **options: Any) -> dict[str, Any]:
    return ResourceSyncBaselineOperator(  # type: ignore[no-any-return]
        task_id="b", destination=str(root), capability_list_url=source.capability_list_url,
        **options).execute({})


def test_resync_finds_the_mirror_from_its_url_alone(
        source: ResourceSyncSource, web: SourceServer, resync: Resync, tmp_path: Path) -> None:
    root = tmp_path / "mirror"
    baseline(source, root, public_url=web.url("/"), well_known=True)
    mirror = LocalDestination(root)
    assert mirror.read_bytes(WELL_KNOWN) == mirror.read_bytes(DESCRIPTION)
    publish(mirror, web, "/", set())
    into = tmp_path / "resync"
    into.mkdir()

    resync.run("resync-sync", "--baseline", f"{web.url('/')}={into}", cwd=tmp_path)

    assert files_under(into) == mirror_files(mirror) and len(files_under(into)) == len(RESOURCES)
    assert web.count("/.well-known/resourcesync") >= 1


def test_the_incremental_run_keeps_it_and_the_audit_leaves_it(
        source: ResourceSyncSource, tmp_path: Path) -> None:
    root = tmp_path / "mirror"
    checkpoint = baseline(source, root, public_url="https://mirror.example.net/")
    mirror = LocalDestination(root)
    assert mirror.read_bytes(WELL_KNOWN) is None  # off unless asked
    source.update("item-01.txt", b"changed\n")
    source.publish()
    ResourceSyncIncrementalOperator(
        task_id="i", destination=str(root), capability_list_url=source.capability_list_url,
        checkpoint=checkpoint, well_known=True).execute({})
    assert mirror.read_bytes(WELL_KNOWN) == mirror.read_bytes(DESCRIPTION)
    assert b"https://mirror.example.net/.resourcesync/capabilitylist.xml" in (
        mirror.read_bytes(WELL_KNOWN) or b"")

    report = ResourceSyncAuditOperator(
        task_id="a", destination=str(root), capability_list_url=source.capability_list_url,
        on_mismatch="repair").execute({})
    assert (report["clean"], report["extra"]) == (True, 0)
    assert mirror.read_bytes(WELL_KNOWN) == mirror.read_bytes(DESCRIPTION)
    with client_for(source.server) as client:  # the engine itself, not only the operator
        assert run_audit(client, mirror, capability_list_url=source.capability_list_url).clean


def test_the_combining_task_of_a_sharded_baseline_writes_it(
        client: ResourceSyncClient, source: ResourceSyncSource, tmp_path: Path) -> None:
    mirror = LocalDestination(tmp_path / "mirror")
    shards = [run_baseline(client, mirror, capability_list_url=source.capability_list_url,
                           shard=Shard(index, 2)).to_json() for index in range(2)]
    assert mirror.read_bytes(WELL_KNOWN) is None
    ResourceSyncCombineShardsOperator(task_id="c", destination=str(mirror.root),
                                      checkpoints=shards, well_known=True).execute({})
    assert mirror.read_bytes(WELL_KNOWN) == mirror.read_bytes(DESCRIPTION) is not None


@pytest.mark.parametrize("key_prefix", [".well-known/", ".well-known/resourcesync/old/"])
def test_key_prefixes_that_could_map_a_resource_there_are_refused(
        source: ResourceSyncSource, tmp_path: Path, key_prefix: str) -> None:
    with pytest.raises(ConfigurationError, match="well_known") as raised:
        baseline(source, tmp_path / "mirror", well_known=True,
                 key_prefixes={source.uri(""): key_prefix})
    assert key_prefix in str(raised.value) and not raised.value.rerun_helps
    assert not (tmp_path / "mirror").exists()  # refused before anything was written


def test_a_resource_stored_there_is_not_replaced(
        client: ResourceSyncClient, destination: Destination, server: SourceServer) -> None:
    source = ResourceSyncSource(server, resources={"resourcesync": b"a resource\n"})
    source.publish()
    run_baseline(client, destination, capability_list_url=source.capability_list_url,
                 mapper=KeyMapper({source.uri(""): ".well-known/"}))

    with pytest.raises(ConfigurationError, match="holds the resource") as raised:
        publish_well_known(destination)

    assert source.uri("resourcesync") in str(raised.value)
    assert destination.read_bytes(WELL_KNOWN) == b"a resource\n"


def test_a_mirror_with_nothing_saved_gets_none(destination: Destination) -> None:
    assert publish_well_known(destination) is False
    assert destination.read_bytes(WELL_KNOWN) is None
