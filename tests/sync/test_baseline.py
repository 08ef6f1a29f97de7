"""The baseline engine against a loopback Source: complete mirrors, no transfer of unchanged
bytes, failures that commit the rest and converge on a re-run, removals, dumps, shards, and a
hostile Source that cannot harm the destination."""

from __future__ import annotations

import io
import logging
import zipfile
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import (
    ConfigurationError,
    DocumentError,
    SyncIncompleteError,
)
from airflow_provider_resourcesync.protocol.datetimes import format_datetime, parse_datetime
from airflow_provider_resourcesync.protocol.model import Document, Entry, Head, Metadata
from airflow_provider_resourcesync.protocol.position import ChangePosition
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.writer import document_bytes
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.audit import run_audit
from airflow_provider_resourcesync.sync.baseline import combine_shards, run_baseline
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.sync.combine import shard_location
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.sync.shard import Shard
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.writer import MirrorState

from .conftest import client_for, described, held, path_of, resource_gets

AT = datetime(2026, 3, 1, tzinfo=UTC)


def baseline(client: ResourceSyncClient, destination: Destination, source: ResourceSyncSource,
             **options: object) -> Checkpoint:
    return run_baseline(client, destination, capability_list_url=source.capability_list_url,
                        **options)  # type: ignore[arg-type]


def audit_is_clean(client: ResourceSyncClient, destination: Destination,
                   source: ResourceSyncSource) -> bool:
    report = run_audit(client, destination, capability_list_url=source.capability_list_url,
                       deep=True)
    return report.clean and report.checked == len(source.state())


# -- mirroring ---------------------------------------------------------------------------------


def test_a_baseline_mirrors_everything_and_audits_clean(
        client: ResourceSyncClient, destination: Destination, source: ResourceSyncSource,
        server: SourceServer) -> None:
    checkpoint = baseline(client, destination, source)
    assert held(destination) == source.state()
    assert checkpoint.kind == "baseline" and checkpoint.shard is None
    assert checkpoint.source == source.capability_list_url
    assert checkpoint.document == source.resource_list_url
    assert checkpoint.destination == destination.url
    assert checkpoint.at is not None and checkpoint.position == ChangePosition.at(checkpoint.at)
    assert checkpoint.stats == {"listed": 20, "fetched": 20, "unchanged": 0, "removed": 0,
                                "failed": 0, "bytes": sum(map(len, source.state().values()))}
    with MirrorState.load(destination) as state:
        assert state.checkpoint() == checkpoint.to_json()
        assert {record.uri for record in state.records()} == set(source.state())
    assert audit_is_clean(client, destination, source)

    server.reset_log()
    again = baseline(client, destination, source)
    assert resource_gets(server) == []
    assert {record.status for record in server.requests} == {304}  # documents only, cached
    assert again.stats["unchanged"] == 20 and again.stats["bytes"] == 0


def test_a_failed_run_commits_the_rest_and_a_rerun_converges(
        client: ResourceSyncClient, fragile: ResourceSyncClient, local: LocalDestination,
        source: ResourceSyncSource, server: SourceServer) -> None:
    failing = [source.uri("r03.txt"), source.uri("r07.txt")]
    server.fail(path_of(failing[0]), 500)
    server.drop(path_of(failing[1]))
    with pytest.raises(SyncIncompleteError, match="re-run the task to converge") as raised:
        baseline(fragile, local, source)
    assert raised.value.failed == 2
    assert raised.value.rerun_helps and raised.value.lasting == 0
    assert sorted(uri for uri, _ in raised.value.failures) == failing
    assert set(held(local)) == set(source.state()) - set(failing)
    with MirrorState.load(local) as state:
        assert len(state) == 18
        assert state.checkpoint() is None  # an incomplete run does not move the checkpoint

    server.reset_log()
    checkpoint = baseline(client, local, source)
    assert sorted(resource_gets(server)) == sorted(map(path_of, failing))
    assert checkpoint.stats["fetched"] == 2 and checkpoint.stats["unchanged"] == 18
    assert audit_is_clean(client, local, source)


