"""Walking documents over real sockets: capabilities (9), Resource Lists and their indexes (10),
changes after a position across a Change List Index (12), dump packages (11, 13)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from urllib.parse import urlsplit

import pytest

from airflow_provider_resourcesync.client.navigate import (
    ChangeItem,
    capability_documents,
    change_dump_packages_after,
    changes_after,
    resource_dump_packages,
    resource_list,
)
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import DocumentError, FetchError
from airflow_provider_resourcesync.protocol.model import (
    Capability,
    Document,
    Entry,
    Head,
    Metadata,
    Root,
)
from airflow_provider_resourcesync.protocol.position import ChangePosition
from airflow_provider_resourcesync.protocol.writer import document_bytes
from airflow_provider_resourcesync.testing import ChangeRecord, ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.testing.source import ChangeListStyle

from .conftest import INITIAL


def put_document(server: SourceServer, path: str, md: Metadata, entries: Iterable[Entry],
                 root: Root = Root.URLSET) -> str:
    server.put(path, document_bytes(Document(Head(root=root, md=md), list(entries))),
               "application/xml")
    return server.url(path)


def path(url: str) -> str:
    return urlsplit(url).path


def advanced(items: Iterable[ChangeItem]) -> ChangePosition:
    """The position once ``items`` are consumed, from the start."""
    position = ChangePosition()
    for item in items:
        position = position.advance(item.list, item.index, item.entry)
    return position


def described(items: Iterable[ChangeItem]) -> list[tuple[str, str | None, datetime | None]]:
    return [(item.entry.loc, item.entry.md.change if item.entry.md else None,
             item.entry.change_time) for item in items]


def recorded(records: Iterable[ChangeRecord]) -> list[tuple[str, str | None, datetime | None]]:
    return [(record.uri, record.change, record.datetime) for record in records]


def three_lists(source: ResourceSyncSource, style: ChangeListStyle = "1.1"
                ) -> list[ChangeRecord]:
    """Two closed Change Lists and an open one, two changes each, under an index."""
    source.create("a.txt", b"a")
    source.update("r1.txt", b"r1 again")
    source.close_changelist()
    source.delete("r2.txt")
    source.create("b.txt", b"b")
    source.close_changelist()
    source.update("a.txt", b"a again")
    source.create("c.txt", b"c")
    source.publish(changelist_style=style)
    return source.changes()


def part(source: ResourceSyncSource, number: int) -> str:
    return f"{source.prefix}/changelist-{number}.xml"


# -- capabilities (9) ----------------------------------------------------------------------------

def test_capability_documents_maps_each_capability_to_its_document(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.publish(resource_dump=True, change_dump=True)
    assert capability_documents(client, source.capability_list_url) == {
        Capability.RESOURCE_LIST: source.resource_list_url,
        Capability.RESOURCE_DUMP: source.resource_dump_url,
        Capability.CHANGE_LIST: source.change_list_url,
        Capability.CHANGE_DUMP: source.change_dump_url,
    }


def test_capability_spelling_slips_are_read_leniently(
        server: SourceServer, client: ResourceSyncClient) -> None:
    url = put_document(server, "/caps.xml", Metadata(capability="capabilityList"), [
        Entry(server.url("/rl.xml"), md=Metadata(capability="resourceList")),
        Entry(server.url("/new.xml"), md=Metadata(capability="somethingnew")),
    ])
    assert capability_documents(client, url) == {Capability.RESOURCE_LIST: server.url("/rl.xml")}


def test_a_document_that_is_not_a_capability_list_is_refused(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.publish()
    with pytest.raises(DocumentError, match="expected a Capability List, found a Resource List"):
        capability_documents(client, source.resource_list_url)


# -- Resource Lists (10) -------------------------------------------------------------------------

def test_a_resource_list_index_is_walked_lazily_part_by_part(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.publish(max_entries=2)
    server = source.server
    parts = [f"{source.prefix}/resourcelist-0000{number}.xml" for number in (1, 2, 3)]
    walk = resource_list(client, source.resource_list_url)
    assert walk.head.is_index and walk.urls == []
    assert walk.at is not None and walk.head.md is not None and walk.at == walk.head.md.at
    assert server.count() == 1 and server.count(path(source.resource_list_url)) == 1
    entries = iter(walk)
    first = [next(entries), next(entries)]
    assert [server.count(p) for p in parts] == [1, 0, 0]
    assert walk.urls == [server.url(parts[0])]
    locs = [entry.loc for entry in [*first, *entries]]
    assert locs == sorted(source.uri(name) for name in INITIAL)
    assert [server.count(p) for p in parts] == [1, 1, 1]
    assert walk.urls == [server.url(p) for p in parts]


def test_a_single_resource_list_can_be_walked_again_for_one_304(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.publish()
    with resource_list(client, source.resource_list_url) as walk:
        assert not walk.head.is_index and walk.urls == [source.resource_list_url]
        assert [entry.loc for entry in walk] == sorted(source.uri(name) for name in INITIAL)
        assert len(list(walk)) == len(INITIAL)
    assert source.server.count(path(source.resource_list_url), status=304) == 1


def test_an_index_served_as_a_urlset_is_read_as_an_index(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.publish(max_entries=3)
    server = source.server
    url = put_document(server, "/plain-index.xml", Metadata(capability="resourcelist"), [
        Entry(server.url(f"{source.prefix}/resourcelist-0000{number}.xml"),
              md=Metadata(capability="resourcelist")) for number in (1, 2)])
    walk = resource_list(client, url)
    assert [entry.loc for entry in walk] == sorted(source.uri(name) for name in INITIAL)
    assert len(walk.urls) == 2


def test_an_index_inside_an_index_is_refused(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.publish(max_entries=2)
    url = put_document(source.server, "/nested.xml", Metadata(capability="resourcelist"),
                       [Entry(source.resource_list_url)], root=Root.SITEMAPINDEX)
    with pytest.raises(DocumentError, match="indexes do not nest") as raised:
        list(resource_list(client, url))
    assert raised.value.url == source.resource_list_url


def test_a_list_of_another_capability_is_refused(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.publish()
    with pytest.raises(DocumentError, match="expected a Resource List or its index, found a "
                                            "Change List"):
        resource_list(client, source.change_list_url)


def test_a_missing_part_fails_naming_it(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.publish(max_entries=2)
    missing = f"{source.prefix}/resourcelist-00002.xml"
    source.server.remove(missing)
    entries = iter(resource_list(client, source.resource_list_url))
    assert len([next(entries), next(entries)]) == 2
    with pytest.raises(FetchError) as raised:
        next(entries)
    assert raised.value.url == source.server.url(missing) and raised.value.status == 404


# -- Change Lists (12) ---------------------------------------------------------------------------

def test_closed_lists_ending_before_the_position_are_never_fetched(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    changes = three_lists(source)
    items = list(changes_after(client, source.change_list_url, ChangePosition.at(
        changes[4].datetime)))
    assert described(items) == recorded(changes[4:])
    assert [source.server.count(part(source, n)) for n in (1, 2, 3)] == [0, 0, 1]


def test_reading_resumes_in_the_middle_of_a_closed_list(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    changes = three_lists(source)
    everything = list(changes_after(client, source.change_list_url, ChangePosition()))
    assert described(everything) == recorded(changes)
    source.server.reset_log()
    later = list(changes_after(client, source.change_list_url, advanced(everything[:3])))
    assert later == everything[3:]
    assert later[0].list.url == source.server.url(part(source, 2)) and later[0].index == 1
    assert [source.server.count(part(source, n)) for n in (1, 2, 3)] == [0, 1, 1]


def test_a_position_in_the_open_list_yields_exactly_the_later_changes(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    for name in ("r1.txt", "r2.txt", "r3.txt"):
        source.update(name, b"new " + name.encode())
    source.publish()
    position = advanced(list(changes_after(client, source.change_list_url, ChangePosition()))[:2])
    source.delete("r4.txt")
    source.publish()
    later = list(changes_after(client, source.change_list_url, position))
    assert described(later) == recorded(source.changes()[2:])
    assert [item.index for item in later] == [2, 3]


def test_a_list_closed_and_moved_into_the_index_resumes_exactly(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.create("a.txt", b"a")
    source.update("r1.txt", b"r1 again")
    source.update("a.txt", b"a again")
    source.publish()
    position = advanced(list(changes_after(client, source.change_list_url, ChangePosition()))[:2])
    assert position.list_url == source.change_list_url
    source.delete("r2.txt")
    source.close_changelist()
    source.create("b.txt", b"b")
    source.publish()
    later = list(changes_after(client, source.change_list_url, position))
    assert described(later) == recorded(source.changes()[2:])
    assert [(item.list.url, item.index) for item in later] == [
        (source.server.url(part(source, 1)), 2), (source.server.url(part(source, 1)), 3),
        (source.server.url(part(source, 2)), 0)]


def test_version_1_0_lists_are_read_by_their_lastmod(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    changes = three_lists(source, "1.0")
    everything = list(changes_after(client, source.change_list_url, ChangePosition()))
    assert all(item.entry.md and item.entry.md.datetime is None for item in everything)
    assert described(everything) == recorded(changes)
    source.server.reset_log()
    at = list(changes_after(client, source.change_list_url, ChangePosition.at(
        changes[2].datetime)))
    assert described(at) == recorded(changes[2:])
    assert list(changes_after(client, source.change_list_url, advanced(everything[:3]))) \
        == everything[3:]
    assert source.server.count(part(source, 1)) == 0


def test_an_unchanged_change_list_index_costs_one_304_per_document(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    three_lists(source)
    first = list(changes_after(client, source.change_list_url, ChangePosition()))
    source.server.reset_log()
    assert list(changes_after(client, source.change_list_url, ChangePosition())) == first
    requests = source.server.requests
    assert {record.status for record in requests} == {304}
    assert sorted(record.path for record in requests) == sorted(
        [path(source.change_list_url), *(part(source, n) for n in (1, 2, 3))])


# -- dumps (11, 13) ------------------------------------------------------------------------------

def two_packages(source: ResourceSyncSource) -> datetime:
    """A Change Dump of a closed package and an open one; the first package's ``until``."""
    source.create("a.txt", b"a")
    until = source.close_changelist()
    source.delete("r2.txt")
    source.publish(change_dump=True)
    return until


