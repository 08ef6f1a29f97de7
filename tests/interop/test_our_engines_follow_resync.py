"""Our engines against Sources that resync 2.0.1 builds: a baseline from its Resource List or
its Resource Dump leaves the mirror byte for byte equal to the Source's files."""

from __future__ import annotations

import pytest

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.sync.baseline import run_baseline

from ..sync.conftest import held
from .built import ResyncBuiltSource
from .conftest import FILES


@pytest.mark.parametrize("method", ["resourcelist", "resourcedump"])
def test_a_baseline_of_a_resync_built_source_is_byte_equal(
        client: ResourceSyncClient, destination: Destination, filled: ResyncBuiltSource,
        method: str) -> None:
    if method == "resourcelist":
        filled.build_resource_list()
    else:
        filled.build_resource_dump()

    checkpoint = run_baseline(client, destination, method=method,
                              capability_list_url=filled.capability_list_url)

    assert held(destination) == filled.state()
    assert len(filled.state()) == len(FILES)
    assert checkpoint.stats["fetched"] == len(FILES)