def test_a_list_with_foreign_elements_in_a_relative_namespace_is_mirrored(
        client: ResourceSyncClient, local: LocalDestination, source: ResourceSyncSource,
        server: SourceServer) -> None:
    # Issue 12, item 7: the reader's C14N crashed on these, and the baseline died unsaved.
    listed = path_of(source.resource_list_url)
    body = server.get_body(listed).replace(
        b"</url>", b'<x:y xmlns:x="rel">foreign</x:y></url>', 1).replace(
        b"</urlset>", b'<q:z xmlns:q="../up"/></urlset>')
    server.put(listed, body, "application/xml")
    checkpoint = baseline(client, local, source)
    assert checkpoint.stats["fetched"] == 20
    assert held(local) == source.state()
    with MirrorState.load(local) as state:
        assert state.checkpoint() == checkpoint.to_json()


def test_objects_committed_before_a_run_died_are_not_fetched_again(
        client: ResourceSyncClient, local: LocalDestination, source: ResourceSyncSource,
        server: SourceServer) -> None:
    baseline(client, local, source)
    for key in list(local.keys(".resourcesync/")):  # the state was never saved
        local.delete(key)
    server.reset_log()
    checkpoint = baseline(client, local, source)
    assert resource_gets(server) == [] and checkpoint.stats["unchanged"] == 20
    assert audit_is_clean(client, local, source)


def test_remove_missing_deletes_what_the_source_dropped_and_only_when_asked(
        client: ResourceSyncClient, local: LocalDestination, source: ResourceSyncSource) -> None:
    baseline(client, local, source)
    dropped = source.uri("r02.txt")
    source.delete("r02.txt")
    source.publish()
    kept = baseline(client, local, source)
    assert dropped in held(local) and kept.stats["removed"] == 0
    removed = baseline(client, local, source, remove_missing=True)
    assert held(local) == source.state() and removed.stats["removed"] == 1
    with MirrorState.load(local) as state:
        assert state.get(dropped) is None
    assert audit_is_clean(client, local, source)


@pytest.mark.parametrize("method", ["resourcelist", "resourcedump"])
def test_remove_missing_removes_only_what_the_source_could_have_listed(
        destination: Destination, method: str) -> None:
    """Two Sources mirrored into one destination: a Source can list only URIs on its own
    origins (and the hosts its connection allows), so one Source's baseline with
    ``remove_missing`` never removes the other's resources (issue 26)."""
    with (SourceServer(max_lifetime=120) as one, SourceServer(max_lifetime=120) as other,
          client_for(one) as first, client_for(other) as second):
        a = ResourceSyncSource(one, resources={"x.txt": b"a's x", "y.txt": b"a's y"})
        b = ResourceSyncSource(other, resources={"x.txt": b"b's x"})
        for source in (a, b):
            source.publish(resource_dump=True)
        baseline(first, destination, a, method=method)
        baseline(second, destination, b, method=method)
        a.delete("y.txt")
        a.publish(resource_dump=True)
        removed = baseline(first, destination, a, method=method, remove_missing=True)
        assert removed.stats["removed"] == 1
        assert held(destination) == a.state() | b.state()
        with MirrorState.load(destination) as state:
            assert state.get(b.uri("x.txt")) is not None and state.get(a.uri("y.txt")) is None


def test_a_listing_older_than_every_change_list_offered_is_taken_as_it_is(
        client: ResourceSyncClient, local: LocalDestination, server: SourceServer,
        caplog: pytest.LogCaptureFixture) -> None:
    """Where the Change Lists no longer reach back to the listing's ``at`` (rotated away), the
    changes since cannot be read: the baseline takes the listing as it is, and says so."""
    source = ResourceSyncSource(server, resources={"a.txt": b"a", "b.txt": b"b"},
                                keep_change_lists=1)
    source.update("a.txt", b"a, changed")
    source.close_changelist()
    source.update("b.txt", b"b, changed")
    source.publish()
    listing = server.get_body("/dataset1/resourcelist.xml")
    at = read_document(listing).head.md
    assert at is not None and at.at is not None
    older = format_datetime(at.at - timedelta(days=1))  # before the one list still offered
    server.put("/dataset1/resourcelist.xml",
               listing.replace(format_datetime(at.at).encode(), older.encode()),
               "application/xml")
    caplog.set_level(logging.INFO)
    checkpoint = baseline(client, local, source)
    assert held(local) == source.state()
    assert "changed_after" not in checkpoint.stats
    assert checkpoint.position == ChangePosition.at(parse_datetime(older))
    assert "Resources changed after the listing are taken as it describes them" in caplog.text


