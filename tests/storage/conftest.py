"""Real parts for the destination tests: a temporary directory, and moto's S3 server spoken to
over HTTP by boto3 (``s3_client`` and ``bucket`` in tests/conftest.py; about 12 ms a request:
keep object counts small, page sizes smaller)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination


@pytest.fixture
def s3(s3_client: Any, bucket: str) -> S3Destination:
    return S3Destination(s3_client, bucket, "mirror/")


@pytest.fixture
def local(tmp_path: Any) -> LocalDestination:
    return LocalDestination(tmp_path / "mirror")
