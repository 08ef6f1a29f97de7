"""Automatic split into parts and an index (spec 7, 10.2, 12.2)."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO

import pytest

from airflow_provider_resourcesync.errors import DocumentError, InvalidValueError
from airflow_provider_resourcesync.protocol import split as split_module
from airflow_provider_resourcesync.protocol.model import (
    MAX_ENTRIES,
    Capability,
    Document,
    Entry,
    Head,
    Link,
    Metadata,
    Root,
)
from airflow_provider_resourcesync.protocol.order import ChangeOrder, ForwardOrder, package_start
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.split import default_part_url, write_split
from airflow_provider_resourcesync.protocol.validate import has_errors, validate_source
from airflow_provider_resourcesync.protocol.writer import document_bytes
from tests.protocol.conftest import CHANGE_HEAD, RESOURCE_HEAD, T0, UP, URL, changes, resources


class Outputs:
    """``open_output`` over a real directory: each URL's last segment is a file there."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.opened: list[str] = []

    def __call__(self, url: str) -> IO[bytes]:
        self.opened.append(url)
        return open(self.path(url), "wb")

    def path(self, url: str) -> Path:
        return self.directory / url.rsplit("/", 1)[1]

    def read(self, url: str) -> Document:
        return read_document(self.path(url))

    def size(self, url: str) -> int:
        return self.path(url).stat().st_size


@pytest.fixture
def outputs(tmp_path: Path) -> Outputs:
    return Outputs(tmp_path)


# -- split: parts and index --------------------------------------------------------------------

def read_parts(outputs: Outputs, urls: list[str]) -> list[Document]:
    return [outputs.read(url) for url in urls]


def assert_clean(outputs: Outputs, urls: list[str]) -> None:
    for url in urls:
        findings = validate_source(outputs.path(url), url=url)
        assert not has_errors(findings), [str(f) for f in findings]


def test_split_by_entries_writes_parts_and_an_index(outputs: Outputs) -> None:
    entries = resources(10)
    urls = write_split(RESOURCE_HEAD, iter(entries), url=URL, open_output=outputs, max_entries=3)
    parts = [f"http://example.com/dataset1/resourcelist-{n:05d}.xml" for n in range(1, 5)]
    assert urls == [*parts, URL] == outputs.opened
    index = outputs.read(URL)
    assert index.head.root is Root.SITEMAPINDEX
    assert index.head.capability is Capability.RESOURCE_LIST
    assert index.head.md == Metadata(capability="resourcelist", at=T0)
    assert index.head.up == UP.href
    assert [e.loc for e in index] == parts
    assert all(e.md == Metadata(at=T0) for e in index)
    documents = read_parts(outputs, parts)
    for document in documents:
        assert document.head.md == RESOURCE_HEAD.md
        assert document.head.up == UP.href and document.head.index == URL
    assert [len(d) for d in documents] == [3, 3, 3, 1]
    assert [e for d in documents for e in d] == entries
    assert_clean(outputs, urls)


def test_by_default_a_document_holds_section_7s_50000_entries(outputs: Outputs) -> None:
    """Section 7: at most 50,000 entries in one document; one more is split in two parts."""
    assert MAX_ENTRIES == 50_000
    assert write_split(RESOURCE_HEAD, resources(MAX_ENTRIES), url=URL,
                       open_output=outputs) == [URL]
    urls = write_split(RESOURCE_HEAD, resources(MAX_ENTRIES + 1), url=URL, open_output=outputs)
    assert len(urls) == 3 and urls[-1] == URL
    assert [len(document) for document in read_parts(outputs, urls[:-1])] == [MAX_ENTRIES, 1]


def test_split_change_list_intervals(outputs: Outputs) -> None:
    entries = changes(7)
    urls = write_split(CHANGE_HEAD, entries, url=URL, open_output=outputs, max_entries=3)
    index = outputs.read(URL)
    assert index.head.md == Metadata(capability="changelist", from_=T0)
    hour = [T0 + timedelta(hours=n) for n in range(8)]
    intervals = [(hour[0], hour[4]), (hour[4], hour[7]), (hour[7], None)]  # the last is open
    assert [(e.md.from_, e.md.until) for e in index if e.md] == intervals
    documents = read_parts(outputs, urls[:-1])
    assert [(d.head.md.from_, d.head.md.until) for d in documents if d.head.md] == intervals
    assert [e for d in documents for e in d] == entries
    assert_clean(outputs, urls)


