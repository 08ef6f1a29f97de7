"""The publishing task's inventory is the source bucket's own (issue 27, item 2): a report of
another bucket, side by side with the source's in a shared inventory bucket, is refused
through the AWS connection, against moto's S3 server over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_resourcesync.errors import InventoryError
from airflow_provider_resourcesync.hooks.inventory import inventory_of
from airflow_provider_resourcesync.publish.inventory import InventoryObject
from tests.publish.reports import CREATED, s3_put, write_report

from .conftest import AWS_CONN_ID


def test_a_report_of_another_bucket_is_refused_naming_both(s3_client: Any, bucket: str) -> None:
    source, other, inventory = f"{bucket}-src", f"{bucket}-other", f"{bucket}-inv"
    for name in (source, other, inventory):
        s3_client.create_bucket(Bucket=name)
    objects = [InventoryObject(f"data/{number}", 1, "e", CREATED) for number in range(20)]
    for name in (source, other):
        write_report(s3_put(s3_client, inventory), [objects], bucket=name,
                     manifest_key=f"{name}/daily/2026-11-25T01-00Z/manifest.json")
    mine = f"s3://{inventory}/{source}/daily/2026-11-25T01-00Z/manifest.json"
    listed = inventory_of(f"s3://{source}/", mine, f"s3://{bucket}/pub/", aws_conn_id=AWS_CONN_ID)
    assert len(list(listed.objects)) == 20
    theirs = mine.replace(f"/{source}/", f"/{other}/")
    with pytest.raises(InventoryError) as caught:
        inventory_of(f"s3://{source}/", theirs, f"s3://{bucket}/pub/", aws_conn_id=AWS_CONN_ID)
    assert f"s3://{inventory}/{other}/daily/" in str(caught.value)
    assert f"of bucket {other!r} (its sourceBucket), not {source!r}" in str(caught.value)
