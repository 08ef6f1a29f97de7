"""Real parts for the publishing tests: moto's S3 server over HTTP, a client for it and a new
bucket per test (the fixtures of the storage tests)."""

from __future__ import annotations

from ..storage.conftest import bucket, s3_client

__all__ = ["bucket", "s3_client"]
