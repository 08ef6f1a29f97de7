"""The streaming reader: the spec's examples, leniency, hostile documents, streaming."""

from __future__ import annotations

import contextlib
import gzip
import io
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psutil
import pytest

from airflow_provider_resourcesync.errors import DocumentError, UnsafeContentError
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.protocol.model import SITEMAP_NS, Change, DocumentKind, Root
from airflow_provider_resourcesync.protocol.reader import (
    MAX_ELEMENTS_PER_ENTRY,
    MAX_ROOT_EXTRAS,
    DocumentReader,
    read_document,
)
from tests.protocol.conftest import EXAMPLES, NS, XML_EXAMPLES, urlset

KINDS = {
    "ex01": DocumentKind.RESOURCE_LIST, "ex02": DocumentKind.RESOURCE_LIST,
    "ex14": DocumentKind.RESOURCE_LIST, "ex16": DocumentKind.RESOURCE_LIST,
    "ex03": DocumentKind.CHANGE_LIST, "ex19": DocumentKind.CHANGE_LIST,
    "ex21": DocumentKind.CHANGE_LIST, "ex04": DocumentKind.RESOURCE_DUMP,
    "ex17": DocumentKind.RESOURCE_DUMP, "ex05": DocumentKind.RESOURCE_DUMP_MANIFEST,
    "ex18": DocumentKind.RESOURCE_DUMP_MANIFEST, "ex06": DocumentKind.CAPABILITY_LIST,
    "ex13": DocumentKind.CAPABILITY_LIST, "ex07": DocumentKind.SOURCE_DESCRIPTION,
    "ex12": DocumentKind.SOURCE_DESCRIPTION, "ex08": DocumentKind.RESOURCE_LIST_INDEX,
    "ex15": DocumentKind.RESOURCE_LIST_INDEX, "ex20": DocumentKind.CHANGE_LIST_INDEX,
    "ex22": DocumentKind.CHANGE_DUMP, "ex23": DocumentKind.CHANGE_DUMP_MANIFEST,
    **{f"ex{n}": DocumentKind.CHANGE_LIST for n in range(24, 34)},
}


@pytest.mark.parametrize("path", XML_EXAMPLES, ids=lambda p: p.stem)
def test_every_spec_example_parses_to_its_kind(path: Path) -> None:
    document = read_document(path)
    assert document.kind is KINDS[path.stem]
    assert len(document) >= 1
    assert all(entry.loc.startswith("http") for entry in document)


def test_resource_list_attributes_example_14() -> None:
    document = read_document(EXAMPLES / "ex14.xml")
    assert document.head.up == "http://example.com/dataset1/capabilitylist.xml"
    assert document.head.md is not None
    assert document.head.md.at == datetime(2013, 1, 3, 9, tzinfo=UTC)
    assert document.head.md.completed == datetime(2013, 1, 3, 9, 1, tzinfo=UTC)
    res2 = document.entries[1]
    assert res2.loc == "http://example.com/res2"
    assert res2.lastmod == datetime(2013, 1, 2, 14, tzinfo=UTC)
    assert res2.md is not None
    assert res2.md.length == 14599
    assert res2.md.type == "application/pdf"
    assert res2.md.hash == Hashes.parse(
        "md5:1e0d5cb8ef6ba40c99b14c0237be735e "
        "sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784")
    assert res2.line == 16


def test_change_list_example_19_times_and_changes() -> None:
    entries = read_document(EXAMPLES / "ex19.xml").entries
    assert [e.change for e in entries] == [
        Change.CREATED, Change.UPDATED, Change.DELETED, Change.UPDATED]
    # The change time is ``datetime``, not the (older) lastmod; the last entry has none.
    assert entries[0].change_time == datetime(2013, 1, 3, 11, tzinfo=UTC)
    assert entries[0].lastmod == datetime(2000, 1, 1, 1, 1, tzinfo=UTC)
    assert entries[3].change_time is None


def test_one_point_zero_change_list_falls_back_to_lastmod() -> None:
    entry = read_document(EXAMPLES / "ex31.xml").entries[0]
    assert entry.md is not None and entry.md.datetime is None
    assert entry.change_time == datetime(2013, 1, 3, 7, tzinfo=UTC)


