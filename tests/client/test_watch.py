"""Watching Change Lists (12.1) and their indexes (12.2): the plans driven by hand with documents
built here, and both drivers against a loopback Source over real sockets."""

from __future__ import annotations

import asyncio
import threading
import tracemalloc
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest

from airflow_provider_resourcesync.client.async_client import AsyncResourceSyncClient
from airflow_provider_resourcesync.client.navigate import changes_after
from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.client.watch import (
    ChangeListStatus,
    NewChanges,
    Plan,
    Polled,
    StreamedDocument,
    adrive,
    change_list_status,
    drive,
    new_changes,
)
from airflow_provider_resourcesync.errors import DocumentError
from airflow_provider_resourcesync.protocol.model import (
    MAX_ENTRIES,
    Document,
    Entry,
    Head,
    Metadata,
    Root,
)
from airflow_provider_resourcesync.protocol.position import ChangePosition
from airflow_provider_resourcesync.protocol.writer import document_bytes
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from ..protocol.conftest import CHANGE_HEAD, T0, UP, changes

T = TypeVar("T")
LIST = "http://example.com/dataset1/changelist.xml"
INDEX = "http://example.com/dataset1/changelist-index.xml"
PART_1 = "http://example.com/dataset1/changelist-1.xml"
PART_2 = "http://example.com/dataset1/changelist-2.xml"
T1 = T0 + timedelta(hours=3)
POLICY = ClientPolicy(allow_private=True, backoff=0.01, max_backoff=1)


def by_hand(plan: Plan[T], documents: Mapping[str, Document | bytes]) -> tuple[T, list[str]]:
    """Run ``plan`` on ``documents``, each sent back as written (or as the bytes given) and
    streamed: the result and the URLs asked for, in order."""
    asked: list[str] = []
    try:
        url = next(plan)
        while True:
            asked.append(url)
            document = documents[url]
            raw = document if isinstance(document, bytes) else document_bytes(document)
            url = plan.send(StreamedDocument.open(raw, url=url))
    except StopIteration as stop:
        return stop.value, asked


def change_list(entries: Iterable[Entry], *, from_: datetime | None = T0,
                until: datetime | None = None) -> Document:
    return Document(Head(md=Metadata(capability="changelist", from_=from_, until=until),
                         links=(UP,)), list(entries))


def index(*children: tuple[str, datetime, datetime | None], root: Root = Root.SITEMAPINDEX,
          capability: str | None = None) -> Document:
    """A Change List Index over ``(url, from, until)``; a ``<urlset>`` one with ``root``."""
    return Document(Head(root=root, md=Metadata(capability="changelist", from_=T0),
                         links=(UP,)),
                    [Entry(url, md=Metadata(capability=capability, from_=start, until=end))
                     for url, start, end in children])


def change(name: str, when: datetime | None, kind: str = "updated", *,
           in_lastmod: bool = False) -> Entry:
    md = Metadata(change=kind, datetime=None if in_lastmod else when)
    return Entry(f"http://example.com/{name}", lastmod=when if in_lastmod else None, md=md)


# -- new changes, by hand ------------------------------------------------------------------------

def test_nothing_new_then_a_change() -> None:
    entries = changes(3)
    position = ChangePosition(entries[2].change_time, LIST, T0, 3)
    nothing, asked = by_hand(new_changes(LIST, position), {LIST: change_list(entries)})
    assert (nothing, asked) == (NewChanges(0, None, None, (), ()), [LIST])
    assert not nothing.is_done
    later = T0 + timedelta(hours=9)
    found, _ = by_hand(new_changes(LIST, position), {LIST: change_list(
        [*entries, change("new.txt", later, "created")])})
    assert found == NewChanges(1, later, later, (LIST,), (("http://example.com/new.txt",
                                                          "created"),))
    assert found.is_done
    assert found.to_json() == {
        "count": 1, "first_time": "2013-01-03T18:00:00Z", "last_time": "2013-01-03T18:00:00Z",
        "list_urls": [LIST], "samples": [["http://example.com/new.txt", "created"]]}


def test_changes_sharing_the_datetime_of_the_position() -> None:
    same = T0 + timedelta(hours=1)
    entries = [change("a", T0), change("b", same), change("c", same), change("d", same)]
    documents = {LIST: change_list(entries)}
    in_list, _ = by_hand(new_changes(LIST, ChangePosition(same, LIST, T0, 2)), documents)
    assert (in_list.count, [uri for uri, _ in in_list.samples]) == (
        2, ["http://example.com/c", "http://example.com/d"])
    from_time, _ = by_hand(new_changes(LIST, ChangePosition.at(same)), documents)
    assert from_time.count == 3 and from_time.first_time == from_time.last_time == same


