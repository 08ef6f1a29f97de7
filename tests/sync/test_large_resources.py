"""Large resources, whose digests are computed as they download (``protocol/hashes.py``,
``Digester``): still verified whole before anything is committed, and a try that fails
mid-stream leaves nothing of itself behind; no more of them at once than pays."""

from __future__ import annotations

import hashlib
import random

import pytest

from airflow_provider_resourcesync.client import sync_client
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient, bulk_slots
from airflow_provider_resourcesync.errors import SyncIncompleteError
from airflow_provider_resourcesync.protocol.hashes import OVERLAP_AFTER
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from .conftest import held, path_of

LARGE = random.Random(3).randbytes(6 * OVERLAP_AFTER + 12345)


def test_a_large_resource_is_verified_and_described_as_it_downloads(
        client: ResourceSyncClient, local: LocalDestination, server: SourceServer) -> None:
    source = ResourceSyncSource(server, resources={"large.bin": LARGE, "small.txt": b"s\n"})
    source.publish()
    server.corrupt(path_of(source.uri("large.bin")), times=1)  # the first try: one bit flipped
    run_baseline(client, local, capability_list_url=source.capability_list_url)
    assert held(local) == source.state()
    info = local.info(KeyMapper().key(source.uri("large.bin")))
    assert info is not None
    # the Source lists md5 and sha-256: the strongest is verified and stored (section 7)
    assert info.hashes.get("sha-256") == hashlib.sha256(LARGE).hexdigest()
    assert info.hashes.get("md5") is None


def test_a_large_resource_that_never_matches_is_not_committed(
        client: ResourceSyncClient, local: LocalDestination, server: SourceServer) -> None:
    source = ResourceSyncSource(server, resources={"large.bin": LARGE, "small.txt": b"s\n"})
    source.publish()
    server.corrupt(path_of(source.uri("large.bin")), times=100)
    with pytest.raises(SyncIncompleteError, match="hash mismatch"):
        run_baseline(client, local, capability_list_url=source.capability_list_url)
    assert held(local) == {source.uri("small.txt"): b"s\n"}


def test_no_more_bulk_downloads_at_once_than_pay(
        client: ResourceSyncClient, local: LocalDestination, server: SourceServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Resources listed at ``BULK_AFTER`` bytes or more are bound by the cores that receive,
    verify and write them, not by the Source's latency: at most ``bulk_slots()`` at once
    (docs/design.md, "Large resources"). Smaller ones go on meanwhile."""
    monkeypatch.setattr(sync_client, "BULK_AFTER", 64 * 1024)  # small stand-ins, same rule
    slots = bulk_slots()
    bulky = {f"bulk{n:02d}.bin": random.Random(n).randbytes(64 * 1024) for n in range(3 * slots)}
    source = ResourceSyncSource(server, resources=bulky)
    source.publish()
    server.delay = 0.2  # every answer late: whatever may be in flight at once is
    run_baseline(client, local, capability_list_url=source.capability_list_url)
    assert held(local) == source.state()
    assert server.most_at_once == slots

    small = {f"small{n:02d}.txt": b"s%d\n" % n for n in range(2 * slots)}
    for name, body in small.items():
        source.create(name, body)
    source.publish()
    server.reset_log()
    run_baseline(client, local, capability_list_url=source.capability_list_url)
    assert held(local) == source.state()
    assert server.most_at_once > slots
