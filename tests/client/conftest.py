"""Shared by the client tests: a loopback Source and clients allowed to reach it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

#: The resources a :func:`source` starts with, name -> body.
INITIAL = {f"r{number}.txt": f"resource {number}\n".encode() for number in range(1, 6)}
#: A policy reaching loopback, with fast retries.
FAST = {"allow_private": True, "backoff": 0.01, "max_backoff": 2.0, "max_tries": 4}


def client_for(server: SourceServer, **policy: object) -> ResourceSyncClient:
    """A client for the Source at ``server``: :data:`FAST`, with ``policy`` over it."""
    return ResourceSyncClient(ClientPolicy(**{**FAST, **policy}),  # type: ignore[arg-type]
                              source_urls=[server.base_url])


@pytest.fixture
def source(server: SourceServer) -> ResourceSyncSource:
    """A Source on :func:`server` holding :data:`INITIAL`, nothing published yet."""
    return ResourceSyncSource(server, resources=INITIAL)


@pytest.fixture
def client(server: SourceServer) -> Iterator[ResourceSyncClient]:
    """A client whose guard allows :func:`server`'s host, with fast retries."""
    policy = ClientPolicy(allow_private=True, backoff=0.01, max_backoff=1)
    with ResourceSyncClient(policy, source_urls=[server.base_url]) as opened:
        yield opened