def test_a_version_1_0_list_is_read_by_its_lastmod() -> None:
    entries = [change(f"r{n}", T0 + timedelta(hours=n), in_lastmod=True) for n in range(4)]
    found, _ = by_hand(new_changes(LIST, ChangePosition.at(T0 + timedelta(hours=2))),
                       {LIST: change_list(entries)})
    assert (found.count, found.first_time, found.last_time) == (
        2, T0 + timedelta(hours=2), T0 + timedelta(hours=3))


def test_a_change_an_imperfect_list_cannot_prove_old_is_new_to_the_sensor_too() -> None:
    """As the engine reads them (issue 13): a list with no ``from`` (resync 2.0.1), or out of
    order across the position, cannot say a change dated before the position is old."""
    position = ChangePosition.at(T0 + timedelta(hours=2))
    gone = change("gone", T0, "deleted", in_lastmod=True)
    resync, _ = by_hand(new_changes(LIST, position), {LIST: change_list([gone], from_=None)})
    assert resync.count == 1 and resync.samples == (("http://example.com/gone", "deleted"),)
    ordered = document_bytes(change_list([change("b", T0 + timedelta(hours=1)),
                                          change("a", T0 + timedelta(hours=3))]))
    assert by_hand(new_changes(LIST, position), {LIST: ordered})[0].count == 1
    b_entry = ordered[ordered.index(b"<url>"):ordered.index(b"</url>") + 6]
    jumbled = ordered.replace(b_entry, b"").replace(b"</urlset>", b_entry + b"</urlset>")
    assert by_hand(new_changes(LIST, position), {LIST: jumbled})[0].count == 2


def test_an_empty_index_has_no_changes_and_no_list_closed_yet() -> None:
    """A Source's first save writes an index of no lists (12.2, issue 31): both watches wait."""
    found, _ = by_hand(new_changes(INDEX, ChangePosition()), {INDEX: index()})
    assert found.count == 0
    status, _ = by_hand(change_list_status(INDEX, ChangePosition()), {INDEX: index()})
    assert not status.is_done and status.list_url == INDEX


def test_samples_are_the_first_ten() -> None:
    found, _ = by_hand(new_changes(LIST, ChangePosition()), {LIST: change_list(changes(25))})
    assert found.count == 25 and len(found.samples) == 10
    assert found.samples[0] == ("http://example.com/res0", "updated")


def test_across_an_index_the_changes_of_its_lists_add_up_in_order() -> None:
    closed = [change(f"early{n}", T0 + timedelta(minutes=n)) for n in range(6)]
    later = [change(f"later{n}", T1 + timedelta(minutes=n)) for n in range(6)]
    documents = {INDEX: index((PART_1, T0, T1), (PART_2, T1, None)),
                 PART_1: change_list(closed, until=T1), PART_2: change_list(later, from_=T1)}
    found, _ = by_hand(new_changes(INDEX, ChangePosition()), documents)
    assert (found.count, found.list_urls) == (12, (PART_1, PART_2))
    assert (found.first_time, found.last_time) == (closed[0].change_time, later[-1].change_time)
    assert [uri for uri, _ in found.samples] == [entry.loc for entry in [*closed, *later][:10]]


def closed_and_opened(*, open_entries: Iterable[Entry] = ()) -> dict[str, Document]:
    """An index whose first list closed at T1 and whose second, open, began then."""
    return {
        INDEX: index((PART_1, T0, T1), (PART_2, T1, None)),
        PART_1: change_list(changes(2), until=T1),
        PART_2: change_list(open_entries, from_=T1),
    }


def test_an_index_where_the_list_of_the_position_closed_and_a_new_one_opened() -> None:
    closed = changes(2)
    position = ChangePosition(closed[1].change_time, PART_1, T0, 2)
    later = T1 + timedelta(minutes=5)
    documents = closed_and_opened(open_entries=[change("x", later, "created")])
    found, asked = by_hand(new_changes(INDEX, position), documents)
    assert asked == [INDEX, PART_1, PART_2]
    assert (found.count, found.list_urls, found.first_time) == (1, (PART_2,), later)
    status, asked = by_hand(change_list_status(INDEX, position), documents)
    assert status == ChangeListStatus(PART_1, T1, PART_2) and status.is_done
    assert asked == [INDEX]  # the index says all: the list itself is not asked for
    assert status.to_json() == {"list_url": PART_1, "until": "2013-01-03T12:00:00Z",
                                "newer_list_url": PART_2}


def test_closed_lists_before_the_position_are_not_asked_for() -> None:
    position = ChangePosition.at(T1 + timedelta(minutes=1))
    found, asked = by_hand(new_changes(INDEX, position), closed_and_opened())
    assert (found.count, asked) == (0, [INDEX, PART_2])
    status, asked = by_hand(change_list_status(INDEX, position), closed_and_opened())
    assert status == ChangeListStatus(PART_2, None, None) and not status.is_done
    assert asked == [INDEX, PART_2]  # open in the index: its own head may say until


