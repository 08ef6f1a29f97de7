"""The test Source: its documents read back with our reader and pass our validator."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from airflow_provider_resourcesync.protocol.discovery import (
    resourcesync_links_from_header,
    resourcesync_links_from_html,
    sitemaps_from_robots,
)
from airflow_provider_resourcesync.protocol.hashes import Digester
from airflow_provider_resourcesync.protocol.model import Change, Document, DocumentKind
from airflow_provider_resourcesync.protocol.package import open_package
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.validate import validate_source
from airflow_provider_resourcesync.testing import FakeClock, ResourceSyncSource, SourceServer

START = datetime(2026, 1, 1, tzinfo=UTC)
INITIAL = {f"r{number}.txt": f"resource {number}\n".encode() for number in range(1, 6)}



@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as opened:
        yield opened


@pytest.fixture
def source(server: SourceServer) -> ResourceSyncSource:
    return ResourceSyncSource(server, resources=INITIAL)


def fetch(client: httpx.Client, url: str) -> Document:
    response = client.get(url)
    assert response.status_code == 200, url
    return read_document(response.content, url=url)


def changes_in(document: Document) -> list[tuple[str, str | None, datetime | None]]:
    return [(e.loc, e.md.change if e.md else None, e.change_time) for e in document]


def test_the_documents_lead_from_the_well_known_uri_down(
        source: ResourceSyncSource, client: httpx.Client) -> None:
    source.publish()
    description = fetch(client, source.server.url("/.well-known/resourcesync"))
    assert description.kind is DocumentKind.SOURCE_DESCRIPTION
    assert [e.loc for e in description] == [source.capability_list_url]
    capabilities = fetch(client, source.capability_list_url)
    assert capabilities.kind is DocumentKind.CAPABILITY_LIST
    assert capabilities.head.up == source.source_description_url
    listed = {e.md.capability: e.loc for e in capabilities if e.md}
    assert listed == {"resourcelist": source.resource_list_url,
                      "changelist": source.change_list_url}
    resources = fetch(client, listed["resourcelist"])
    assert resources.kind is DocumentKind.RESOURCE_LIST
    assert resources.head.up == source.capability_list_url
    assert resources.head.md and resources.head.md.at is not None
    changes = fetch(client, listed["changelist"])
    assert changes.kind is DocumentKind.CHANGE_LIST
    assert changes.head.md and changes.head.md.from_ == START and changes.head.md.until is None
    assert changes.entries == []


def test_every_document_published_validates_clean(
        source: ResourceSyncSource, client: httpx.Client) -> None:
    source.create("new.txt", b"new")
    source.update("r1.txt", b"changed")
    source.close_changelist()
    source.delete("r2.txt")
    checked = 0
    for options in ({}, {"gzip": True}, {"changelist_style": "1.0"}, {"max_entries": 2}):
        urls = source.publish(resource_dump=True, change_dump=True, **options)
        for url in urls:
            findings = validate_source(client.get(url).content, url=url)
            assert findings == [], [str(f) for f in findings]
            checked += 1
    assert checked > 40


def test_resource_list_entries_describe_the_served_bodies(
        source: ResourceSyncSource, client: httpx.Client) -> None:
    source.publish()
    entries = fetch(client, source.resource_list_url).entries
    assert [e.loc for e in entries] == [source.uri(name) for name in sorted(INITIAL)]
    for entry in entries:
        assert entry.md is not None and entry.lastmod == START
        assert entry.md.type == "text/plain"
        assert entry.md.hash and entry.md.hash.get("md5") and entry.md.hash.get("sha-256")
        response = client.get(entry.loc)
        assert response.headers["content-type"] == "text/plain"
        digester = Digester.for_expected(entry.md.hash)
        digester.update(response.content)
        digester.verify(entry.loc, hashes=entry.md.hash, length=entry.md.length)
    assert {e.loc: client.get(e.loc).content for e in entries} == source.state()


def test_changes_appear_in_the_open_change_list_in_order(
        source: ResourceSyncSource, client: httpx.Client) -> None:
    created = source.create("new.txt", b"new")
    updated = source.update("r1.txt", b"changed")
    deleted = source.delete("r2.txt")
    source.publish()
    document = fetch(client, source.change_list_url)
    assert document.head.md and document.head.md.until is None
    assert changes_in(document) == [
        (source.uri("new.txt"), "created", created.datetime),
        (source.uri("r1.txt"), "updated", updated.datetime),
        (source.uri("r2.txt"), "deleted", deleted.datetime),
    ]
    assert created.datetime < updated.datetime < deleted.datetime
    assert all(e.md and e.md.datetime and e.lastmod is None for e in document)
    deleted_entry = document.entries[2]
    assert deleted_entry.md and deleted_entry.md.hash is None
    assert client.get(source.uri("r2.txt")).status_code == 404
    assert client.get(source.uri("r1.txt")).content == b"changed"
    assert source.changes() == [created, updated, deleted]


def test_closing_a_change_list_makes_an_index(
        source: ResourceSyncSource, client: httpx.Client) -> None:
    first = source.create("a.txt", b"a")
    until = source.close_changelist()
    second = source.update("a.txt", b"b")
    source.publish()
    index = fetch(client, source.change_list_url)
    assert index.kind is DocumentKind.CHANGE_LIST_INDEX
    assert index.head.up == source.capability_list_url
    assert [(e.md.from_, e.md.until) for e in index if e.md] == [(START, until), (until, None)]
    closed, open_ = (fetch(client, e.loc) for e in index)
    for part in (closed, open_):
        assert part.head.index == source.change_list_url
        assert part.head.up == source.capability_list_url
    assert closed.head.md and closed.head.md.until == until
    assert open_.head.md and open_.head.md.until is None and open_.head.md.from_ == until
    assert [e.change_time for e in closed] == [first.datetime]
    assert [e.change_time for e in open_] == [second.datetime]


def test_a_long_resource_list_is_split_into_parts_and_an_index(
        source: ResourceSyncSource, client: httpx.Client) -> None:
    source.publish(max_entries=2)
    index = fetch(client, source.resource_list_url)
    assert index.kind is DocumentKind.RESOURCE_LIST_INDEX
    assert len(index) == 3
    locs = []
    for entry in index:
        part = fetch(client, entry.loc)
        assert part.kind is DocumentKind.RESOURCE_LIST
        assert part.head.index == source.resource_list_url
        assert len(part) <= 2
        locs += [e.loc for e in part]
    assert locs == [source.uri(name) for name in sorted(INITIAL)]


def test_a_resource_dump_package_verifies(
        source: ResourceSyncSource, client: httpx.Client) -> None:
    source.publish(resource_dump=True)
    dump = fetch(client, source.resource_dump_url)
    assert dump.kind is DocumentKind.RESOURCE_DUMP
    (package_entry,) = dump.entries
    assert package_entry.md and package_entry.md.type == "application/zip"
    zipped = client.get(package_entry.loc).content
    assert package_entry.md.length == len(zipped)
    contents = package_entry.links_for("contents")[0]
    with open_package(io.BytesIO(zipped), url=package_entry.loc) as package:
        assert package.kind is DocumentKind.RESOURCE_DUMP_MANIFEST
        held = {entry.loc: b"".join(package.read_verified(entry))
                for entry, _ in package.entries()}
        assert fetch(client, contents.href) == package.manifest
    assert held == source.state()


def test_change_dump_packages_hold_the_changes(
        source: ResourceSyncSource, client: httpx.Client) -> None:
    source.create("a.txt", b"a1")
    source.update("a.txt", b"a2")
    until = source.close_changelist()
    source.delete("a.txt")
    source.publish(change_dump=True)
    dump = fetch(client, source.change_dump_url)
    assert dump.kind is DocumentKind.CHANGE_DUMP
    assert dump.head.md and dump.head.md.from_ == START and dump.head.md.until is None
    first, second = dump.entries
    assert first.md and (first.md.from_, first.md.until) == (START, until)
    assert second.md and second.md.from_ == until and second.md.until is not None
    held = []
    for entry in dump:
        with open_package(io.BytesIO(client.get(entry.loc).content), url=entry.loc) as package:
            assert package.kind is DocumentKind.CHANGE_DUMP_MANIFEST
            for change, opener in package.entries():
                body = None if opener is None else b"".join(package.read_verified(change))
                held.append((change.loc, change.change, change.change_time, body))
    assert held == [(r.uri, r.change, r.datetime, r.body) for r in source.changes()]
    assert [h[1] for h in held] == [Change.CREATED, Change.UPDATED, Change.DELETED]


def test_one_zero_style_change_lists_carry_lastmod_and_no_datetime(
        source: ResourceSyncSource, client: httpx.Client) -> None:
    record = source.create("a.txt", b"a")
    source.delete("a.txt")
    source.publish(changelist_style="1.0")
    entries = fetch(client, source.change_list_url).entries
    assert entries[0].lastmod == record.datetime
    assert all(e.md and e.md.datetime is None and e.lastmod is not None for e in entries)


def test_gzip_documents_are_named_and_served_compressed(
        source: ResourceSyncSource, client: httpx.Client) -> None:
    urls = source.publish(gzip=True)
    assert source.capability_list_url.endswith("/capabilitylist.xml.gz")
    assert all(url.endswith(".xml.gz") for url in urls[:-1])
    response = client.get(source.resource_list_url)
    assert response.content[:2] == b"\x1f\x8b"
    assert response.headers["content-type"] == "application/gzip"
    assert len(read_document(response.content)) == len(INITIAL)
    assert [e.loc for e in fetch(client, source.source_description_url)] == [
        source.capability_list_url]


def test_discovery_pages_point_at_the_documents(
        source: ResourceSyncSource, client: httpx.Client) -> None:
    source.publish()
    source.serve_discovery_pages()
    page_url = source.server.url("/index.html")
    assert resourcesync_links_from_html(client.get(page_url).content, page_url) == [
        source.capability_list_url]
    header_url = source.server.url("/page-with-header")
    headers = client.get(header_url).headers.get_list("link")
    assert resourcesync_links_from_header(headers, header_url) == [source.capability_list_url]
    robots_url = source.server.url("/robots.txt")
    assert sitemaps_from_robots(client.get(robots_url).text, robots_url) == [
        source.resource_list_url]


def test_the_fake_clock_gives_distinct_datetimes() -> None:
    clock = FakeClock()
    assert [clock(), clock()] == [START, START + timedelta(seconds=1)]
    hourly = FakeClock(datetime(2030, 5, 1, tzinfo=UTC), timedelta(hours=1))
    assert [hourly(), hourly()] == [datetime(2030, 5, 1, h, tzinfo=UTC) for h in (0, 1)]


def test_a_clock_of_the_test(server: SourceServer, client: httpx.Client) -> None:
    now = datetime(2031, 2, 3, tzinfo=UTC)
    source = ResourceSyncSource(server, prefix="/other", clock=lambda: now)
    record = source.create("x y.txt", b"x")
    assert record.datetime == now == source.created
    assert source.uri("x y.txt") == server.url("/other/res/x%20y.txt")
    assert client.get(source.uri("x y.txt")).content == b"x"
    source.publish()
    assert validate_source(client.get(source.change_list_url).content) == []


def test_mutations_refuse_what_does_not_fit(source: ResourceSyncSource) -> None:
    with pytest.raises(ValueError, match="exists"):
        source.create("r1.txt", b"again")
    with pytest.raises(KeyError):
        source.update("missing", b"x")
    with pytest.raises(KeyError):
        source.delete("missing")
    with pytest.raises(ValueError, match="prefix"):
        ResourceSyncSource(source.server, prefix="no-slash")


def test_mutations_while_clients_read(
        source: ResourceSyncSource, client: httpx.Client) -> None:
    def writer() -> None:
        for number in range(40):
            source.create(f"w{number}.txt", str(number).encode())
            if number % 10 == 0:
                source.publish()

    thread = threading.Thread(target=writer)
    thread.start()
    while thread.is_alive():
        source.publish()
        content = client.get(source.change_list_url).content
        assert validate_source(content) == []
    thread.join()
    source.publish()
    assert len(fetch(client, source.change_list_url)) == 40
    assert len(source.state()) == len(INITIAL) + 40
