"""The shard index on local disk and on S3 (moto's server over HTTP: fixtures of tests/storage)."""

from __future__ import annotations

import pytest

from airflow_provider_resourcesync.storage.base import Destination


@pytest.fixture(params=["local", "s3"])
def destination(request: pytest.FixtureRequest) -> Destination:
    return request.getfixturevalue(request.param)
