"""Dumps as real Sources write them: read, with a warning that names what the Source got wrong
(spec 11.2 asks for manifest paths that start with '/'; resync 2.0.1 writes ``path="a.txt"``)."""

from __future__ import annotations

import io
import logging
import zipfile
from datetime import UTC, datetime

import pytest

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.protocol.model import (
    Capability,
    Document,
    Entry,
    Head,
    Metadata,
)
from airflow_provider_resourcesync.protocol.writer import document_bytes
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from .conftest import described, held
from .test_baseline import baseline

AT = datetime(2026, 3, 1, tzinfo=UTC)
BODIES = {"café.txt": b"coffee\n", "sub/b.txt": b"bee\n"}


def _unrooted_package(source: ResourceSyncSource) -> bytes:
    """A Resource Dump package whose manifest paths have no leading '/', as resync writes them."""
    entries = [Entry(source.uri(name), md=Metadata(path=name, length=len(body)))
               for name, body in BODIES.items()]
    head = Head(md=Metadata(capability=Capability.RESOURCE_DUMP_MANIFEST, at=AT))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.xml", document_bytes(Document(head, entries)))
        for name, body in BODIES.items():
            archive.writestr(name, body)
    return buffer.getvalue()


def test_a_resource_dump_with_paths_lacking_the_leading_slash_is_baselined_with_a_warning(
        client: ResourceSyncClient, destination: Destination, server: SourceServer,
        caplog: pytest.LogCaptureFixture) -> None:
    source = ResourceSyncSource(server, resources=BODIES)
    source.publish(resource_list=False, change_list=False, resource_dump=True)
    data = _unrooted_package(source)
    server.put(f"{source.prefix}/resync.zip", data, "application/zip")
    md = described(data)
    package = Entry(server.url(f"{source.prefix}/resync.zip"),
                    md=Metadata(hash=md.hash, length=md.length, at=AT))
    dump = Document(Head(md=Metadata(capability=Capability.RESOURCE_DUMP, at=AT)), [package])
    server.put(f"{source.prefix}/resourcedump.xml", document_bytes(dump), "application/xml")

    with caplog.at_level(logging.WARNING):
        baseline(client, destination, source, method="resourcedump")

    assert held(destination) == {source.uri(name): body for name, body in BODIES.items()}
    assert any("resync.zip" in record.getMessage() and "2 of its manifest paths lack the "
               "leading '/'" in record.getMessage() for record in caplog.records)
