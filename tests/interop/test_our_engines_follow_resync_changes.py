"""Our incremental engine over Change Lists that resync 2.0.1 builds (``resync-build
--write-changelist`` against the Resource List built before), in its ``--spec-version`` 1.0 and
1.1 modes, run after run: the mirror ends byte for byte equal to the Source's files, deletions
included.

resync writes these lists with no ``from``, no ``datetime`` (the time of a change is only in
``lastmod``), and each deleted entry stamped with the file's old ``lastmod``: a deletion looks
older than the position the mirror stands at. And it writes each new list over the last one at
the same URL. The engine skipped those deletions, and then the first entries of the rewritten
list, which it took for the list it had read (issue 13, item 1)."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.incremental import run_incremental

from ..sync.conftest import held
from .built import ResyncBuiltSource


@pytest.fixture(params=["1.0", "1.1"])
def built_for(request: pytest.FixtureRequest, filled: ResyncBuiltSource) -> ResyncBuiltSource:
    filled.spec_version = request.param
    return filled


def test_creates_updates_and_deletes_of_resync_change_lists_arrive(
        client: ResourceSyncClient, destination: Destination,
        built_for: ResyncBuiltSource, caplog: pytest.LogCaptureFixture) -> None:
    source = built_for
    reference = source.build_resource_list()
    checkpoint = run_baseline(client, destination, capability_list_url=source.capability_list_url)
    assert held(destination) == source.state()

    # two runs, each Change List replacing the last: updates, creations, deletions (one in a
    # folder), computed against the Resource List built before
    for written, deleted in (({"a.txt": b"alpha, changed\n", "new.txt": b"new\n"}, ["sub/b.txt"]),
                             ({"new.txt": b"new, changed\n", "later.txt": b"later\n"},
                              ["café.txt"])):
        for name, body in written.items():
            source.write(name, body)
        for name in deleted:
            source.delete(name)
        source.publish_files()
        source.build_change_list(reference)
        reference = source.build_resource_list()
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            checkpoint = run_incremental(client, destination, checkpoint=checkpoint,
                                         capability_list_url=source.capability_list_url)
        assert held(destination) == source.state()
        assert any("has no from" in record.getMessage() and "1 of its changes are dated before"
                   in record.getMessage() for record in caplog.records)  # the deletion
