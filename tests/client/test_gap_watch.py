"""The watching plans meet a gap as the engine does: a Source whose index no longer offers the
changes after a position (12.2) fails both plans, driven sync and async, with ChangeGapError."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from airflow_provider_resourcesync.client.async_client import AsyncResourceSyncClient
from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.client.watch import (
    Plan,
    adrive,
    change_list_status,
    drive,
    new_changes,
)
from airflow_provider_resourcesync.errors import ChangeGapError
from airflow_provider_resourcesync.protocol.position import ChangePosition
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

Watch = Callable[[str, ChangePosition], Plan[object]]


@pytest.fixture
def rotated(server: SourceServer) -> ResourceSyncSource:
    """A Source offering only its last Change List, two lists after its creation."""
    source = ResourceSyncSource(server, resources={"a.txt": b"a\n"}, keep_change_lists=1)
    source.update("a.txt", b"rotated away\n")
    source.close_changelist()
    source.close_changelist()
    source.update("a.txt", b"offered\n")
    source.publish()
    return source


@pytest.mark.parametrize("plan", [new_changes, change_list_status])
def test_both_plans_fail_at_a_gap_driven_either_way(
        rotated: ResourceSyncSource, server: SourceServer, plan: Watch) -> None:
    position = ChangePosition.at(rotated.created)
    policy = ClientPolicy(allow_private=True)
    with ResourceSyncClient(policy, source_urls=[server.base_url]) as client, \
            pytest.raises(ChangeGapError, match="the checkpoint is a snapshot at"):
        drive(client, plan(rotated.change_list_url, position))

    async def polled() -> object:
        async with AsyncResourceSyncClient(policy, source_urls=[server.base_url]) as client:
            return await adrive(client, plan(rotated.change_list_url, position))

    with pytest.raises(ChangeGapError, match=r"changelist-3\.xml , from "):
        asyncio.run(polled())
