"""Large resources, whose digests are computed on helper threads while they download
(``protocol/hashes.py``, ``Digester``): still verified whole before anything is committed, and
a try that fails mid-stream leaves nothing of itself behind."""

from __future__ import annotations

import hashlib
import random

import pytest

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
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
    assert info.hashes.get("md5") == hashlib.md5(LARGE).hexdigest()
    assert info.hashes.get("sha-256") == hashlib.sha256(LARGE).hexdigest()


def test_a_large_resource_that_never_matches_is_not_committed(
        client: ResourceSyncClient, local: LocalDestination, server: SourceServer) -> None:
    source = ResourceSyncSource(server, resources={"large.bin": LARGE, "small.txt": b"s\n"})
    source.publish()
    server.corrupt(path_of(source.uri("large.bin")), times=100)
    with pytest.raises(SyncIncompleteError, match="hash mismatch"):
        run_baseline(client, local, capability_list_url=source.capability_list_url)
    assert held(local) == {source.uri("small.txt"): b"s\n"}
