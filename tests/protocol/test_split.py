"""Automatic split into parts and an index (spec 7, 10.2, 12.2)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import IO

import pytest

from airflow_provider_resourcesync.errors import DocumentError, InvalidValueError
from airflow_provider_resourcesync.protocol import split as split_module
from airflow_provider_resourcesync.protocol.model import (
    Capability,
    Document,
    Entry,
    Head,
    Link,
    Metadata,
    Root,
)
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


def test_split_closed_change_list_closes_its_last_part(outputs: Outputs) -> None:
    until = T0 + timedelta(days=1)
    head = Head(md=Metadata(capability="changelist", from_=T0, until=until), links=(UP,))
    entries = changes(4)
    entries.insert(2, Entry("http://example.com/undated", md=Metadata(change="deleted")))
    urls = write_split(head, entries, url=URL, open_output=outputs, max_entries=2)
    index = outputs.read(URL)
    assert index.head.md == head.md
    hour = [T0 + timedelta(hours=n) for n in range(5)]
    # The undated entry opens part 2, which starts at the last change time before it.
    assert [(e.md.from_, e.md.until) for e in index if e.md] == [
        (hour[0], hour[2]), (hour[2], hour[4]), (hour[4], until)]
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