def test_the_list_closed_by_its_own_head_before_the_index_says_so() -> None:
    documents = {INDEX: index((PART_1, T0, None)), PART_1: change_list(changes(1), until=T1)}
    status, _ = by_hand(change_list_status(INDEX, ChangePosition()), documents)
    assert status == ChangeListStatus(PART_1, T1, None)


def test_the_list_a_position_names_is_found_by_its_from_after_a_move() -> None:
    """The open list was at LIST, then closed and moved into the index as PART_1 (12.2)."""
    position = ChangePosition(T0 + timedelta(hours=1), LIST, T0, 1)
    status, _ = by_hand(change_list_status(INDEX, position), closed_and_opened())
    assert status == ChangeListStatus(PART_1, T1, PART_2)


def test_a_single_list_closes_with_its_until() -> None:
    position = ChangePosition.at(T0)
    open_, _ = by_hand(change_list_status(LIST, position), {LIST: change_list(changes(2))})
    closed, _ = by_hand(change_list_status(LIST, position),
                        {LIST: change_list(changes(2), until=T1)})
    assert (open_.is_done, closed) == (False, ChangeListStatus(LIST, T1, None))


def test_an_index_served_as_a_urlset_is_read_as_an_index() -> None:
    documents = closed_and_opened()
    documents[INDEX] = index((PART_1, T0, T1), (PART_2, T1, None), root=Root.URLSET,
                             capability="changelist")
    found, asked = by_hand(new_changes(INDEX, ChangePosition()), documents)
    assert (found.count, asked) == (2, [INDEX, PART_1, PART_2])
    status, _ = by_hand(change_list_status(INDEX, ChangePosition()), documents)
    assert status == ChangeListStatus(PART_1, T1, PART_2)


@pytest.mark.parametrize(("documents", "message"), [
    ({LIST: Document(replace(CHANGE_HEAD, md=Metadata(capability="resourcelist", at=T0)))},
     rf"{LIST} : expected a Change List or its index, found a Resource List"),
    ({INDEX: index((PART_1, T0, None)), PART_1: index((PART_2, T0, None))},
     rf"{PART_1} : an index where a list is expected: indexes do not nest"),
])
def test_what_is_not_a_change_list_is_refused_naming_it(
        documents: dict[str, Document], message: str) -> None:
    start = next(iter(documents))
    for plan in (new_changes(start, ChangePosition()),
                 change_list_status(start, ChangePosition())):
        with pytest.raises(DocumentError, match=message):
            by_hand(plan, documents)


# -- the drivers, against a loopback Source ------------------------------------------------------

@pytest.fixture
def source(server: SourceServer) -> ResourceSyncSource:
    source = ResourceSyncSource(server, resources={"r1.txt": b"one", "r2.txt": b"two"})
    source.publish()
    return source


def path(url: str) -> str:
    return urlsplit(url).path


def arun(source: ResourceSyncSource, *plans: Plan[Any]) -> list[Polled[Any]]:
    """Run ``plans`` one after another with one async client, as a trigger polls."""
    async def polls() -> list[Polled[Any]]:
        async with AsyncResourceSyncClient(POLICY, source_urls=[
                source.server.base_url]) as client:
            return [await adrive(client, plan) for plan in plans]
    return asyncio.run(polls())


