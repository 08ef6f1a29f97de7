"""resync in its own environment (installed once into the cache; a test that needs it fails,
not skips, when it cannot be installed), Sources it builds, and the engine tests' real parts."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_resourcesync.testing import SourceServer

from ..sync.conftest import bucket, client, destination, local, s3, s3_client
from .built import ResyncBuiltSource
from .resync import Resync, ResyncUnavailable, installed

__all__ = ["FILES", "bucket", "client", "destination", "local", "s3", "s3_client"]


@pytest.fixture(scope="session")
def resync() -> Resync:
    try:
        return installed()
    except ResyncUnavailable as exc:
        pytest.fail(f"resync cannot be installed for the interop tests: {exc}", pytrace=False)


#: Files as a Source holds them: a name resync writes unescaped, a folder, an empty file.
FILES = {"a.txt": b"alpha\n", "café.txt": "caf\u00e9\n".encode(), "sub/b.txt": b"bee\n" * 100,
         "empty.txt": b""}


@pytest.fixture
def filled(built: ResyncBuiltSource) -> ResyncBuiltSource:
    for name, body in FILES.items():
        built.write(name, body)
    built.publish_files()
    return built


@pytest.fixture
def built(resync: Resync, server: SourceServer, tmp_path: Path) -> ResyncBuiltSource:
    """An empty Source that resync builds the documents of."""
    return ResyncBuiltSource(resync, server, tmp_path / "resync-source")
