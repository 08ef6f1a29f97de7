"""A running Airflow deployment (see ``deployment.py``), a loopback Source it mirrors and a bucket
of moto's S3 server it mirrors into."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from .deployment import Deployment


@pytest.fixture
def source() -> Iterator[ResourceSyncSource]:
    """A published loopback Source of 12 resources, reached by the deployment's processes over
    127.0.0.1."""
    resources = {f"item-{number:02d}.txt": f"item {number}\n".encode() for number in range(12)}
    with SourceServer(max_lifetime=900) as server:
        published = ResourceSyncSource(server, resources=resources)
        published.publish()
        yield published


@pytest.fixture
def s3_client(s3_endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="test",
                        aws_secret_access_key="test", region_name="us-east-1")


@pytest.fixture
def mirror(s3_client: Any) -> str:
    """The example DAGs' destination (``RESOURCESYNC_SHARDED_DESTINATION`` and
    ``RESOURCESYNC_MIRROR_DIR``): a prefix of a new bucket."""
    bucket = f"deployment-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=bucket)
    return f"s3://{bucket}/mirror/"


@pytest.fixture
def deployment(tmp_path: Path, mirror: str) -> Iterator[Deployment]:
    """Airflow's api-server, scheduler (CeleryExecutor), dag-processor and triggerer, and two
    Celery workers, running in a temporary AIRFLOW_HOME on SQLite, every component healthy, a
    token for its REST API in hand and every worker ready; every process stopped on teardown.
    The Change List sensor of ``incremental_mirror`` is deferrable (Airflow's ``[operators]
    default_deferrable``) and looks every second; the watcher of ``incremental_on_change``
    polls every second."""
    home = tmp_path / "airflow-home"
    home.mkdir()
    running = Deployment(home, {
        "RESOURCESYNC_SHARDED_DESTINATION": mirror,
        "RESOURCESYNC_MIRROR_DIR": mirror,
        "RESOURCESYNC_POKE_INTERVAL": "1",
        "RESOURCESYNC_POLL_INTERVAL": "1",
        "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
        "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
    })
    try:
        running.migrate()
        running.start()
        running.wait_healthy()
        running.log_in()
        running.wait_workers()
        yield running
    finally:
        running.stop()