def test_links_with_every_attribute_example_24_and_29() -> None:
    mirrors = read_document(EXAMPLES / "ex24.xml").entries[0].links_for("duplicate")
    assert [(ln.pri, ln.href) for ln in mirrors] == [
        (1, "http://mirror1.example.com/res1"), (2, "http://mirror2.example.com/res1"),
        (3, "gsiftp://gridftp.example.com/res1")]
    assert mirrors[2].modified == datetime(2013, 1, 3, 18, 0, 23, tzinfo=UTC)
    memento = read_document(EXAMPLES / "ex29.xml").entries[0].links_for("memento")[0]
    assert memento.length == 8876 and memento.type == "text/html"
    assert memento.hash == Hashes.parse("md5:1584abdf8ebdc9802ac0c6a7402c03b6")


def test_index_documents_are_sitemapindex_with_sitemap_entries() -> None:
    document = read_document(EXAMPLES / "ex20.xml")
    assert document.head.root is Root.SITEMAPINDEX and document.head.is_index
    assert [e.md.until is None for e in document if e.md] == [False, False, True]


def test_lenient_capability_spelling_is_kept_as_written() -> None:
    head = read_document(EXAMPLES / "ex01.xml").head
    assert head.md is not None and head.md.capability == "resourceList"
    assert head.kind is DocumentKind.RESOURCE_LIST


def test_unknown_attributes_and_foreign_elements_are_kept() -> None:
    document = read_document(urlset(
        '<url><loc>http://e.com/a</loc><priority>0.5</priority>'
        '<x:thing xmlns:x="urn:x" a="1">t</x:thing>'
        '<rs:md length="3" foo="bar" xmlns:y="urn:y" y:z="q"/>'
        '<rs:ln rel="duplicate" href="http://m.com/a" custom="c"/></url>',
        head='<rs:md capability="resourcelist" at="2013" note="n"/><z:head xmlns:z="urn:z"/>'))
    head = document.head
    assert head.md is not None and head.md.extra == {"note": "n"}
    assert len(head.extra) == 1 and "urn:z" in head.extra[0]
    entry = document.entries[0]
    assert entry.md is not None and entry.md.extra == {"foo": "bar", "{urn:y}z": "q"}
    assert entry.links[0].extra == {"custom": "c"}
    assert len(entry.extra) == 2
    assert "priority" in entry.extra[0] and "urn:x" in entry.extra[1]


def test_foreign_elements_with_a_relative_namespace_are_kept() -> None:
    # libxml2's C14N refuses any element under a relative namespace URI in scope (issue 12,
    # item 7): it crashed the reader outside the DocumentError family, with no URL or line.
    document = read_document(urlset(
        '<url><loc>http://e.com/a</loc><x:y xmlns:x="rel" b="2" a="1"><x:z/></x:y>'
        '<priority>0.5</priority></url><url><loc>http://e.com/b</loc></url>'
        '<q:after xmlns:q="../up">t</q:after>'), url="http://e.com/rl.xml")
    assert [entry.loc for entry in document] == ["http://e.com/a", "http://e.com/b"]
    assert document.entries[0].extra == (
        '<x:y xmlns:x="rel" a="1" b="2"><x:z></x:z></x:y>',
        f'<priority xmlns="{SITEMAP_NS}">0.5</priority>')
    assert document.head.extra == ('<q:after xmlns:q="../up">t</q:after>',)


def test_a_relative_namespace_at_the_root_keeps_every_foreign_element() -> None:
    data = urlset('<url><loc>http://e.com/a</loc><priority>0.5</priority>'
                  '<k:n xmlns:k="urn:k" xmlns:v="urn:v">k</k:n></url>').replace(
        b"<urlset ", b'<urlset xmlns:x="rel" ')
    entry = read_document(data).entries[0]
    # The same strings as from a document without it: only the namespaces used are declared.
    assert entry.extra == (f'<priority xmlns="{SITEMAP_NS}">0.5</priority>',
                           '<k:n xmlns:k="urn:k">k</k:n>')


def test_only_children_of_the_root_are_entries() -> None:
    document = read_document(urlset(
        '<url><loc>http://e.com/a</loc><x:wrap xmlns:x="urn:x"><url><loc>inner</loc></url>'
        '</x:wrap></url><x:between xmlns:x="urn:x"/><url><loc>http://e.com/b</loc></url>'
        '<x:after xmlns:x="urn:x"/>'))
    assert [entry.loc for entry in document] == ["http://e.com/a", "http://e.com/b"]
    assert "<loc>inner</loc>" in document.entries[0].extra[0]
    assert [extra.split()[0] for extra in document.head.extra] == ["<x:between", "<x:after"]


def test_gzip_documents_are_read_transparently() -> None:
    data = (EXAMPLES / "ex14.xml").read_bytes()
    assert read_document(gzip.compress(data)) == read_document(data)


