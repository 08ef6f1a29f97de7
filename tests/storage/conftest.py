"""Real parts for the destination tests: a temporary directory, and moto's S3 server spoken to
over HTTP by boto3 (about 12 ms a request: keep object counts small, page sizes smaller)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination

_buckets = itertools.count()


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """One moto server per test module, on a free port of 127.0.0.1."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


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
