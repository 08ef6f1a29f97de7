"""The incremental engine against a loopback Source: changes after a checkpoint, coalesced and
applied, the checkpoint chained from run to run, and the mirror equal to the Source after each."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import ConfigurationError, SyncIncompleteError
from airflow_provider_resourcesync.protocol.model import Change
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.audit import run_audit
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.sync.shard import Shard
from airflow_provider_resourcesync.testing import FakeClock, ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.writer import MirrorState, saved_checkpoint

from .conftest import INITIAL, held, path_of, resource_gets
from .test_baseline import audit_is_clean, baseline


def incremental(client: ResourceSyncClient, destination: Destination,
                source: ResourceSyncSource, checkpoint: Checkpoint, **options: object
                ) -> Checkpoint:
    return run_incremental(client, destination, capability_list_url=source.capability_list_url,
                           checkpoint=checkpoint, **options)  # type: ignore[arg-type]


def in_step(client: ResourceSyncClient, destination: Destination,
            source: ResourceSyncSource) -> bool:
    """The mirror holds exactly what the Source holds, and an audit says so."""
    return held(destination) == source.state() and audit_is_clean(client, destination, source)


def test_creates_updates_and_deletes_after_a_baseline_arrive(
        client: ResourceSyncClient, destination: Destination, source: ResourceSyncSource,
        server: SourceServer) -> None:
    start = baseline(client, destination, source)
    source.create("new.txt", b"a new resource\n")
    source.update("r01.txt", b"resource 1, updated\n")
    last = source.delete("r02.txt")
    source.publish()
    server.reset_log()

    after = incremental(client, destination, source, start)

    assert in_step(client, destination, source)
    assert sorted(resource_gets(server)) == sorted(
        path_of(source.uri(name)) for name in ("new.txt", "r01.txt"))
    assert after.kind == "incremental" and after.document == source.change_list_url
    assert after.position.time == last.datetime == after.at
    assert after.stats["changes"] == 3 and after.stats["fetched"] == 2
    assert after.stats["removed"] == 1 and after.stats["failed"] == 0
    assert saved_checkpoint(destination) == after.to_json()


def test_a_next_run_reads_only_what_came_after_and_a_rerun_is_harmless(
        client: ResourceSyncClient, destination: Destination, source: ResourceSyncSource,
        server: SourceServer) -> None:
    first = incremental(client, destination, source, baseline(client, destination, source))
    source.update("r03.txt", b"three\n")
    source.publish()
    server.reset_log()

    second = incremental(client, destination, source, first)
    assert resource_gets(server) == [path_of(source.uri("r03.txt"))]
    assert second.stats["changes"] == 1 and in_step(client, destination, source)

    server.reset_log()
    again = incremental(client, destination, source, first)  # the same checkpoint again
    assert resource_gets(server) == []  # held unchanged: nothing transferred
    assert again.position == second.position and in_step(client, destination, source)


def test_a_resource_changed_several_times_is_fetched_once(
        client: ResourceSyncClient, local: LocalDestination, source: ResourceSyncSource,
        server: SourceServer) -> None:
    start = baseline(client, local, source)
    for version in range(5):
        source.update("r04.txt", f"version {version}\n".encode())
    source.delete("r05.txt")
    source.create("r05.txt", b"born again\n")
    source.create("gone.txt", b"short-lived\n")
    source.delete("gone.txt")
    source.publish()
    server.reset_log()

    after = incremental(client, local, source, start)

    assert sorted(resource_gets(server)) == sorted(
        path_of(source.uri(name)) for name in ("r04.txt", "r05.txt"))
    assert after.stats["changes"] == 9 and after.stats["resources"] == 3
    assert in_step(client, local, source)


def test_changes_sharing_one_datetime_are_neither_skipped_nor_repeated(
        client: ResourceSyncClient, tmp_path: Path, server: SourceServer) -> None:
    clock = FakeClock(step=timedelta(0))  # every change at one and the same datetime
    source = ResourceSyncSource(server, resources=INITIAL, clock=clock)
    source.publish()
    destination = LocalDestination(tmp_path / "mirror")
    start = baseline(client, destination, source)
    source.update("r01.txt", b"first\n")
    source.update("r02.txt", b"second\n")
    source.publish()
    middle = incremental(client, destination, source, start)
    source.update("r03.txt", b"third\n")  # the same datetime as the two before
    source.publish()
    server.reset_log()

    after = incremental(client, destination, source, middle)

    assert resource_gets(server) == [path_of(source.uri("r03.txt"))]
    assert after.position.consumed == 3 and in_step(client, destination, source)


def test_a_change_list_closing_and_a_new_one_opening_between_runs(
        client: ResourceSyncClient, local: LocalDestination, source: ResourceSyncSource,
        server: SourceServer) -> None:
    start = baseline(client, local, source)
    source.update("r06.txt", b"before the close\n")
    source.publish()
    first = incremental(client, local, source, start)
    source.update("r07.txt", b"still in the first list\n")
    source.close_changelist()
    source.update("r08.txt", b"in the second list\n")
    source.publish()  # now an index over two lists (12.2)
    server.reset_log()

    second = incremental(client, local, source, first)

    assert sorted(resource_gets(server)) == sorted(
        path_of(source.uri(name)) for name in ("r07.txt", "r08.txt"))
    assert second.position.list_url != first.position.list_url
    assert in_step(client, local, source)


def test_a_1_0_change_list_with_times_in_lastmod(
        client: ResourceSyncClient, local: LocalDestination, source: ResourceSyncSource,
        server: SourceServer) -> None:
    start = baseline(client, local, source)
    source.update("r09.txt", b"nine\n")
    changed = source.create("ten.txt", b"ten\n")
    source.publish(changelist_style="1.0")

    after = incremental(client, local, source, start)

    assert after.position.time == changed.datetime and after.stats["fetched"] == 2
    assert in_step(client, local, source)


def test_a_change_dump_window(client: ResourceSyncClient, destination: Destination,
                              source: ResourceSyncSource, server: SourceServer) -> None:
    start = baseline(client, destination, source)
    source.update("r10.txt", b"ten, in a package\n")
    source.close_changelist()
    source.create("eleven.txt", b"eleven\n")
    source.delete("r11.txt")
    source.publish(change_list=False, change_dump=True)
    server.reset_log()

    after = incremental(client, destination, source, start, method="changedump")

    assert resource_gets(server) == []  # the bitstreams come in the packages (13.1)
    assert after.document == source.change_dump_url
    assert after.stats["fetched"] == 2 and after.stats["removed"] == 1
    source.publish()  # the audit reads the Resource List
    assert in_step(client, destination, source)


def test_a_corrupt_change_dump_package_writes_nothing_and_the_rerun_applies_it(
        fragile: ResourceSyncClient, client: ResourceSyncClient, local: LocalDestination,
        source: ResourceSyncSource, server: SourceServer) -> None:
    start = baseline(client, local, source)
    before = held(local)
    source.update("r10.txt", b"ten, in a package\n")
    source.create("eleven.txt", b"eleven\n")
    source.publish(change_list=False, change_dump=True)
    package = f"{source.prefix}/changedump-1.zip"
    server.corrupt(package, times=10)

    with pytest.raises(SyncIncompleteError, match=r"changedump-1\.zip : package refused, "
                                                  r"nothing of it written"):
        incremental(fragile, local, source, start, method="changedump")

    assert held(local) == before  # 13.1: nothing of a package that fails its hash
    standing = Checkpoint.from_json(saved_checkpoint(local))  # type: ignore[arg-type]
    assert standing.position == start.position
    server.clear_faults()
    after = incremental(client, local, source, standing, method="changedump")
    assert after.stats["fetched"] == 2
    source.publish()  # the audit reads the Resource List
    assert in_step(client, local, source)


def test_a_run_failing_midway_stands_before_the_failure_and_a_rerun_loses_nothing(
        fragile: ResourceSyncClient, client: ResourceSyncClient, local: LocalDestination,
        source: ResourceSyncSource, server: SourceServer) -> None:
    start = baseline(client, local, source)
    source.update("r12.txt", b"twelve\n")
    failing = source.update("r13.txt", b"thirteen\n")
    source.update("r14.txt", b"fourteen\n")
    source.publish()
    server.fail(path_of(source.uri("r13.txt")), 500)

    with pytest.raises(SyncIncompleteError, match="incomplete"):
        incremental(fragile, local, source, start)

    standing = Checkpoint.from_json(saved_checkpoint(local))  # type: ignore[arg-type]
    assert standing.position.consumed == 1  # r12 done; r13 failed; r14 done, read again
    assert standing.position.time is not None and standing.position.time < failing.datetime
    server.reset_log()
    after = incremental(client, local, source, standing)
    assert resource_gets(server) == [path_of(source.uri("r13.txt"))]
    assert after.stats["failed"] == 0 and in_step(client, local, source)


@pytest.mark.parametrize("deletes", ["keep", "move"])
def test_deletes_keep_or_move_aside_as_asked(
        deletes: str, client: ResourceSyncClient, local: LocalDestination,
        source: ResourceSyncSource) -> None:
    start = baseline(client, local, source)
    key = KeyMapper().key(source.uri("r15.txt"))
    source.delete("r15.txt")
    source.publish()

    after = incremental(client, local, source, start, deletes=deletes, move_to="trash/")

    if deletes == "keep":
        assert local.read_bytes(key) == INITIAL["r15.txt"] and after.stats["kept"] == 1
    else:
        assert local.read_bytes(key) is None and after.stats["removed"] == 1
        assert local.read_bytes("trash/" + key) == INITIAL["r15.txt"]
        # what was moved aside is not the mirror's: an audit told so leaves it alone
        assert run_audit(client, local, capability_list_url=source.capability_list_url,
                         repair=True, ignore_prefixes=["trash/"]).clean
        assert local.read_bytes("trash/" + key) == INITIAL["r15.txt"]
        assert run_audit(client, local, capability_list_url=source.capability_list_url).extra == 1
    with MirrorState.load(local) as state:
        assert (state.get(source.uri("r15.txt")) is not None) == (deletes == "keep")


def test_the_mirror_records_the_changes_it_applied(
        client: ResourceSyncClient, local: LocalDestination, source: ResourceSyncSource) -> None:
    start = baseline(client, local, source)
    source.update("r16.txt", b"sixteen\n")
    source.delete("r17.txt")
    source.publish()
    before = datetime.now(UTC)
    incremental(client, local, source, start)
    after = datetime.now(UTC)
    [changelist] = local.keys(".resourcesync/changes/")
    document = read_document(local.read_bytes(changelist) or b"")
    # in the order the mirror made them (its pool's), which may be either
    assert sorted(entry.md.change for entry in document) == [Change.DELETED, Change.UPDATED]
    # dated when the mirror applied them (14.8's examples), not at the Source's (earlier) times
    assert all(before <= entry.md.datetime <= after for entry in document)
    assert document.head.md.until <= after


def test_a_checkpoint_of_another_mirror_or_of_one_shard_is_refused(
        client: ResourceSyncClient, local: LocalDestination, tmp_path: Path,
        source: ResourceSyncSource) -> None:
    start = baseline(client, local, source)
    with pytest.raises(ConfigurationError, match="the checkpoint is of the mirror at"):
        incremental(client, LocalDestination(tmp_path / "other"), source, start)
    with pytest.raises(ConfigurationError, match="combine the shards"):
        incremental(client, local, source, replace(start, shard=Shard(0, 2)))
    with pytest.raises(ConfigurationError, match="deletes 'purge'"):
        incremental(client, local, source, start, deletes="purge")
