"""OpenLineage in real DAG runs (issue 15, item 6; issue 16): with the openlineage provider and
a file transport, the publisher reports the directory it published as input and its publication
as output, the same at START and COMPLETE (issue 28, item 7), with what it wrote counted; a
baseline the Source's Capability List as input and the mirror as output; an audit both as
inputs (it reads them), the mirror with what held as data quality assertions, and no output
(it repaired nothing); one dataset per place, never one per resource."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_resourcesync.lineage import dataset_name
from airflow_provider_resourcesync.operators.audit import (
    MirrorMismatchError,
    ResourceSyncAuditOperator,
)
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.testing import ResourceSyncSource

from .test_operators import mirror_of

ROOT = Path(__file__).parents[2]


def test_datasets_are_named_as_openlineage_names_them() -> None:
    assert dataset_name("s3://bucket/mirror/") == ("s3://bucket", "mirror")
    assert dataset_name("s3://bucket/") == ("s3://bucket", "/")
    assert dataset_name("/data/mirror/") == ("file", "/data/mirror")
    assert dataset_name("file:///data/m%20x") == ("file", "/data/m x")
    assert dataset_name("https://user@example.org:8443/rs/capabilitylist.xml") == (
        "https://example.org:8443", "/rs/capabilitylist.xml")


def test_the_publisher_a_baseline_and_an_audit_report_what_they_read_and_wrote(
        tmp_path: Path) -> None:
    child = subprocess.run([sys.executable, str(ROOT / "tests/airflow/lineage_child.py"),
                            str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                           timeout=600)
    assert child.returncode == 0, child.stderr[-3000:]
    assert json.loads(child.stdout.strip().splitlines()[-1]) == ["success", "success"]
    completed, checked, started, written, counted = {}, {}, {}, {}, {}
    for line in (tmp_path / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["eventType"] == "START" and "." in event["job"]["name"]:
            started[event["job"]["name"]] = (
                [(item["namespace"], item["name"]) for item in event["inputs"]],
                [(item["namespace"], item["name"]) for item in event["outputs"]])
        if event["eventType"] == "COMPLETE" and "." in event["job"]["name"]:
            written[event["job"]["name"]] = [item.get("outputFacets", {}).get(
                "outputStatistics") for item in event["outputs"]]
            counted[event["job"]["name"]] = event["run"]["facets"].get(
                "resourcesync_counts", {}).get("counts")
            completed[event["job"]["name"]] = (
                [(item["namespace"], item["name"]) for item in event["inputs"]],
                [(item["namespace"], item["name"]) for item in event["outputs"]])
            checked[event["job"]["name"]] = {
                item["name"]: {found["assertion"]: found["success"] for found in item.get(
                    "inputFacets", {}).get("dataQualityAssertions", {}).get("assertions", [])}
                for item in event["inputs"]}
    assert completed["publish_directory.publish"] == started["publish_directory.publish"] == (
        [("file", str(tmp_path / "collection"))], [("file", str(tmp_path / "published"))])
    [statistics] = written["publish_directory.publish"]  # the first run: one object, listed
    assert (statistics["rowCount"], statistics["size"], statistics["fileCount"]) == (1, 0, 0)
    assert counted["publish_directory.publish"] == {
        "changes": 1, "created": 1, "updated": 0, "deleted": 0, "skipped": 0, "left": 0,
        "bytes": 2, "packages": 0}
    (source,), mirror = completed["mirror_to_local.baseline"]
    assert source[0].startswith("http://127.0.0.1:") and source[1] == (
        "/published/capabilitylist.xml")
    assert mirror == [("file", str(tmp_path / "mirror"))]
    assert completed["mirror_to_local.audit"] == ([source, mirror[0]], [])
    assert checked["mirror_to_local.audit"] == {source[1]: {}, str(tmp_path / "mirror"): {
        "no_missing_resources": True, "no_extra_resources": True,
        "no_mismatched_resources": True}}


def test_an_audit_reports_what_failed_and_its_repairs_as_an_output(
        source: ResourceSyncSource, tmp_path: Path) -> None:
    mirror_of(source, tmp_path)
    (tmp_path / KeyMapper().key(source.uri("item-05.txt"))).unlink()
    audit = ResourceSyncAuditOperator(task_id="a", destination=str(tmp_path))
    with pytest.raises(MirrorMismatchError):
        audit.execute({})
    failed = audit.get_openlineage_facets_on_complete(None)  # on failure, the same facets
    (listed, mirror), outputs = failed.inputs, failed.outputs
    assert (listed.name, mirror.namespace, mirror.name, outputs) == (
        "/dataset1/capabilitylist.xml", "file", str(tmp_path), [])
    assert {(found.assertion, found.success) for found in mirror.inputFacets[
        "dataQualityAssertions"].assertions} == {
        ("no_missing_resources", False), ("no_extra_resources", True),
        ("no_mismatched_resources", True)}
    repair = ResourceSyncAuditOperator(task_id="r", destination=str(tmp_path),
                                       on_mismatch="repair")
    repair.execute({})
    assert [(output.namespace, output.name) for output in
            repair.get_openlineage_facets_on_complete(None).outputs] == [("file", str(tmp_path))]
