"""The publishing task checks its URLs (issue 27, item 7): ``publish_url`` is required for an
``s3://`` ``publish_to`` when the DAG is parsed; a run whose ``base_url`` does not serve the
bucket's objects (moto's S3 server over HTTP, a bucket anyone may GET from) fails before it
writes, through a ``resourcesync`` connection allowing moto's private address (real
``dag.test()`` runs)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_resourcesync.errors import ConfigurationError
from airflow_provider_resourcesync.operators.publish import ResourceSyncPublishOperator

from .conftest import AWS_CONN_ID
from .runs import run_dag, states, xcom


@pytest.mark.parametrize("arguments, says", [
    ({"publish_to": "s3://bucket/pub/"}, "publish_url: required for s3://bucket/pub/"),
    ({"publish_to": "/p", "check_urls": -1}, "check_urls: -1 is not a count"),
])
def test_wrong_url_arguments_fail_when_the_dag_is_parsed(arguments: dict[str, Any],
                                                         says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        ResourceSyncPublishOperator(task_id="p", source="s3://bucket/", base_url="https://h/",
                                    **arguments)


def test_a_base_url_with_the_prefix_twice_fails_the_task_before_it_writes(
        s3_client: Any, s3_endpoint: str, bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s3_client.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
            "Resource": f"arn:aws:s3:::{bucket}/*"}]}))
    for number in range(4):
        s3_client.put_object(Bucket=bucket, Key=f"plus/{number}.txt", Body=b"x" * (number + 1))
    publish_url = f"{s3_endpoint}/{bucket}/pub/"
    monkeypatch.setenv("AIRFLOW_CONN_RESOURCESYNC_CHECKS", json.dumps({
        "conn_type": "resourcesync", "host": publish_url,
        "extra": {"allow_private": True, "max_tries": 1}}))

    def run(base_url: str) -> Any:
        return run_dag("publish_checked", lambda: ResourceSyncPublishOperator(
            task_id="publish", source=f"s3://{bucket}/plus/", publish_to=f"s3://{bucket}/pub/",
            base_url=base_url, publish_url=publish_url, resourcesync_conn_id="resourcesync_checks",
            aws_conn_id=AWS_CONN_ID))

    assert states(run(f"{s3_endpoint}/{bucket}/plus/")) == {"publish": "failed"}
    assert "Contents" not in s3_client.list_objects_v2(Bucket=bucket, Prefix="pub/")
    done = run(f"{s3_endpoint}/{bucket}/")
    assert states(done) == {"publish": "success"}
    checkpoint = xcom(done, "publish")
    assert (checkpoint["base_url"], checkpoint["publish_url"]) == (f"{s3_endpoint}/{bucket}/",
                                                                  publish_url)
