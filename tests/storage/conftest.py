"""Real parts for the destination tests: a temporary directory, and moto's S3 server spoken to
over HTTP by boto3 (about 12 ms a request: keep object counts small, page sizes smaller)."""

from __future__ import annotations

import itertools
from typing import Any

import boto3
import pytest

from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination

_buckets = itertools.count()



@pytest.fixture(scope="module")
def s3_client(s3_endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="test",
                        aws_secret_access_key="test", region_name="us-east-1")


@pytest.fixture
def bucket(s3_client: Any) -> str:
    """A new, empty bucket for each test."""
    name = f"mirror-{next(_buckets)}"
    s3_client.create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3(s3_client: Any, bucket: str) -> S3Destination:
    return S3Destination(s3_client, bucket, "mirror/")


@pytest.fixture
def local(tmp_path: Any) -> LocalDestination:
    return LocalDestination(tmp_path / "mirror")