@pytest.mark.parametrize("count", [2, 7])
def test_a_list_of_a_series_links_the_series_index_whole_or_split(
        outputs: Outputs, count: int) -> None:
    """12.1, 13.1: a Change List in a Change List Index links to it with ``index``; split, its
    parts do (that index lists them), not the index of its parts at ``url``, which has none."""
    series = "http://example.com/dataset1/changelist-index.xml"
    urls = write_split(CHANGE_HEAD, changes(count), url=URL, open_output=outputs,
                       max_entries=3, index=series)
    lists = read_parts(outputs, urls if count <= 3 else urls[:-1])
    assert lists and all(d.head.index == series and d.head.up == UP.href for d in lists)
    if count > 3:
        assert len(lists) == 3 and outputs.read(URL).head.links == (UP,)
    assert_clean(outputs, urls)


def test_split_closed_change_list_closes_its_last_part(outputs: Outputs) -> None:
    until = T0 + timedelta(days=1)
    head = Head(md=Metadata(capability="changelist", from_=T0, until=until), links=(UP,))
    entries = changes(4)
    entries.insert(2, Entry("http://example.com/undated", md=Metadata(change="deleted")))
    urls = write_split(head, entries, url=URL, open_output=outputs, max_entries=2)
    index = outputs.read(URL)
    assert index.head.md == head.md
    hour = [T0 + timedelta(hours=n) for n in range(5)]
    # The undated entry stays in part 2 with the change before it: its time may be the same.
    assert [(e.md.from_, e.md.until) for e in index if e.md] == [
        (hour[0], hour[2]), (hour[2], hour[3]), (hour[3], until)]
    assert [len(d) for d in read_parts(outputs, urls[:-1])] == [1, 2, 2]
    assert [e for d in read_parts(outputs, urls[:-1]) for e in d] == entries
    assert_clean(outputs, urls)


def test_split_by_size_keeps_every_document_within_max_bytes(
        outputs: Outputs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split_module, "_SPOOL_MEMORY", 256)  # parts spill to disk
    entries = resources(40)
    max_bytes = 2_000
    urls = write_split(RESOURCE_HEAD, entries, url=URL, open_output=outputs,
                       max_bytes=max_bytes)
    assert len(urls) > 3
    assert all(outputs.size(url) <= max_bytes for url in urls)
    assert [e for d in read_parts(outputs, urls[:-1]) for e in d] == entries
    assert [e.loc for e in outputs.read(URL)] == urls[:-1]


def test_everything_fits_one_document_unchanged(outputs: Outputs) -> None:
    entries = resources(3)
    assert write_split(RESOURCE_HEAD, entries, url=URL, open_output=outputs,
                       max_entries=3) == [URL]
    assert outputs.path(URL).read_bytes() == document_bytes(Document(RESOURCE_HEAD, entries))
    assert write_split(RESOURCE_HEAD, [], url=URL, open_output=outputs) == [URL]
    assert outputs.read(URL) == Document(RESOURCE_HEAD, [])


def test_one_more_than_max_entries_splits(outputs: Outputs) -> None:
    urls = write_split(RESOURCE_HEAD, resources(4), url=URL, open_output=outputs, max_entries=3)
    assert len(urls) == 3 and [len(d) for d in read_parts(outputs, urls[:-1])] == [3, 1]


def test_byte_limit_is_exact(outputs: Outputs) -> None:
    entries = resources(20)
    size = len(document_bytes(Document(RESOURCE_HEAD, entries)))
    assert write_split(RESOURCE_HEAD, entries, url=URL, open_output=outputs,
                       max_bytes=size) == [URL]
    assert outputs.size(URL) == size
    urls = write_split(RESOURCE_HEAD, entries, url=URL, open_output=outputs, max_bytes=size - 1)
    assert len(urls) == 3
    assert all(outputs.size(url) <= size - 1 for url in urls)
    assert [e for d in read_parts(outputs, urls[:-1]) for e in d] == entries


def test_custom_part_urls(outputs: Outputs) -> None:
    urls = write_split(RESOURCE_HEAD, resources(3), url=URL, open_output=outputs, max_entries=2,
                       part_url=lambda n: f"http://example.com/dataset1/rl{n}.xml")
    assert urls == ["http://example.com/dataset1/rl1.xml", "http://example.com/dataset1/rl2.xml",
                    URL]


@pytest.mark.parametrize(("url", "part"), [
    ("http://e/d/resourcelist.xml", "http://e/d/resourcelist-00007.xml"),
    ("http://e/d/changelist.xml.gz", "http://e/d/changelist-00007.xml.gz"),
    ("http://e/d/list", "http://e/d/list-00007"),
    ("http://e/d/list.xml?v=1", "http://e/d/list-00007.xml?v=1"),
    ("out/rl.v2.xml", "out/rl.v2-00007.xml"),
    ("rl.xml", "rl-00007.xml"),
])
def test_default_part_url(url: str, part: str) -> None:
    assert default_part_url(url, 7) == part


