"""Test fixtures shipped with the provider: a loopback ResourceSync Source over real sockets.

Standard library and :mod:`airflow_provider_resourcesync.protocol` only, so the project's tests
and demos can serve from it without Airflow or an HTTP client.
"""

from __future__ import annotations

from .directory import ServedDirectory
from .server import Content, RequestRecord, SourceServer
from .source import ChangeRecord, FakeClock, ResourceSyncSource

__all__ = [
    "ChangeRecord",
    "Content",
    "FakeClock",
    "RequestRecord",
    "ResourceSyncSource",
    "ServedDirectory",
    "SourceServer",
]
