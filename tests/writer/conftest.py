"""The Source writer on local disk and on S3 (moto's server over HTTP: the fixtures of
tests/storage)."""

from __future__ import annotations

import pytest

from airflow_provider_resourcesync.storage.base import Destination

from ..storage.conftest import bucket, local, s3, s3_client

__all__ = ["bucket", "destination", "local", "s3", "s3_client"]


@pytest.fixture(params=["local", "s3"])
def destination(request: pytest.FixtureRequest) -> Destination:
    return request.getfixturevalue(request.param)
