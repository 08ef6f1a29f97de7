"""Two spellings of one URI are one resource, and a URI with credentials in it is none (issue
12, item 8): baseline, incremental run, coalescing and audit agree on the URI's normal form.
A failure a re-run cannot fix says what must change instead (item 9)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from airflow_provider_resourcesync.client.navigate import ChangeItem
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import SyncIncompleteError
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.protocol.model import Document, Entry, Head, Metadata
from airflow_provider_resourcesync.protocol.position import ChangeListRef, ChangePosition
from airflow_provider_resourcesync.protocol.writer import document_bytes
from airflow_provider_resourcesync.shell.next_step import next_step
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.audit import run_audit
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.coalesce import coalesce
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import SourceServer
from airflow_provider_resourcesync.writer import MirrorState, ObjectRecord

from .conftest import described, held

AT = datetime(2026, 3, 1, tzinfo=UTC)
BODY = b"the one resource\n"


def publish(server: SourceServer, listed: list[str], changes: list[Entry] = ()) -> str:
    """``/sp/a.txt`` served, a Resource List of ``listed`` (each described as it), a Change
    List of ``changes``; the Capability List's URL."""
    server.put("/sp/a.txt", BODY, "text/plain")
    rl = Document(Head(md=Metadata(capability="resourcelist", at=AT)),
                  [Entry(uri, md=described(BODY)) for uri in listed])
    cl = Document(Head(md=Metadata(capability="changelist", from_=AT)), list(changes))
    server.put("/sp/rl.xml", document_bytes(rl), "application/xml")
    server.put("/sp/cl.xml", document_bytes(cl), "application/xml")
    caps = Document(Head(md=Metadata(capability="capabilitylist")), [
        Entry(server.url("/sp/rl.xml"), md=Metadata(capability="resourcelist")),
        Entry(server.url("/sp/cl.xml"), md=Metadata(capability="changelist"))])
    server.put("/sp/caps.xml", document_bytes(caps), "application/xml")
    return server.url("/sp/caps.xml")


def respelled(server: SourceServer, *, credentials: str = "") -> str:
    """``/sp/a.txt`` spelled otherwise: upper-case scheme, a leading zero in the port, a
    fragment; or with ``credentials`` before the host."""
    if credentials:
        return server.url("/sp/a.txt").replace("http://", f"http://{credentials}@")
    port = server.url("/").split(":")[2].split("/")[0]
    return f"HTTP://127.0.0.1:0{port}/sp/a.txt#part"


def test_a_uri_with_credentials_is_refused_and_the_plain_one_mirrored_alone(
        client: ResourceSyncClient, local: LocalDestination, server: SourceServer) -> None:
    plain, secret = server.url("/sp/a.txt"), respelled(server, credentials="user:pw")
    caps = publish(server, [plain, secret])
    with pytest.raises(SyncIncompleteError) as raised:
        run_baseline(client, local, capability_list_url=caps)
    assert raised.value.failed == 1
    [(uri, reason)] = raised.value.failures
    assert uri == secret and "holds user information" in reason
    assert not raised.value.rerun_helps and "re-run" not in str(raised.value)
    assert "the Source must fix the document or the URIs it lists" in str(raised.value)
    assert held(local) == {plain: BODY}
    gets = [record for record in server.requests if record.path == "/sp/a.txt"]
    assert len(gets) == 1 and "authorization" not in gets[0].headers

    report = run_audit(client, local, capability_list_url=caps, deep=True)
    assert report.clean and report.checked == 1 and report.refused == 1
    assert report.listed == 2


def test_two_spellings_of_one_uri_are_one_resource(
        client: ResourceSyncClient, local: LocalDestination, server: SourceServer) -> None:
    plain = server.url("/sp/a.txt")
    caps = publish(server, [plain, respelled(server)])
    checkpoint = run_baseline(client, local, capability_list_url=caps)
    assert checkpoint.stats["fetched"] == 1 and checkpoint.stats["unchanged"] == 1
    assert held(local) == {plain: BODY}
    with MirrorState.load(local) as state:
        assert [record.uri for record in state.records()] == [plain]
    assert run_audit(client, local, capability_list_url=caps, deep=True).clean

    server.reset_log()  # listed the other way round, nothing is fetched again
    caps = publish(server, [respelled(server), plain])
    again = run_baseline(client, local, capability_list_url=caps, remove_missing=True)
    assert server.count("/sp/a.txt") == 0 and again.stats["unchanged"] == 2
    assert held(local) == {plain: BODY}