def test_change_dump_packages_after_a_time(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    until = two_packages(source)
    url = source.change_dump_url
    packages = list(change_dump_packages_after(client, url, None))
    assert [path(p.loc) for p in packages] == [
        f"{source.prefix}/changedump-1.zip", f"{source.prefix}/changedump-2.zip"]
    assert list(change_dump_packages_after(client, url, source.created)) == packages
    assert list(change_dump_packages_after(client, url, until)) == packages[1:]


def test_change_dump_packages_across_an_index(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    until = two_packages(source)
    server = source.server
    first, second = client.read_document(source.change_dump_url).entries
    dumps = [(source.created, until, first), (until, None, second)]
    children = [
        Entry(put_document(server, f"/changedump-{n}.xml", Metadata(
            capability="changedump", from_=start, until=end), [package]),
            md=Metadata(from_=start, until=end))
        for n, (start, end, package) in enumerate(dumps, 1)]
    index = put_document(server, "/changedump-index.xml", Metadata(
        capability="changedump", from_=source.created), children, root=Root.SITEMAPINDEX)
    assert list(change_dump_packages_after(client, index, None)) == [first, second]
    server.reset_log()
    assert list(change_dump_packages_after(client, index, until)) == [second]
    assert server.count("/changedump-1.xml") == 0


def test_resource_dump_packages_across_an_index(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.publish(resource_dump=True)
    assert [path(p.loc) for p in resource_dump_packages(client, source.resource_dump_url)] == [
        f"{source.prefix}/resourcedump-1.zip"]
    server = source.server
    md = Metadata(capability="resourcedump", at=source.created)
    packages = [Entry(server.url(f"/p{n}.zip"), md=Metadata(type="application/zip"))
                for n in range(3)]
    children = [Entry(put_document(server, "/rd-1.xml", md, packages[:2])),
                Entry(put_document(server, "/rd-2.xml", md, packages[2:]))]
    index = put_document(server, "/rd-index.xml", md, children, root=Root.SITEMAPINDEX)
    assert list(resource_dump_packages(client, index)) == packages