def test_head_is_available_before_entries_are_read() -> None:
    stream = _CountingStream(_generate_resource_list(200_000))
    reader = DocumentReader(stream, url="http://e.com/rl.xml")
    assert reader.head.kind is DocumentKind.RESOURCE_LIST
    assert stream.consumed < 1_000_000  # the document is ~20 MB
    first = next(iter(reader))
    assert first.loc == "http://example.com/res/0"


def test_entries_stream_in_memory_independent_of_document_size() -> None:
    count = 400_000  # ~40 MB of XML; a tree of it would take several hundred MB
    process = psutil.Process()
    before = process.memory_info().rss
    reader = DocumentReader(_CountingStream(_generate_resource_list(count)))
    seen = 0
    peak = before
    for seen, _entry in enumerate(reader, start=1):
        if seen % 50_000 == 0:
            peak = max(peak, process.memory_info().rss)
    assert seen == count
    assert peak - before < 80 * 1024 * 1024


def test_entries_can_be_read_only_once() -> None:
    reader = DocumentReader(EXAMPLES / "ex14.xml")
    assert len(list(reader)) == 2
    with pytest.raises(DocumentError, match="only once"):
        iter(reader)


# -- hostile and broken documents --------------------------------------------------------------

BILLION_LAUGHS = f"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">]>
<urlset {NS}><url><loc>&lol2;</loc></url></urlset>"""
EXTERNAL_ENTITY = f"""<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<urlset {NS}><url><loc>&secret;</loc></url></urlset>"""
RESOURCE_TWICE = '<rs:md capability="resourcelist"/>\n<rs:md capability="resourcelist"/>'
EXTERNAL_DTD = f"""<?xml version="1.0"?>
<!DOCTYPE urlset SYSTEM "http://127.0.0.1:9/evil.dtd">
<urlset {NS}><url><loc>http://e.com/a</loc></url></urlset>"""


@pytest.mark.parametrize("text", [BILLION_LAUGHS, EXTERNAL_ENTITY, EXTERNAL_DTD],
                         ids=["entity-expansion", "external-entity", "external-dtd"])
def test_documents_with_a_dtd_are_refused(text: str) -> None:
    with pytest.raises(UnsafeContentError, match="declares a DTD") as caught:
        read_document(text.encode(), url="http://evil.example/rl.xml")
    assert caught.value.url == "http://evil.example/rl.xml"
    assert "passwd" not in str(caught.value)


def test_the_parser_never_fetches_what_a_document_points_at() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(0.5)
        target = f"http://127.0.0.1:{listener.getsockname()[1]}"
        for text in (
            f'<!DOCTYPE urlset SYSTEM "{target}/evil.dtd"><urlset {NS}/>',
            f'<!DOCTYPE urlset [<!ENTITY % p SYSTEM "{target}/p.dtd"> %p;]><urlset {NS}/>',
            f'<?xml-stylesheet href="{target}/s.xsl"?><urlset {NS} xmlns:xsi='
            f'"http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="x {target}/x.xsd">'
            "<url><loc>http://e.com/a</loc></url></urlset>",
        ):
            with contextlib.suppress(DocumentError):
                read_document(text.encode())
        with pytest.raises(TimeoutError):
            listener.accept()


def test_foreign_elements_at_the_root_are_capped() -> None:
    many = "".join(f'<x:n xmlns:x="urn:x">{i}</x:n>' for i in range(MAX_ROOT_EXTRAS + 1))
    with pytest.raises(UnsafeContentError, match="foreign elements at the document's root"):
        read_document(urlset("<url><loc>http://e.com/a</loc></url>" + many))
    some = "".join(f'<x:n xmlns:x="urn:x">{i}</x:n>' for i in range(2000))
    kept = read_document(urlset("<url><loc>http://e.com/a</loc></url>" + some))
    assert len(kept.head.extra) == 2000