def test_default_part_url_needs_a_file_name() -> None:
    with pytest.raises(InvalidValueError):
        default_part_url("http://e/d/", 1)


def test_split_refusals(outputs: Outputs) -> None:
    big = Entry("http://e/" + "x" * 3_000)
    with pytest.raises(DocumentError, match="does not fit"):
        write_split(RESOURCE_HEAD, [big], url=URL, open_output=outputs, max_bytes=2_000)
    in_index = Head(md=RESOURCE_HEAD.md, links=(UP, Link(rel="index", href="http://e/i.xml")))
    with pytest.raises(DocumentError, match="do not nest"):
        write_split(in_index, resources(3), url=URL, open_output=outputs, max_entries=2)
    index = Head(root=Root.SITEMAPINDEX, md=RESOURCE_HEAD.md)
    with pytest.raises(DocumentError, match="do not nest"):
        write_split(index, resources(3), url=URL, open_output=outputs, max_entries=2)
    with pytest.raises(DocumentError, match="index would list"):
        write_split(RESOURCE_HEAD, resources(40), url=URL, open_output=outputs, max_bytes=700)
    with pytest.raises(InvalidValueError, match="used twice"):
        write_split(RESOURCE_HEAD, resources(3), url=URL, open_output=outputs, max_entries=2,
                    part_url=lambda n: URL)
    assert URL not in outputs.opened  # no index was written by any of them
    with pytest.raises(DocumentError, match="head alone"):
        write_split(RESOURCE_HEAD, [], url=URL, open_output=outputs, max_bytes=100)


# -- changes: parts never let a Destination skip one (12.1, 12.2, 13.1) ------------------------

def at(hours: int) -> datetime:
    return T0 + timedelta(hours=hours)


def change(name: str, hours: int) -> Entry:
    return Entry(f"http://example.com/{name}", md=Metadata(change="updated", datetime=at(hours)))


def assert_seamless(outputs: Outputs, urls: list[str]) -> None:
    """Each part ends where the next begins, and holds only changes in [from, until): a
    Destination that goes on after a part's until misses nothing; every document is clean."""
    parts = read_parts(outputs, urls[:-1])
    index = outputs.read(urls[-1])
    intervals = [(d.head.md.from_, d.head.md.until) for d in parts if d.head.md]
    assert [(e.md.from_, e.md.until) for e in index if e.md] == intervals
    for (_, until), (next_from, _) in itertools.pairwise(intervals):
        assert until == next_from
    for document, (start, until) in zip(parts, intervals, strict=True):
        order = (ForwardOrder(package_start, "13.1")
                 if document.head.capability is Capability.CHANGE_DUMP else ChangeOrder("12.1"))
        times = [order.advance(e) for e in document]
        assert all(start <= t and (until is None or t < until) for t in times if t), times
    assert_clean(outputs, urls)


def test_changes_at_one_time_stay_in_one_part(outputs: Outputs) -> None:
    # Parts of 2 would end at b and leave c, at b's time, to the next part: never.
    entries = [change("a", 1), change("b", 2), change("c", 2), change("d", 3)]
    urls = write_split(CHANGE_HEAD, entries, url=URL, open_output=outputs, max_entries=2)
    parts = read_parts(outputs, urls[:-1])
    assert [[e.loc[-1] for e in d] for d in parts] == [["a"], ["b", "c"], ["d"]]
    assert [(d.head.md.from_, d.head.md.until) for d in parts if d.head.md] == [
        (T0, at(2)), (at(2), at(3)), (at(3), None)]
    assert_seamless(outputs, urls)


def test_changes_at_one_time_that_fill_more_than_a_part_are_refused(outputs: Outputs) -> None:
    entries = [change("a", 1), change("b", 2), change("c", 2), change("d", 2)]
    with pytest.raises(DocumentError, match=r"the 3 entries from http://example.com/b on start "
                       r"at 2013-01-03T11:00:00Z .* do not fit one part of 2 entries"):
        write_split(CHANGE_HEAD, entries, url=URL, open_output=outputs, max_entries=2)
    untimed = [Entry(f"http://example.com/{n}", md=Metadata(change="deleted")) for n in "xyz"]
    with pytest.raises(DocumentError, match=r"the 3 entries from http://example.com/x on have "
                       r"no change time"):
        write_split(CHANGE_HEAD, untimed, url=URL, open_output=outputs, max_entries=2)
    assert URL not in outputs.opened


