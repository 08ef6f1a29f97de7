"""The operators' arguments, outlets and failure modes, with ``execute`` called directly against a
loopback Source (the example DAGs' tests run them in real DAG runs)."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import airflow
import jsonschema
import pytest
from airflow.sdk import Asset

from airflow_provider_resourcesync.errors import (
    ConfigurationError,
    ContentMismatchError,
    DestinationError,
    DocumentError,
    FetchError,
    ResourceSyncError,
    SyncIncompleteError,
    UnsafeContentError,
)
from airflow_provider_resourcesync.get_provider_info import get_provider_info
from airflow_provider_resourcesync.hooks.resourcesync import ResourceSyncHook
from airflow_provider_resourcesync.operators.audit import (
    MirrorMismatchError,
    ResourceSyncAuditOperator,
)
from airflow_provider_resourcesync.operators.baseline import (
    ResourceSyncBaselineOperator,
    ResourceSyncCombineShardsOperator,
)
from airflow_provider_resourcesync.operators.incremental import ResourceSyncIncrementalOperator
from airflow_provider_resourcesync.operators.publish import ResourceSyncPublishOperator
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.sensors.changelist import ResourceSyncChangeListSensor
from airflow_provider_resourcesync.shell.next_step import next_step
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.shard import Shard
from airflow_provider_resourcesync.testing import ResourceSyncSource
from airflow_provider_resourcesync.writer import (
    CAPABILITY_LIST,
    CHANGE_LIST_INDEX,
    RESOURCE_LIST,
)

from .runs import run_dag, states


def test_the_provider_info_follows_airflows_schema_and_names_the_operator_modules() -> None:
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    [operators] = info["operators"]
    assert operators["python-modules"] == [ResourceSyncBaselineOperator.__module__,
                                           ResourceSyncIncrementalOperator.__module__,
                                           ResourceSyncAuditOperator.__module__,
                                           ResourceSyncPublishOperator.__module__]
    [sensors], [triggers] = info["sensors"], info["triggers"]
    for module in (*operators["python-modules"], *sensors["python-modules"],
                   *triggers["python-modules"]):
        importlib.import_module(module)


def test_a_static_destination_is_the_outlet_asset() -> None:
    baseline = ResourceSyncBaselineOperator(task_id="b", destination="/data/mirror/")
    combine = ResourceSyncCombineShardsOperator(task_id="c", destination="s3://bucket/mirror/",
                                                checkpoints=[])
    assert baseline.outlets == [Asset("file:///data/mirror")]
    assert combine.outlets == [Asset("s3://bucket/mirror")]


def test_no_asset_for_a_templated_destination_nor_for_a_shard() -> None:
    templated = ResourceSyncBaselineOperator(task_id="b", destination="{{ params.mirror }}")
    shard = ResourceSyncBaselineOperator(task_id="s", destination="/data/mirror", shard_index=0,
                                         shard_count=2)
    assert templated.outlets == shard.outlets == []
    assert set(ResourceSyncBaselineOperator.template_fields) == {
        "destination", "capability_list_url", "key_prefixes", "shard_index", "public_url",
        "resourcesync_conn_id", "aws_conn_id", "processes"}


@pytest.mark.parametrize("make", [
    lambda: ResourceSyncBaselineOperator(task_id="b", destination="mirror"),
    lambda: ResourceSyncBaselineOperator(task_id="b", destination="/m", method="changelist"),
    lambda: ResourceSyncBaselineOperator(task_id="b", destination="/m", key_layout="pretty"),
    lambda: ResourceSyncAuditOperator(task_id="a", destination="/m", on_mismatch="ignore"),
    lambda: ResourceSyncIncrementalOperator(task_id="i", destination="/m",
                                            resource_list_max_age=3600),
    lambda: ResourceSyncPublishOperator(task_id="p", source="/s", publish_to="/p",
                                        base_url="https://h/", resource_list_max_age=-1),
    lambda: ResourceSyncPublishOperator(task_id="p", source="/s", publish_to="/p",
                                        base_url="https://h/", keep_changes_for="30 days"),
    lambda: ResourceSyncPublishOperator(task_id="p", source="/s", publish_to="/p",
                                        base_url="https://h/",
                                        keep_changes_for=timedelta(days=-1)),
    lambda: ResourceSyncPublishOperator(task_id="p", source="/s", publish_to="/p",
                                        base_url="https://h/", max_skipped_share=5),
    lambda: ResourceSyncPublishOperator(task_id="p", source="/s", publish_to="/p",
                                        base_url="https://h/", hashes=("sha1",)),
    lambda: ResourceSyncPublishOperator(task_id="p", source="/s", publish_to="/p",
                                        base_url="https://h/", documents_max_age=300),
])
def test_wrong_arguments_fail_when_the_dag_is_parsed(make: Callable[[], object]) -> None:
    with pytest.raises(ConfigurationError):
        make()


def test_a_shard_index_needs_a_shard_count(tmp_path: Path) -> None:
    operator = ResourceSyncBaselineOperator(task_id="b", destination=str(tmp_path),
                                            shard_index=1)
    with pytest.raises(ConfigurationError, match="give both"):
        operator.execute({})


def mirror_of(source: ResourceSyncSource, root: Path, shard: Shard | None = None
              ) -> dict[str, Any]:
    hook = ResourceSyncHook()
    try:
        return run_baseline(hook.get_conn(), LocalDestination(root), shard=shard,
                            capability_list_url=source.capability_list_url).to_json()
    finally:
        hook.close()


@pytest.mark.parametrize("render", [lambda value: value, json.dumps], ids=["native", "tojson"])
def test_combine_reads_checkpoints_given_natively_or_as_json(
        render: Callable[[object], str], source: ResourceSyncSource, tmp_path: Path) -> None:
    shards = [mirror_of(source, tmp_path, Shard(index, 3)) for index in range(3)]
    combine = ResourceSyncCombineShardsOperator(task_id="c", destination=str(tmp_path),
                                                checkpoints=render(shards))
    combined = combine.execute({})
    assert (combined["shard"], combined["stats"]["fetched"]) == (None, 20)


@pytest.mark.parametrize("text", ["{{ not rendered", "[{'version': 1}]"],
                         ids=["unrendered", "python-repr"])
def test_combine_refuses_text_that_is_not_json_saying_how_to_pass_checkpoints(
        text: str, tmp_path: Path) -> None:
    """A template rendering a list of dicts without ``| tojson`` gives Python's repr: refused
    (no ``literal_eval``), with the ways to pass it."""
    combine = ResourceSyncCombineShardsOperator(task_id="c", destination=str(tmp_path),
                                                checkpoints=text)
    with pytest.raises(ConfigurationError, match=r"checkpoints: not JSON.*XComArg.*tojson"):
        combine.execute({})


def test_a_public_url_names_the_mirrors_resources_and_later_runs_keep_it(
        source: ResourceSyncSource, tmp_path: Path) -> None:
    base = "https://mirror.example.net/data/"
    baseline = ResourceSyncBaselineOperator(task_id="b", destination=str(tmp_path),
                                            public_url=base)
    assert "public_url" in ResourceSyncIncrementalOperator.template_fields
    checkpoint = baseline.execute({})
    source.update("item-01.txt", b"changed\n")
    source.publish()
    ResourceSyncIncrementalOperator(task_id="i", destination=str(tmp_path),
                                    checkpoint=checkpoint).execute({})
    mirror = LocalDestination(tmp_path)
    for key in (RESOURCE_LIST, CHANGE_LIST_INDEX, CAPABILITY_LIST):
        document = read_document(mirror.read_bytes(key) or b"")
        assert document.entries and all(entry.loc.startswith(base) for entry in document), key


def test_the_baseline_chooses_a_new_mirrors_key_layout_and_keeps_it(
        source: ResourceSyncSource, tmp_path: Path) -> None:
    ResourceSyncBaselineOperator(task_id="b", destination=str(tmp_path),
                                 key_layout="escaped").execute({})
    assert (tmp_path / ".resourcesync/layout.json").read_text() == '{"key_layout": "escaped"}'
    again = ResourceSyncBaselineOperator(task_id="b", destination=str(tmp_path),
                                         key_layout="readable")
    with pytest.raises(ConfigurationError, match="keeps its keys in the 'escaped' layout"):
        again.execute({})


@pytest.fixture
def damaged(source: ResourceSyncSource, tmp_path: Path) -> tuple[Path, str]:
    """A mirror of the Source with one resource deleted behind its back: (root, its URI)."""
    mirror_of(source, tmp_path)
    uri = source.uri("item-05.txt")
    (tmp_path / KeyMapper().key(uri)).unlink()
    return tmp_path, uri


def test_the_audit_fails_with_counts_and_examples(damaged: tuple[Path, str]) -> None:
    root, uri = damaged
    audit = ResourceSyncAuditOperator(task_id="a", destination=str(root))
    with pytest.raises(MirrorMismatchError, match="1 missing") as raised:
        audit.execute({})
    assert f"missing: {uri}" in str(raised.value)


def test_the_audit_warns_and_reports(damaged: tuple[Path, str]) -> None:
    root, uri = damaged
    report = ResourceSyncAuditOperator(task_id="a", destination=str(root),
                                       on_mismatch="warn").execute({})
    assert (report["clean"], report["missing"], report["examples"]["missing"]) == (
        False, 1, [uri])


def test_the_audit_repairs(damaged: tuple[Path, str], source: ResourceSyncSource) -> None:
    root, uri = damaged
    report = ResourceSyncAuditOperator(task_id="a", destination=str(root),
                                       on_mismatch="repair").execute({})
    assert (report["clean"], report["repaired"]) == (True, 1)
    assert (root / KeyMapper().key(uri)).read_bytes() == source.state()[uri]


@pytest.mark.parametrize(("error", "step"), [
    (SyncIncompleteError("incomplete", failures=[], failed=1), "re-run this task"),
    (ConfigurationError("host: empty"), "fix the connection field or the argument"),
    (FetchError("gone", url="https://example.org/x", status=503), "reachable"),
    (ContentMismatchError(url="https://example.org/x", what="md5", expected="a", actual="b"),
     "unlike its own description"),
    (UnsafeContentError("a DTD", rule="no DTDs"), "safety rule"),
    (DocumentError("not XML", url="https://example.org/list.xml"),
     "the Source must fix the document"),
    (DestinationError("read-only file system"), "check the destination"),
])
def test_each_failure_says_what_to_do_next(error: ResourceSyncError, step: str) -> None:
    assert step in next_step(error)


def test_connection_ids_are_templated(source: ResourceSyncSource, tmp_path: Path) -> None:
    """As the amazon and http providers' are (issue 16): rendered before the task runs."""
    root = tmp_path / "mirror"
    run = run_dag("templated_conn_ids", lambda: [
        ResourceSyncBaselineOperator(
            task_id="baseline", destination=str(root),
            resourcesync_conn_id='{{ "resourcesync_" ~ "default" }}',
            aws_conn_id='{{ "aws_" ~ "default" }}'),
    ])
    assert states(run) == {"baseline": "success"}
    assert len(list(LocalDestination(root).keys())) == len(source.state())
    for kind in (ResourceSyncBaselineOperator, ResourceSyncIncrementalOperator,
                 ResourceSyncAuditOperator, ResourceSyncChangeListSensor):
        assert {"resourcesync_conn_id", "aws_conn_id"} <= set(kind.template_fields)