def test_a_resource_dump_baseline(client: ResourceSyncClient, local: LocalDestination,
                                  server: SourceServer) -> None:
    source = ResourceSyncSource(server, resources={"a.txt": b"a", "b/c.txt": b"bc"})
    source.publish(resource_list=False, change_list=False, resource_dump=True)
    checkpoint = baseline(client, local, source)
    assert checkpoint.document == source.resource_dump_url
    assert checkpoint.at is not None and checkpoint.stats["fetched"] == 2
    assert held(local) == source.state()
    assert resource_gets(server) == []  # everything came out of the package

    source.update("a.txt", b"a again")
    source.publish(resource_list=False, change_list=False, resource_dump=True)
    again = baseline(client, local, source)
    assert held(local) == source.state()
    assert (again.stats["fetched"], again.stats["unchanged"]) == (1, 1)


def test_the_method_must_be_offered(client: ResourceSyncClient, local: LocalDestination,
                                    source: ResourceSyncSource) -> None:
    with pytest.raises(DocumentError, match="no Resource Dump to baseline from"):
        baseline(client, local, source, method="resourcedump")
    with pytest.raises(ConfigurationError, match="method 'ftp'"):
        baseline(client, local, source, method="ftp")


# -- shards --------------------------------------------------------------------------------------


def test_sharded_baselines_combine_into_the_mirror(
        client: ResourceSyncClient, local: LocalDestination, source: ResourceSyncSource) -> None:
    checkpoints = [baseline(client, local, source, shard=Shard(index, 3)) for index in range(3)]
    assert sum(c.stats["listed"] for c in checkpoints) == 20
    assert all(c.stats["listed"] > 0 for c in checkpoints)  # 20 URIs spread over 3 parts
    with MirrorState.load(local) as state:
        assert len(state) == 0 and state.checkpoint() is None  # shards never write the state
    for checkpoint in checkpoints:
        assert checkpoint.shard is not None
        with MirrorState.load(local, location=shard_location(checkpoint.shard)) as view:
            assert len(view) == checkpoint.stats["listed"]
            assert all(checkpoint.shard.holds(record.uri) for record in view.records())

    with pytest.raises(ConfigurationError, match="re-run that shard"):
        combine_shards(local, [replace(checkpoints[0], stats={"listed": 0}), *checkpoints[1:]])
    combined = combine_shards(local, checkpoints)
    assert combined.shard is None and combined.stats["fetched"] == 20
    assert list(local.keys(".resourcesync/shards/")) == []
    assert held(local) == source.state()
    with MirrorState.load(local) as state:
        assert state.checkpoint() == combined.to_json() and len(state) == 20
    assert audit_is_clean(client, local, source)

    source.delete("r05.txt")
    source.update("r06.txt", b"six again")
    source.publish()
    again = combine_shards(local, [baseline(client, local, source, shard=Shard(index, 3),
                                            remove_missing=True) for index in range(3)])
    assert held(local) == source.state()
    assert {name: again.stats[name] for name in ("fetched", "unchanged", "removed")} == {
        "fetched": 1, "unchanged": 18, "removed": 1}
    assert audit_is_clean(client, local, source)


def older_listing(server: SourceServer, source: ResourceSyncSource) -> None:
    """The Source's changes published in its Change List while its Resource List stays as it
    was before them (a Source that rewrites it only now and then: updated, deleted and created
    resources described as they were, or not at all)."""
    listing = server.get_body("/dataset1/resourcelist.xml")
    source.update("r01.txt", b"one, changed and longer than before")
    source.delete("r02.txt")
    source.create("new.txt", b"new after the listing")
    source.publish()
    server.put("/dataset1/resourcelist.xml", listing, "application/xml")