@pytest.mark.parametrize("entries", [
    [change("a", 5), change("b", 6), change("c", 1), change("d", 7)],
    [Entry(f"http://example.com/{name}", lastmod=at(hours), md=Metadata(change="updated"))
     for name, hours in (("a", 5), ("b", 6), ("c", 1), ("d", 7))],  # 1.0: times in lastmod
], ids=["datetime", "lastmod"])
def test_changes_out_of_order_are_refused(outputs: Outputs, entries: list[Entry]) -> None:
    with pytest.raises(InvalidValueError, match=r"^http://example.com/c : 2013-01-03T10:00:00Z "
                       r"is earlier than the previous entry's 2013-01-03T15:00:00Z"):
        write_split(CHANGE_HEAD, entries, url=URL, open_output=outputs, max_entries=2)
    assert URL not in outputs.opened


def test_changes_outside_the_heads_interval_are_refused(outputs: Outputs) -> None:
    closed = Head(md=Metadata(capability="changelist", from_=T0, until=at(2)), links=(UP,))
    with pytest.raises(InvalidValueError, match=r"^http://example.com/b : 2013-01-03T12:00:00Z "
                       r"is after the document's until 2013-01-03T11:00:00Z"):
        write_split(closed, [change("a", 1), change("b", 3)], url=URL, open_output=outputs,
                    max_entries=1)
    with pytest.raises(InvalidValueError, match="before the document's from"):
        write_split(CHANGE_HEAD, [change("a", -1)], url=URL, open_output=outputs)


def test_untimed_changes_after_a_datetime_and_lastmod_only_resources(outputs: Outputs) -> None:
    # Once a datetime is seen, lastmod is the resource's, not the change's (12.1, Example 19).
    entries = [change("a", 1), Entry("http://example.com/b", lastmod=at(-50),
                                     md=Metadata(change="updated")), change("c", 2)]
    urls = write_split(CHANGE_HEAD, entries, url=URL, open_output=outputs, max_entries=2)
    assert [[e.loc[-1] for e in d] for d in read_parts(outputs, urls[:-1])] == [["a", "b"],
                                                                                  ["c"]]
    assert_seamless(outputs, urls)


def package(name: str, start: int, end: int | None, *, lastmod: int | None = None) -> Entry:
    return Entry(f"http://example.com/{name}.zip", lastmod=None if lastmod is None else at(lastmod),
                 md=Metadata(type="application/zip", from_=None if lastmod else at(start),
                             until=None if end is None else at(end)))


CHANGE_DUMP_HEAD = Head(md=Metadata(capability="changedump", from_=T0), links=(UP,))


def test_change_dump_parts_follow_the_packages_intervals(outputs: Outputs) -> None:
    packages = [package("p1", 0, 1), package("p2", 1, 2), package("p3", 0, None, lastmod=2)]
    urls = write_split(CHANGE_DUMP_HEAD, packages, url=URL, open_output=outputs,
                       max_entries=1)
    parts = read_parts(outputs, urls[:-1])
    assert [(d.head.md.from_, d.head.md.until) for d in parts if d.head.md] == [
        (at(0), at(1)), (at(1), at(2)), (at(2), None)]
    assert [e for d in parts for e in d] == packages
    assert_seamless(outputs, urls)


def test_change_dump_parts_never_end_inside_a_package(outputs: Outputs) -> None:
    packages = [package("p1", 0, 2), package("p2", 1, 3), package("p3", 3, 4)]
    urls = write_split(CHANGE_DUMP_HEAD, packages, url=URL, open_output=outputs,
                       max_entries=2)
    parts = read_parts(outputs, urls[:-1])
    assert [[e.loc for e in d] for d in parts] == [[packages[0].loc, packages[1].loc],
                                                   [packages[2].loc]]
    assert [(d.head.md.from_, d.head.md.until) for d in parts if d.head.md] == [
        (at(0), at(3)), (at(3), None)]
    assert_seamless(outputs, urls)
    with pytest.raises(InvalidValueError, match=r"p2.zip : .* is earlier than"):
        write_split(CHANGE_DUMP_HEAD, packages[::-1], url=URL, open_output=outputs)
    closed = Head(md=Metadata(capability="changedump", from_=T0, until=at(3)), links=(UP,))
    with pytest.raises(InvalidValueError, match=r"p3.zip : 2013-01-03T13:00:00Z is after the "
                       "document's until"):
        write_split(closed, packages, url=URL, open_output=outputs, max_entries=2)
