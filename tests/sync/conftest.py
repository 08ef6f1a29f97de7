"""Real parts for the engine tests: a loopback Source, clients allowed to reach it, a local
directory, and moto's S3 server over HTTP (the fixtures of the storage tests)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.protocol.hashes import Digester
from airflow_provider_resourcesync.protocol.model import Metadata
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from ..storage.conftest import bucket, s3, s3_client

__all__ = ["bucket", "s3", "s3_client"]

#: The resources a :func:`source` starts with, name -> body.
INITIAL = {f"r{number:02d}.txt": f"resource {number}\n".encode() * number
           for number in range(1, 21)}



@pytest.fixture
def source(server: SourceServer) -> ResourceSyncSource:
    """A Source holding :data:`INITIAL`, its Resource List and Change List published."""
    created = ResourceSyncSource(server, resources=INITIAL)
    created.publish()
    return created


def client_for(server: SourceServer, **policy: object) -> ResourceSyncClient:
    settings: dict[str, object] = {"allow_private": True, "backoff": 0.01, "max_backoff": 1}
    return ResourceSyncClient(ClientPolicy(**(settings | policy)),  # type: ignore[arg-type]
                              source_urls=[server.base_url])


@pytest.fixture
def client(server: SourceServer) -> Iterator[ResourceSyncClient]:
    """A client whose guard allows :func:`server`'s host, with fast retries."""
    with client_for(server) as opened:
        yield opened


@pytest.fixture
def fragile(server: SourceServer) -> Iterator[ResourceSyncClient]:
    """A client that tries each request once: any fault fails the resource."""
    with client_for(server, max_tries=1) as opened:
        yield opened


@pytest.fixture
def local(tmp_path: Path) -> LocalDestination:
    return LocalDestination(tmp_path / "mirror")


@pytest.fixture(params=["local", "s3"])
def destination(request: pytest.FixtureRequest) -> Destination:
    return request.getfixturevalue(request.param)


def held(destination: Destination) -> dict[str, bytes]:
    """URI -> bytes of every object at the destination, by the description stored with it."""
    found = {}
    for key in destination.keys(""):
        info = destination.info(key)
        assert info is not None, key
        data = destination.read_bytes(key)
        assert data is not None
        found[info.uri] = data
    return found


def path_of(url: str) -> str:
    return urlsplit(url).path


def resource_gets(server: SourceServer) -> list[str]:
    """The resource paths fetched (documents and packages aside)."""
    return [record.path for record in server.requests
            if record.method == "GET" and "/res/" in record.path]


def described(body: bytes) -> Metadata:
    """A ``rs:md`` with the body's md5, sha-256 and length."""
    digester = Digester(("md5", "sha-256"))
    digester.update(body)
    return Metadata(hash=digester.hashes(), length=len(body))