def test_sharded_baselines_of_an_older_listing_catch_up_once_combined(
        client: ResourceSyncClient, local: LocalDestination, server: SourceServer,
        source: ResourceSyncSource) -> None:
    """The shards leave out what changed after the listing (before, each refused an updated
    resource for its length and 404'd on a deleted one, at every re-run); combining them then
    applies those changes from the Change Lists, and the checkpoint stands after them
    (issue 26)."""
    older_listing(server, source)
    checkpoints = [baseline(client, local, source, shard=Shard(index, 3)) for index in range(3)]
    assert all(checkpoint.stats["failed"] == 0 for checkpoint in checkpoints)
    assert sum(checkpoint.stats.get("to_catch_up", 0) for checkpoint in checkpoints) == 3
    combined = combine_shards(local, checkpoints, client=client)
    assert held(local) == source.state()
    assert combined.stats["changed_after"] == 3 and "to_catch_up" not in combined.stats
    assert combined.position != ChangePosition.at(combined.at)  # after the changes
    with MirrorState.load(local) as state:  # the catch-up's, standing where the combined does
        saved = state.checkpoint()
        assert saved is not None and Checkpoint.from_json(saved).position == combined.position
    assert audit_is_clean(client, local, source)


def test_shards_combined_with_no_client_leave_the_catch_up_to_the_next_incremental_run(
        client: ResourceSyncClient, local: LocalDestination, server: SourceServer,
        source: ResourceSyncSource, caplog: pytest.LogCaptureFixture) -> None:
    older_listing(server, source)
    combined = combine_shards(local, [baseline(client, local, source, shard=Shard(index, 2))
                                      for index in range(2)])
    assert combined.stats["to_catch_up"] == 3
    assert combined.position == ChangePosition.at(combined.at)
    assert "3 resources changed after the listing the shards read" in caplog.text
    run_incremental(client, local, capability_list_url=source.capability_list_url,
                    checkpoint=combined)
    assert held(local) == source.state()


# -- a hostile Source ----------------------------------------------------------------------------


def test_a_mismatched_fetch_keeps_the_good_copy(
        client: ResourceSyncClient, local: LocalDestination, source: ResourceSyncSource,
        server: SourceServer) -> None:
    baseline(client, local, source)
    good = source.state()[source.uri("r01.txt")]
    source.update("r01.txt", b"a new body")
    source.update("r02.txt", b"another new body")
    source.publish()
    server.corrupt(path_of(source.uri("r01.txt")), times=10)
    with pytest.raises(SyncIncompleteError, match="hash mismatch") as raised:
        baseline(client, local, source)
    assert raised.value.failed == 1
    mirrored = held(local)
    assert mirrored[source.uri("r01.txt")] == good
    assert mirrored[source.uri("r02.txt")] == b"another new body"
    report = run_audit(client, local, capability_list_url=source.capability_list_url)
    assert report.mismatched == 1 and report.examples["mismatched"] == [source.uri("r01.txt")]


def zip_slip_package(uri: str) -> bytes:
    """A package whose manifest is fine, holding a member that climbs out of its folder."""
    buffer = io.BytesIO()
    manifest = Document(Head(md=Metadata(capability="resourcedump-manifest", at=AT)), [
        Entry(uri, md=replace(described(b"inside"), path="/resources/inside.txt"))])
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("resources/inside.txt", b"inside")
        archive.writestr("../../escaped.txt", b"escaped")
        archive.writestr("manifest.xml", document_bytes(manifest))
    return buffer.getvalue()


