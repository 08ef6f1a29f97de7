"""Real parts for the Airflow shell: the metadata database (migrated once per session, on the
SQLite file ``tests/conftest.py`` configured), loopback Sources, and moto's S3 server over HTTP."""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from airflow_provider_resourcesync.compat import AIRFLOW_3
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

AWS_CONN_ID = "aws_test"
_buckets = itertools.count()


@pytest.fixture(scope="session", autouse=True)
def airflow_db() -> None:
    """A fresh metadata database, once per session (about 2 s)."""
    from airflow.utils import db

    db.resetdb()


@pytest.fixture(autouse=True)
def task_logs_printed_in_each_test() -> Iterator[None]:
    """Airflow 2's ``dag.test()`` prints task logs through a handler it adds once per process,
    on the ``sys.stdout`` of that first run (a test's captured output): removed after each
    test, so the next test's runs print to its own."""
    yield
    if not AIRFLOW_3:
        task_log = logging.getLogger("airflow.task")
        for handler in [h for h in task_log.handlers if type(h) is logging.StreamHandler]:
            task_log.removeHandler(handler)


@pytest.fixture
def source(monkeypatch: pytest.MonkeyPatch) -> Iterator[ResourceSyncSource]:
    """A published loopback Source of 20 resources, and ``resourcesync_default`` pointing at its
    base URL (the example DAGs discover the Capability List from there)."""
    resources = {f"item-{number:02d}.txt": f"item {number}\n".encode() for number in range(20)}
    with SourceServer(max_lifetime=120) as server:
        published = ResourceSyncSource(server, resources=resources)
        published.publish()
        monkeypatch.setenv("AIRFLOW_CONN_RESOURCESYNC_DEFAULT", json.dumps({
            "conn_type": "resourcesync", "host": server.url("/"),
            "extra": {"allow_private": True}}))
        yield published



@pytest.fixture
def s3_client(s3_endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="test",
                        aws_secret_access_key="test", region_name="us-east-1")


@pytest.fixture
def bucket(s3_client: Any, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new, empty bucket, and the AWS connection ``aws_test`` to moto (``endpoint_url`` in its
    extra, dummy keys)."""
    name = f"airflow-mirror-{next(_buckets)}"
    s3_client.create_bucket(Bucket=name)
    monkeypatch.setenv(f"AIRFLOW_CONN_{AWS_CONN_ID.upper()}", json.dumps({
        "conn_type": "aws", "login": "test", "password": "test",
        "extra": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"}}))
    return name
