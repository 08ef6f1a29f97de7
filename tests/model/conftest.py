"""moto's S3 server over HTTP for the model's S3 runs (the fixtures of the storage tests), and
resync in its own environment (the interop tests' fixture: a test that needs it fails, not
skips, when it cannot be installed)."""

from __future__ import annotations

from ..interop.conftest import resync
from ..storage.conftest import s3_client

__all__ = ["resync", "s3_client"]
