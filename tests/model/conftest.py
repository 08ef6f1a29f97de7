"""moto's S3 server over HTTP for the model's S3 runs (the fixtures of the storage tests)."""

from __future__ import annotations

from ..storage.conftest import s3_client

__all__ = ["s3_client"]