def test_a_deleted_change_of_a_uri_with_credentials_removes_nothing(
        client: ResourceSyncClient, local: LocalDestination, server: SourceServer) -> None:
    plain, secret = server.url("/sp/a.txt"), respelled(server, credentials="user")
    checkpoint = run_baseline(client, local, capability_list_url=publish(server, [plain]))
    deleted = Entry(secret, md=Metadata(change="deleted", datetime=AT + timedelta(hours=1)))
    caps = publish(server, [plain], [deleted])
    with pytest.raises(SyncIncompleteError, match="holds user information"):
        run_incremental(client, local, capability_list_url=caps, checkpoint=checkpoint)
    assert held(local) == {plain: BODY}


def test_changes_of_two_spellings_coalesce_into_one_winner() -> None:
    ref = ChangeListRef("http://h/cl.xml")
    changes = [Entry(uri, md=Metadata(change=change, datetime=AT)) for uri, change in (
        ("http://h/x", "created"), ("HTTP://H:80/x#f", "updated"), ("http://h:80/x", "deleted"),
        ("http://h/y", "created"))]
    coalesced = coalesce((ChangeItem(ref, n, entry) for n, entry in enumerate(changes)),
                         ChangePosition())
    assert [(winner.entry.loc, winner.order) for winner in coalesced.winners] == [
        ("http://h:80/x", 2), ("http://h/y", 3)]


def test_a_mirror_recorded_under_other_spellings_loads_under_normal_forms(
        local: LocalDestination) -> None:
    # A mirror made before URIs had one normal form: its records come back under that form,
    # and one with credentials in it (never mapped now) is dropped.
    digest = Hashes.parse("md5:" + "0" * 32)
    with MirrorState.load(local) as state:
        state.put(ObjectRecord("HTTP://H:80/x#f", "http/h/x", 1, digest))
        state.put(ObjectRecord("http://user@h/y", "http/h/y", 1, digest))
        state.save(checkpoint=None)
    with MirrorState.load(local) as state:
        assert [record.uri for record in state.records()] == ["http://h/x"]


def test_a_run_with_lasting_and_transient_failures_says_what_to_change(
        client: ResourceSyncClient, fragile: ResourceSyncClient, local: LocalDestination,
        server: SourceServer) -> None:
    server.put("/sp/b.txt", b"b", "text/plain")
    server.fail("/sp/b.txt", 503)
    listed = [server.url("/sp/a.txt"), server.url("/sp/b.txt"),
              respelled(server, credentials="user")]
    with pytest.raises(SyncIncompleteError) as raised:
        run_baseline(fragile, local, capability_list_url=publish(server, listed))
    error = raised.value
    assert (error.failed, error.lasting, error.rerun_helps) == (2, 1, False)
    assert "re-run" not in str(error) and "re-run" not in next_step(error)
    assert "1 of the failures will fail again until something changes: the Source must fix " \
           "the document or the URIs it lists (a safety rule refused what is named, and " \
           "nothing was written from it); the other 1 may be transient" in str(error)

    with pytest.raises(SyncIncompleteError) as raised:  # the transient one alone: re-run
        run_baseline(fragile, local, capability_list_url=publish(server, listed[:2]))
    assert raised.value.rerun_helps and "re-run the task to converge" in str(raised.value)
    assert "re-run this task" in next_step(raised.value)


def test_a_key_the_destination_can_never_hold_is_a_lasting_failure_of_its_resource(
        client: ResourceSyncClient, server: SourceServer, tmp_path: Path) -> None:
    """``/sp/x`` and ``/sp/x/y`` cannot both be files on a local disk: whichever comes second
    fails for good (re-running cannot help), and the run says what to change."""
    server.put("/sp/x", BODY, "text/plain")
    server.put("/sp/x/y", BODY, "text/plain")
    mirror = LocalDestination(tmp_path / "mirror")
    listed = [server.url("/sp/a.txt"), server.url("/sp/x"), server.url("/sp/x/y")]
    with pytest.raises(SyncIncompleteError) as raised:
        run_baseline(client, mirror, capability_list_url=publish(server, listed))
    assert len(held(mirror)) == 2 and listed[0] in held(mirror)  # the run went on
    assert (raised.value.failed, raised.value.lasting) == (1, 1)
    assert "key_prefixes" in str(raised.value) and "re-run" not in str(raised.value)
    assert "key_prefixes" in next_step(raised.value)
