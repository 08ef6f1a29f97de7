"""A dump's manifest names resources on the Source's origins only: a package naming another
origin (a cloud metadata address, another Source held in the same destination) is refused whole,
and nothing of it is written or deleted (DESIGN.md, "Safety rules"; spec 11.2, 13.2)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import SyncIncompleteError
from airflow_provider_resourcesync.protocol.model import (
    Capability,
    Change,
    Document,
    Entry,
    Head,
    Metadata,
)
from airflow_provider_resourcesync.protocol.package import PackageWriter
from airflow_provider_resourcesync.protocol.writer import document_bytes
from airflow_provider_resourcesync.shell.next_step import next_step
from airflow_provider_resourcesync.storage.base import Destination, ObjectInfo
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from .conftest import described, held
from .test_baseline import baseline
from .test_incremental import incremental

AT = datetime(2026, 3, 1, tzinfo=UTC)
METADATA = "http://169.254.169.254/latest/meta-data"
OTHER = "https://other.example.org/records/1.json"


def _package(head: Head, entries: list[tuple[Entry, bytes | None]]) -> bytes:
    buffer = io.BytesIO()
    with PackageWriter(buffer, head) as package:
        for entry, body in entries:
            if body is None:
                package.add_deleted(entry)
            else:
                package.add(entry, body)
    return buffer.getvalue()


def _serve_dump(server: SourceServer, source: ResourceSyncSource, capability: Capability,
                data: bytes, **times: datetime) -> None:
    """``data`` as the only package of the Source's Resource Dump or Change Dump."""
    name = "resourcedump" if capability is Capability.RESOURCE_DUMP else "changedump"
    server.put(f"{source.prefix}/hostile.zip", data, "application/zip")
    md = described(data)
    package = Entry(server.url(f"{source.prefix}/hostile.zip"),
                    md=Metadata(hash=md.hash, length=md.length, **times))
    dump = Document(Head(md=Metadata(capability=capability, **times)), [package])
    server.put(f"{source.prefix}/{name}.xml", document_bytes(dump), "application/xml")


def test_a_resource_dump_naming_a_metadata_address_is_refused_whole(
        client: ResourceSyncClient, destination: Destination, server: SourceServer) -> None:
    source = ResourceSyncSource(server, resources={"a.txt": b"a"})
    source.publish(resource_list=False, change_list=False, resource_dump=True)
    head = Head(md=Metadata(capability=Capability.RESOURCE_DUMP_MANIFEST, at=AT))
    _serve_dump(server, source, Capability.RESOURCE_DUMP, _package(head, [
        (Entry(source.uri("a.txt")), b"a"),
        (Entry(METADATA), b"ami-id\ninstance-id\n")]), at=AT)

    with pytest.raises(SyncIncompleteError) as raised:
        baseline(client, destination, source, method="resourcedump")

    message = str(raised.value)
    assert "hostile.zip : package refused, nothing of it written" in message
    # Issue 12, item 9: running again cannot help; the message says what to change instead.
    assert not raised.value.rerun_helps and raised.value.lasting == 1
    assert "re-run" not in message and "add it to the connection's allowed hosts" in message
    assert "change what makes 1 of the failures lasting" in next_step(raised.value)
    assert METADATA in message and "169.254.169.254" in message
    assert held(destination) == {}  # not even a.txt: the package is refused whole
    assert not destination.exists(KeyMapper().key(METADATA))


def test_a_change_dump_cannot_delete_or_overwrite_another_origins_object(
        client: ResourceSyncClient, destination: Destination, server: SourceServer) -> None:
    source = ResourceSyncSource(server, resources={"a.txt": b"a"})
    source.publish()
    start = baseline(client, destination, source)
    other_key = KeyMapper().key(OTHER)  # another Source mirrored into the same destination
    with destination.stage(other_key) as staged:
        staged.file.write(b"held for another Source")
        staged.commit(ObjectInfo(OTHER, 23, described(b"held for another Source").hash))
    before = held(destination)
    source.update("a.txt", b"a, changed")
    source.publish(change_list=False, change_dump=True)
    since = start.position.time or AT
    head = Head(md=Metadata(capability=Capability.CHANGE_DUMP_MANIFEST, from_=since,
                            until=since + timedelta(hours=1)))
    changed = since + timedelta(minutes=1)
    _serve_dump(server, source, Capability.CHANGE_DUMP, _package(head, [
        (Entry(source.uri("a.txt"), md=Metadata(change=Change.UPDATED, datetime=changed)),
         b"a, changed"),
        (Entry(OTHER, md=Metadata(change=Change.DELETED, datetime=changed)), None)]),
        from_=since, until=since + timedelta(hours=1))

    with pytest.raises(SyncIncompleteError, match=r"hostile\.zip : package refused, nothing of "
                                                  r"it written: .*other\.example\.org"):
        incremental(client, destination, source, start, method="changedump")

    assert held(destination) == before
    assert destination.read_bytes(other_key) == b"held for another Source"
