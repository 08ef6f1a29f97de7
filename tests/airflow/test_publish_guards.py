"""The publishing task's guards (issue 27, items 2 and 3): its inventory is the source
bucket's own (a report of another bucket, side by side with the source's in a shared inventory
bucket, is refused through the AWS connection, against moto's S3 server over HTTP), and a run
that would delete more than ``max_deletions`` fails, unless a run is let to (real
``dag.test()`` runs)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.errors import ConfigurationError, InventoryError
from airflow_provider_resourcesync.hooks.inventory import inventory_of
from airflow_provider_resourcesync.operators.publish import ResourceSyncPublishOperator
from airflow_provider_resourcesync.publish.inventory import InventoryObject, Skipped
from tests.publish.reports import CREATED, s3_put, write_report
from tests.publish.test_publish_run import write

from .conftest import AWS_CONN_ID
from .runs import run_dag, states, xcom


def test_a_report_of_another_bucket_is_refused_naming_both(s3_client: Any, bucket: str) -> None:
    source, other, inventory = f"{bucket}-src", f"{bucket}-other", f"{bucket}-inv"
    for name in (source, other, inventory):
        s3_client.create_bucket(Bucket=name)
    objects = [InventoryObject(f"data/{number}", 1, "e", CREATED) for number in range(20)]
    for name in (source, other):
        write_report(s3_put(s3_client, inventory), [objects], bucket=name,
                     manifest_key=f"{name}/daily/2026-11-25T01-00Z/manifest.json")
    mine = f"s3://{inventory}/{source}/daily/2026-11-25T01-00Z/manifest.json"
    listed = inventory_of(f"s3://{source}/", mine, f"s3://{bucket}/pub/", aws_conn_id=AWS_CONN_ID,
                          skipped=Skipped())
    assert len(list(listed.objects)) == 20
    theirs = mine.replace(f"/{source}/", f"/{other}/")
    with pytest.raises(InventoryError) as caught:
        inventory_of(f"s3://{source}/", theirs, f"s3://{bucket}/pub/", aws_conn_id=AWS_CONN_ID,
                     skipped=Skipped())
    assert f"s3://{inventory}/{other}/daily/" in str(caught.value)
    assert f"of bucket {other!r} (its sourceBucket), not {source!r}" in str(caught.value)


def test_max_deletions_out_of_range_fails_when_the_dag_is_parsed() -> None:
    with pytest.raises(ConfigurationError, match="max_deletions: '2' is not a share"):
        ResourceSyncPublishOperator(task_id="p", source="/s", publish_to="/p",
                                    base_url="https://h/", max_deletions=2)


def test_a_run_deleting_every_object_fails_and_a_one_off_run_allows_it(tmp_path: Path) -> None:
    """Every file gone: the task fails with the default share and publishes nothing; the run
    triggered with a larger ``max_deletions`` param publishes the deletions."""
    root, out = tmp_path / "collection", tmp_path / "published"
    for number in range(10):
        write(root, f"{number}.txt", b"x")

    def run(**conf: Any) -> Any:
        return run_dag("publish_guarded", lambda: ResourceSyncPublishOperator(
            task_id="publish", source=str(root), publish_to=str(out),
            base_url="https://example.org/", max_deletions="{{ params.max_deletions }}",
            check_urls=0),
            params={"max_deletions": 0.1}, run_conf=conf)

    assert states(run()) == {"publish": "success"}
    shutil.rmtree(root)
    root.mkdir()
    saved = (out / "checkpoint.json").read_bytes()
    assert states(run()) == {"publish": "failed"}
    assert (out / "checkpoint.json").read_bytes() == saved
    assert not (out / "changes").exists()
    done = run(max_deletions=1)
    assert states(done) == {"publish": "success"} and xcom(done, "publish")["left"] == []
    assert sum(path.read_text().count('change="deleted"')
               for path in (out / "changes").glob("*.xml")) == 10