def test_the_sync_driver_sees_nothing_then_a_change_and_an_unchanged_poll_costs_one_304(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    position = ChangePosition.at(source.created + timedelta(microseconds=1))
    assert drive(client, new_changes(source.change_list_url, position)).count == 0
    source.server.reset_log()
    assert drive(client, new_changes(source.change_list_url, position)).count == 0
    assert [(r.path, r.status) for r in source.server.requests] == [
        (path(source.change_list_url), 304)]
    record = source.create("new.txt", b"new")
    source.publish()
    found = drive(client, new_changes(source.change_list_url, position))
    assert found == NewChanges(1, record.datetime, record.datetime, (source.change_list_url,),
                               ((record.uri, "created"),))


def test_the_async_driver_says_whether_a_document_changed_and_an_unchanged_poll_costs_one_304(
        source: ResourceSyncSource) -> None:
    position = ChangePosition.at(source.created + timedelta(microseconds=1))
    url = source.change_list_url
    first, again = arun(source, new_changes(url, position), new_changes(url, position))
    assert (first.result.count, first.changed) == (0, True)
    assert (again.result.count, again.changed) == (0, False)
    assert [(r.path, r.status) for r in source.server.requests][-1:] == [(path(url), 304)]
    assert source.server.count(path(url)) == 2
    record = source.create("new.txt", b"new")
    source.publish()
    [found] = arun(source, new_changes(url, position))
    assert found.result.samples == ((record.uri, "created"),)


def test_the_async_driver_runs_the_plan_in_a_worker_thread(source: ResourceSyncSource) -> None:
    """A plan streams each document it is sent to its end: run from a worker thread, reading a
    long list does not hold the event loop."""
    readers: list[int] = []

    def reading(url: str) -> Plan[str | None]:
        document = yield url
        readers.append(threading.get_ident())
        return document.head.capability

    async def poll() -> tuple[int, Polled[str | None]]:
        async with AsyncResourceSyncClient(POLICY, source_urls=[
                source.server.base_url]) as client:
            return threading.get_ident(), await adrive(client, reading(source.change_list_url))

    loop, polled = asyncio.run(poll())
    assert polled.result == "changelist"
    assert readers and loop not in readers


def test_a_1_0_style_source_over_the_wire(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    first = source.update("r1.txt", b"one again")
    second = source.delete("r2.txt")
    source.publish(changelist_style="1.0")
    found = drive(client, new_changes(source.change_list_url, ChangePosition.at(second.datetime)))
    assert found.samples == ((second.uri, "deleted"),)
    [polled] = arun(source, new_changes(source.change_list_url,
                                        ChangePosition.at(first.datetime)))
    assert polled.result.count == 2


def test_the_list_of_the_position_closed_and_a_new_one_opened_over_the_wire(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.update("r1.txt", b"one again")
    source.publish()
    [item] = changes_after(client, source.change_list_url, ChangePosition())
    position = ChangePosition().advance(item.list, item.index, item.entry)
    status = drive(client, change_list_status(source.change_list_url, position))
    assert status == ChangeListStatus(source.change_list_url, None, None)
    until = source.close_changelist()
    record = source.create("new.txt", b"new")
    source.publish()
    parts = [source.server.url(f"{source.prefix}/changelist-{n}.xml") for n in (1, 2)]
    found = drive(client, new_changes(source.change_list_url, position))
    assert (found.count, found.list_urls, found.samples) == (
        1, (parts[1],), ((record.uri, "created"),))
    expected = ChangeListStatus(parts[0], until, parts[1])
    assert drive(client, change_list_status(source.change_list_url, position)) == expected
    [polled] = arun(source, change_list_status(source.change_list_url, position))
    assert polled.result == expected


@pytest.mark.parametrize(("close_after", "max_entries"), [(2, MAX_ENTRIES), (None, 2)])
def test_the_plans_agree_with_navigate_across_an_index_or_a_split_list(
        source: ResourceSyncSource, client: ResourceSyncClient, close_after: int | None,
        max_entries: int) -> None:
    for number in range(7):
        source.create(f"n{number}.txt", b"n")
        if number == close_after:
            source.close_changelist()
    source.publish(max_entries=max_entries)
    items = list(changes_after(client, source.change_list_url, ChangePosition()))
    assert len({item.list.url for item in items}) > 1
    for consumed in range(len(items) + 1):
        position = ChangePosition()
        for item in items[:consumed]:
            position = position.advance(item.list, item.index, item.entry)
        found = drive(client, new_changes(source.change_list_url, position))
        later = items[consumed:]
        assert found.count == len(later)
        assert found.list_urls == tuple(dict.fromkeys(item.list.url for item in later))



def test_a_watch_of_an_index_of_many_closed_lists_holds_only_those_after_the_position() -> None:
    """Issue 29: an index was held whole (about 270 B an entry: 1.5 M entries took 428 MiB);
    the lists that end before the position are passed over as the index streams, so memory
    stays flat in its size, and both watches see what they saw before."""
    peaks = []
    for closed in (1_000, 20_000):
        children = [(f"http://example.com/cl-{n}.xml", T0 + timedelta(minutes=n),
                     T0 + timedelta(minutes=n + 1)) for n in range(closed)]
        last_until = T0 + timedelta(minutes=closed)
        children.append((PART_2, last_until, None))  # the open list
        raw = document_bytes(index(*children))
        position = ChangePosition.at(last_until + timedelta(milliseconds=500))
        open_list = change_list([Entry(f"http://example.com/new{n}", md=Metadata(
            change="created", datetime=last_until + timedelta(seconds=n + 1))) for n in range(3)],
            from_=last_until)
        tracemalloc.start()
        found, asked = by_hand(new_changes(INDEX, position), {INDEX: raw, PART_2: open_list})
        status, _ = by_hand(change_list_status(INDEX, position),
                            {INDEX: raw, PART_2: open_list})
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert (found.count, asked) == (3, [INDEX, PART_2])
        assert status == ChangeListStatus(PART_2, None, None)
    assert peaks[1] < peaks[0] * 2, peaks  # twenty times the lists, not twenty times the memory