def test_a_zip_slip_package_writes_nothing(client: ResourceSyncClient, server: SourceServer,
                                           tmp_path: Path) -> None:
    """The member climbs two folders: from a mirror four folders deep in this test's own
    folder, wherever it could land (beside the staged file, the mirror's root or above it) is
    inside that folder."""
    local = LocalDestination(tmp_path / "a" / "b" / "c" / "mirror")
    source = ResourceSyncSource(server, resources={"a.txt": b"a", "b.txt": b"b"})
    source.publish(resource_list=False, change_list=False, resource_dump=True)
    good = server.get_body("/dataset1/resourcedump-1.zip")
    evil = zip_slip_package(source.uri("inside.txt"))
    server.put("/dataset1/evil.zip", evil, "application/zip")
    dump = Document(Head(md=Metadata(capability="resourcedump", at=AT)), [
        Entry(server.url("/dataset1/resourcedump-1.zip"), md=described(good)),
        Entry(server.url("/dataset1/evil.zip"), md=described(evil))])
    server.put("/dataset1/resourcedump.xml", document_bytes(dump), "application/xml")

    with pytest.raises(SyncIncompleteError, match=r"evil\.zip") as raised:
        baseline(client, local, source)
    assert "ZIP member names stay inside the package" in str(raised.value)
    assert held(local) == source.state()  # the good package, and nothing of the evil one
    assert not local.exists(KeyMapper().key(source.uri("inside.txt")))
    assert list(tmp_path.rglob("escaped.txt")) == []
    with MirrorState.load(local) as state:
        assert state.checkpoint() is None


def test_a_change_dump_package_in_a_resource_dump_is_refused(
        client: ResourceSyncClient, local: LocalDestination, server: SourceServer) -> None:
    source = ResourceSyncSource(server, resources={"a.txt": b"a"})
    source.update("a.txt", b"a, changed")
    source.publish(resource_list=False, change_list=False, resource_dump=True, change_dump=True)
    changes = server.get_body("/dataset1/changedump-1.zip")
    dump = Document(Head(md=Metadata(capability="resourcedump", at=AT)), [
        Entry(server.url("/dataset1/changedump-1.zip"), md=described(changes))])
    server.put("/dataset1/resourcedump.xml", document_bytes(dump), "application/xml")

    refused = r"changedump-1\.zip : package refused, nothing of it written: .* in a Resource Dump"
    with pytest.raises(SyncIncompleteError, match=refused):
        baseline(client, local, source)
    assert held(local) == {}  # 11.1: a Resource Dump's packages hold Resource Dump Manifests


def test_uri_path_tricks_land_inside_under_distinct_keys(
        client: ResourceSyncClient, local: LocalDestination, server: SourceServer,
        tmp_path: Path) -> None:
    names = ["a/../b.txt", "b.txt", "../../escape.txt", "%2E%2E/%2E%2E/escape2.txt", "x%2Fy",
             "x/y", "t/", "t%2F", "q?p=../../z", "dir//file"]
    entries = []
    for name in names:
        uri = server.url(f"/tricks/{name}")
        asked = httpx.URL(uri).raw_path.decode()  # where the request really goes
        body = f"served at {asked}".encode()
        server.put(asked, body, "text/plain")
        entries.append(Entry(uri, md=described(body)))
    rl = Document(Head(md=Metadata(capability="resourcelist", at=AT)), entries)
    server.put("/tricks-rl.xml", document_bytes(rl), "application/xml")
    caps = Document(Head(md=Metadata(capability="capabilitylist")), [
        Entry(server.url("/tricks-rl.xml"), md=Metadata(capability="resourcelist"))])
    server.put("/tricks-caps.xml", document_bytes(caps), "application/xml")

    checkpoint = run_baseline(client, local, capability_list_url=server.url("/tricks-caps.xml"))
    assert checkpoint.stats["fetched"] == len(names)
    keys = {KeyMapper().key(entry.loc) for entry in entries}
    assert len(keys) == len(names) and set(local.keys("")) == keys
    assert [path.name for path in tmp_path.iterdir()] == ["mirror"]
    assert held(local) == {entry.loc: server.get_body(httpx.URL(entry.loc).raw_path.decode())
                           for entry in entries}


def test_a_redirect_to_another_host_is_refused(
        client: ResourceSyncClient, local: LocalDestination, source: ResourceSyncSource,
        server: SourceServer) -> None:
    with SourceServer(max_lifetime=60) as other:
        other.put("/stolen", b"stolen", "text/plain")
        target = other.url("/stolen").replace("127.0.0.1", "localhost")
        server.redirect(path_of(source.uri("r01.txt")), target)
        with pytest.raises(SyncIncompleteError, match="not one of the Source's hosts"):
            baseline(client, local, source)
        assert other.requests == []
    assert set(held(local)) == set(source.state()) - {source.uri("r01.txt")}