def test_an_entry_holding_too_many_elements_is_refused() -> None:
    body = "<x:n xmlns:x='urn:x'/>" * (MAX_ELEMENTS_PER_ENTRY + 1)
    with pytest.raises(UnsafeContentError, match="element count cap"):
        read_document(urlset(f"<url><loc>http://e.com/a</loc><x:w xmlns:x='urn:x'>{body}"
                             "</x:w></url>"))


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "bad-crc"])
def test_broken_gzip_is_a_document_error_naming_the_url(damage: str) -> None:
    packed = gzip.compress((EXAMPLES / "ex14.xml").read_bytes())
    broken = {
        "truncated": packed[: len(packed) // 2],
        "corrupt": packed[:20] + bytes(40) + packed[60:],
        "bad-crc": packed[:-8] + bytes(4) + packed[-4:],
    }[damage]
    with pytest.raises(DocumentError) as caught:
        read_document(broken, url="http://e.com/cl.xml.gz")
    assert caught.value.url == "http://e.com/cl.xml.gz"


def test_a_missing_file_is_a_document_error(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="cannot open the document"):
        read_document(tmp_path / "nope.xml")


def test_oversized_document_is_refused() -> None:
    with pytest.raises(UnsafeContentError, match="larger than 100000 bytes"):
        read_document(_generate_resource_list(10_000).read(), max_bytes=100_000, url="big")


def test_gzip_bomb_is_refused_by_decompressed_size() -> None:
    bomb = gzip.compress(urlset("<url><loc>http://e.com/a</loc></url>" * 200_000))
    assert len(bomb) < 200_000
    with pytest.raises(UnsafeContentError, match="document size cap"):
        read_document(bomb, max_bytes=1_000_000)


@pytest.mark.parametrize(
    ("data", "message", "line"),
    [
        (b"", "not an XML document", None),
        (b"<html><body>hi</body></html>", "root element is <html>", 1),
        (urlset("<url><loc>http://e.com/a</url>"), "Opening and ending tag mismatch", 4),
        (urlset("<url><loc>&nope;</loc></url>"), "Entity 'nope' not defined", 4),
        (urlset("<url>\n<loc>http://e.com/a</loc></url>") + b"<junk/>", "Extra content", 7),
        (urlset("<url><lastmod>2013</lastmod></url>"), "<url> without a <loc>", 4),
        (urlset("<url><loc>a</loc><lastmod>yesterday</lastmod></url>"),
         "'yesterday' is not a W3C Datetime", 4),
        (urlset('<url><loc>a</loc><rs:md length="big"/></url>'),
         "attribute length: 'big' is not an integer", 4),
        (urlset('<url><loc>a</loc><rs:ln rel="duplicate"/></url>'), "needs both rel and href", 4),
        (urlset('<url><loc>a</loc><rs:md/><rs:md/></url>'), "more than one <rs:md>", 4),
        (urlset("<url><loc>a</loc></url>", head=RESOURCE_TWICE), "more than one <rs:md>", 4),
        (urlset('<url><loc>a</loc></url><rs:md capability="x"/>'), "after its entries", 4),
        (urlset("<url><loc>http://a/1</loc><loc>http://a/2</loc></url>"),
         "more than one <loc>", 4),
        (urlset('<url><loc>http://a/<x:b xmlns:x="urn:x"/>1</loc></url>'),
         "<loc> holds elements", 4),
        (urlset(f"<urlset {NS}/><url><loc>a</loc></url>"), "<urlset> inside a document", 4),
    ],
)
def test_broken_documents_name_document_and_line(data: bytes, message: str,
                                                  line: int | None) -> None:
    with pytest.raises(DocumentError, match=message) as caught:
        read_document(data, url="http://e.com/doc.xml")
    assert caught.value.url == "http://e.com/doc.xml"
    assert caught.value.line == line
    assert str(caught.value).startswith("http://e.com/doc.xml")


# -- helpers -----------------------------------------------------------------------------------

def _generate_resource_list(count: int) -> io.RawIOBase:
    def chunks() -> Iterator[bytes]:
        yield (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>\n'
               '<rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>\n'
               '<rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>\n').encode()
        for start in range(0, count, 1000):
            yield "".join(
                f"<url><loc>http://example.com/res/{i}</loc>"
                f"<lastmod>2013-01-02T13:00:00Z</lastmod>"
                f'<rs:md hash="md5:{i:032x}" length="{i}" type="text/html"/></url>\n'
                for i in range(start, min(count, start + 1000))).encode()
        yield b"</urlset>\n"
    return _IterStream(chunks())


class _IterStream(io.RawIOBase):
    """A non-seekable stream over generated chunks: the document never exists in memory."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._buffer:
            self._buffer = next(self._chunks, b"")
            if not self._buffer:
                return 0
        size = min(len(buffer), len(self._buffer))
        buffer[:size] = self._buffer[:size]
        self._buffer = self._buffer[size:]
        return size


class _CountingStream(io.RawIOBase):
    def __init__(self, stream: io.RawIOBase) -> None:
        self._stream = stream
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        size = self._stream.readinto(buffer) or 0
        self.consumed += size
        return size
