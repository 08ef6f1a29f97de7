"""The writer: deterministic output that reads back to the same model, and the split into parts."""

from __future__ import annotations

import io
import os
import re
import threading
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from airflow_provider_resourcesync.errors import DocumentError, InvalidValueError
from airflow_provider_resourcesync.protocol.hashes import Hashes, HashValue
from airflow_provider_resourcesync.protocol.model import (
    SITEMAP_NS,
    Capability,
    Document,
    Entry,
    Head,
    Link,
    Metadata,
    Root,
)
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.validate import (
    Severity,
    validate_document,
    validate_source,
)
from airflow_provider_resourcesync.protocol.writer import (
    DocumentWriter,
    document_bytes,
    write_document,
)
from tests.protocol.conftest import RESOURCE_HEAD, T0, UP, XML_EXAMPLES, resources, urlset


def roundtrip(document: Document) -> Document:
    return read_document(document_bytes(document))


# -- the spec's examples -----------------------------------------------------------------------

@pytest.mark.parametrize("path", XML_EXAMPLES, ids=lambda p: p.stem)
def test_every_example_round_trips(path: Path) -> None:
    document = read_document(path)
    written = document_bytes(document)
    again = read_document(written)
    assert again == document
    assert document_bytes(document) == written  # deterministic
    assert document_bytes(again) == written  # a fixpoint
    assert findings(written) == findings(path)  # the validator sees the same document


def findings(source: bytes | Path) -> list[tuple[str, str, str, str | None]]:
    return [(f.severity, f.section, f.message, f.loc) for f in validate_source(source)]


# -- layout ------------------------------------------------------------------------------------

def test_fixed_layout_and_attribute_order() -> None:
    md = Metadata(path="/p", encoding="gzip", type="text/html", length=5,
                  hash=Hashes.of(md5="abc"), datetime=T0, change="created", until=T0,
                  from_=T0, completed=T0, at=T0, capability="resourcelist",
                  extra={"zeta": "1", "alpha": "2"})
    link = Link(rel="duplicate", href="http://m/1", pri=2, modified=T0, hash=Hashes.of(md5="a"),
                length=1, type="t", encoding="e", path="/x", extra={"b": "1", "a": "2"})
    head = Head(md=Metadata(capability="resourcelist", at=T0), links=(UP,),
                namespaces={"zz": "urn:zz", "aa": "urn:aa", "": "ignored", "rs": "ignored"})
    entry = Entry("http://example.com/r", lastmod=T0, changefreq="daily", md=md, links=(link,))
    t = "2013-01-03T09:00:00Z"
    assert document_bytes(Document(head, [entry])).decode() == (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:rs="http://www.openarchives.org/rs/terms/" xmlns:aa="urn:aa" xmlns:zz="urn:zz">\n'
        f'  <rs:md capability="resourcelist" at="{t}"/>\n'
        '  <rs:ln rel="up" href="http://example.com/dataset1/capabilitylist.xml"/>\n'
        f'  <url><loc>http://example.com/r</loc><lastmod>{t}</lastmod>'
        '<changefreq>daily</changefreq>'
        f'<rs:md capability="resourcelist" at="{t}" completed="{t}" from="{t}" until="{t}" '
        f'change="created" datetime="{t}" hash="md5:abc" length="5" type="text/html" '
        'encoding="gzip" path="/p" alpha="2" zeta="1"/>'
        f'<rs:ln rel="duplicate" href="http://m/1" pri="2" modified="{t}" hash="md5:a" '
        'length="1" type="t" encoding="e" path="/x" a="2" b="1"/></url>\n'
        '</urlset>\n'
    )


def test_fractional_seconds_and_offsets_are_written_in_utc() -> None:
    when = datetime(2013, 1, 3, 10, 0, 0, 250000, tzinfo=timezone(timedelta(hours=1)))
    written = document_bytes(Document(RESOURCE_HEAD, [Entry("http://e/r", lastmod=when)]))
    assert b"<lastmod>2013-01-03T09:00:00.25Z</lastmod>" in written
    assert roundtrip(Document(RESOURCE_HEAD, [Entry("http://e/r", lastmod=when)])).entries[
        0].lastmod == when


def test_times_written_again_are_written_as_the_same_instant() -> None:
    """The writer keeps the text of recent times (compared by value): entries alternating
    between two instants, one of them given in another zone, are each written as their own
    instant, and a time with no zone equal in its fields to one written before is refused."""
    first = datetime(2013, 1, 2, 3, 4, 5, tzinfo=UTC)
    second = datetime(2014, 5, 6, 7, 8, 9, 120000, tzinfo=UTC)
    first_elsewhere = first.astimezone(timezone(timedelta(hours=-5)))
    stream = io.BytesIO()
    with DocumentWriter(stream, Head(md=Metadata(capability="resourcelist"))) as writer:
        for number, (lastmod, modified) in enumerate([
                (first, second), (second, first_elsewhere), (first_elsewhere, second),
                (second, second), (datetime(2015, 1, 1, tzinfo=UTC), first)]):
            writer.write(Entry(f"http://e/{number}", lastmod=lastmod,
                               links=(Link(rel="via", href="http://o/", modified=modified),)))
        with pytest.raises(InvalidValueError, match="has no time zone"):
            writer.write(Entry("http://e/naive", lastmod=first.replace(tzinfo=None)))
    text = stream.getvalue().decode()
    one, two = "2013-01-02T03:04:05Z", "2014-05-06T07:08:09.12Z"
    assert re.findall(r'<lastmod>([^<]*)</lastmod>.*modified="([^"]*)"', text) == [
        (one, two), (two, one), (one, two), (two, two), ("2015-01-01T00:00:00Z", one)]
    assert "naive" not in text
    assert [entry.lastmod for entry in read_document(text.encode()).entries] == [
        first, second, first, second, datetime(2015, 1, 1, tzinfo=UTC)]


def test_metadata_without_attributes_and_absent_metadata() -> None:
    document = Document(Head(), [Entry("http://e/a", md=Metadata()), Entry("http://e/b")])
    written = document_bytes(document)
    assert written.count(b"<rs:md/>") == 1
    assert b"<url><loc>http://e/b</loc></url>" in written
    assert roundtrip(document) == document


def test_sitemapindex_root_writes_sitemap_entries() -> None:
    head = Head(root=Root.SITEMAPINDEX, md=Metadata(capability="resourcelist", at=T0))
    document = Document(head, [Entry("http://e/part1.xml", md=Metadata(at=T0))])
    written = document_bytes(document)
    assert b"<sitemapindex " in written and b"<sitemap><loc>" in written
    assert roundtrip(document) == document


# -- what the model does not know survives -----------------------------------------------------

EXTRAS = urlset(
    head=('<rs:md capability="resourcelist" at="2013-01-03T09:00:00Z" ex:scope="all" '
          'plain="yes"/>\n<ex:about xmlns:ex="urn:ex">the <ex:b>set</ex:b></ex:about>'),
    body=('<url><loc>http://example.com/r1</loc><priority>0.8</priority>'
          '<rs:md length="4" ex:note="n" xmlns:o="urn:other" o:flag="1" other="2" '
          'xml:lang="en"/>'
          '<rs:ln rel="duplicate" href="http://m/r1" o:mirror="eu"/>'
          '<ex:rights>CC-BY &amp; more</ex:rights>'
          '<dc:title xmlns:dc="http://purl.org/dc/elements/1.1/">T</dc:title></url>'),
).replace(b"<urlset ", b'<urlset xmlns:ex="urn:ex" xmlns:o="urn:other" ')


def test_unknown_attributes_and_foreign_elements_survive() -> None:
    document = read_document(EXTRAS)
    entry = document.entries[0]
    assert entry.md is not None and entry.md.extra == {
        "{urn:ex}note": "n", "{urn:other}flag": "1", "other": "2",
        "{http://www.w3.org/XML/1998/namespace}lang": "en"}
    assert [text.split(" ")[0] for text in entry.extra] == ["<priority", "<ex:rights",
                                                            "<dc:title"]
    written = document_bytes(document)
    assert roundtrip(document) == document
    assert document_bytes(read_document(written)) == written


def test_undeclared_attribute_namespace_is_declared_on_its_element() -> None:
    md = Metadata(length=1, extra={"{urn:a}x": "1", "{urn:b}y": "2", "{urn:a}z": "3"})
    document = Document(Head(namespaces={"ns0": "urn:taken"}), [Entry("http://e/r", md=md)])
    written = document_bytes(document)
    assert (b'<rs:md xmlns:ns1="urn:a" xmlns:ns2="urn:b" length="1" ns1:x="1" ns1:z="3" '
            b'ns2:y="2"/>') in written
    assert roundtrip(document) == document


def test_foreign_elements_built_in_code_are_normalized_once() -> None:
    entry = Entry("http://e/r", extra=("<x:foo xmlns:x='urn:x' a='1'>t<!-- c --></x:foo>",))
    document = Document(Head(extra=("<note xmlns='urn:n'/>",)), [entry])
    written = document_bytes(document)
    again = read_document(written)
    assert document_bytes(again) == written
    assert roundtrip(again) == again
    assert again.entries[0].extra[0].startswith('<x:foo xmlns:x="urn:x"')


@pytest.mark.parametrize("extra", [
    "<broken>", "<a/><b/>", "text", "<a/>tail", "<x:a/>", "<a>&undefined;</a>",
    f"<loc xmlns='{SITEMAP_NS}'>http://e/x</loc>",
    "<rs:md xmlns:rs='http://www.openarchives.org/rs/terms/'/>",
    "<a/></url><url><b/>", "<a/></w><w><b/>",
])
def test_foreign_elements_that_would_not_read_back_are_refused(extra: str) -> None:
    with pytest.raises(InvalidValueError, match=r"^the entry for http://e/r : foreign element"):
        document_bytes(Document(Head(), [Entry("http://e/r", extra=(extra,))]))


@pytest.mark.parametrize("extra", [
    "<rs:ln xmlns:rs='http://www.openarchives.org/rs/terms/' rel='a' href='b'/>",
    f"<url xmlns='{SITEMAP_NS}'><loc>http://e/x</loc></url>",
])
def test_head_foreign_element_cannot_pose_as_metadata_or_an_entry(extra: str) -> None:
    with pytest.raises(InvalidValueError, match="would be read as a ResourceSync element"):
        document_bytes(Document(Head(extra=(extra,))))


def test_only_the_foreign_element_itself_is_checked_not_what_it_holds() -> None:
    # What looks like an entry inside a foreign element (or an entry) is not one: the reader
    # takes only the children of the root for entries.
    nested = f"<x:w xmlns:x='urn:x'><url xmlns='{SITEMAP_NS}'><loc>inner</loc></url></x:w>"
    document = Document(Head(extra=(nested,)), [Entry("http://e/r", extra=(
        nested, f"<url xmlns='{SITEMAP_NS}'/>"))])
    again = roundtrip(document)
    assert [e.loc for e in again] == ["http://e/r"]
    assert "<loc>inner</loc>" in again.head.extra[0]
    assert roundtrip(again) == again


def test_the_readers_nested_entries_document_round_trips() -> None:
    # tests/protocol/test_reader.py::test_only_children_of_the_root_are_entries
    document = read_document(urlset(
        '<url><loc>http://e.com/a</loc><x:wrap xmlns:x="urn:x"><url><loc>inner</loc></url>'
        '</x:wrap></url><x:between xmlns:x="urn:x"/><url><loc>http://e.com/b</loc></url>'
        '<x:after xmlns:x="urn:x"/>'))
    written = document_bytes(document)
    assert read_document(written) == document
    assert document_bytes(read_document(written)) == written


# A foreign element in no namespace, under a Sitemap namespace bound to a prefix: written under
# the writer's default namespace (the Sitemap's), it must not move into it.
PREFIXED = (f'<s:urlset xmlns:s="{SITEMAP_NS}" xmlns:rs="http://www.openarchives.org/rs/terms/"'
            ' xmlns:x="urn:x"><s:url><s:loc>http://a/1</s:loc>{extra}</s:url></s:urlset>')


@pytest.mark.parametrize(("extra", "tags"), [
    ("<foo/>", ["foo"]),
    ("<foo><bar/></foo>", ["foo", "bar"]),
    ("<x:foo><bar/><s:baz/></x:foo>", ["{urn:x}foo", "bar", f"{{{SITEMAP_NS}}}baz"]),
    ('<foo xmlns="urn:d"><bar xmlns=""/></foo>', ["{urn:d}foo", "bar"]),
])
def test_foreign_elements_keep_their_namespaces_through_write_and_read(
        extra: str, tags: list[str]) -> None:
    document = read_document(PREFIXED.format(extra=extra).encode())
    written = document_bytes(document)
    [kept] = read_document(written).entries[0].extra
    assert [element.tag for element in etree.fromstring(kept).iter()] == tags
    assert document_bytes(read_document(written)) == written


@pytest.mark.parametrize("extra", ["<foo/>", "<x:foo><bar/></x:foo>"])
def test_prefixed_sitemap_namespace_round_trips_to_an_equal_model(extra: str) -> None:
    document = read_document(PREFIXED.format(extra=extra).encode())
    assert roundtrip(document) == document


# -- escaping and refusals ---------------------------------------------------------------------

def test_xml_specials_round_trip() -> None:
    nasty = 'a&b<c>d"e\'f]]>g'
    md = Metadata(type=f" {nasty}\t\n\r ", path="/&amp;", extra={"note": nasty})
    link = Link(rel=nasty, href=f"http://e/?a=1&b=\"2\"\n{nasty}", extra={"{urn:q}x": nasty})
    entry = Entry(f"http://e/?q={nasty}&x=\r\ny", changefreq=nasty, md=md, links=(link,))
    document = Document(Head(md=Metadata(capability=nasty)), [entry])
    written = document_bytes(document)
    assert roundtrip(document) == document
    assert b"&lt;c&gt;d" in written and b"&quot;e'f" in written and b"&#13;" in written


@pytest.mark.parametrize("character", ["\x00", "\x01", "\x0b", "\x1f", "\ud800", "\ufffe"])
def test_characters_xml_does_not_allow_are_refused(character: str) -> None:
    value = f"http://e/{character}x"
    for entry in (Entry(value), Entry("http://e/r", md=Metadata(type=value)),
                  Entry("http://e/r", links=(Link(rel="a", href=value),)),
                  Entry("http://e/r", md=Metadata(extra={"note": value}))):
        with pytest.raises(InvalidValueError, match=r"XML 1\.0") as raised:
            document_bytes(Document(Head(), [entry]))
        assert repr(value) in str(raised.value)


@pytest.mark.parametrize("entry", [
    Entry(""),
    Entry(" http://e/r"),
    Entry("http://e/r\n"),
    Entry("http://e/r", changefreq=" daily"),
    Entry("http://e/r", lastmod=datetime(2013, 1, 1)),  # naive
    Entry("http://e/r", md=Metadata(datetime=datetime(2013, 1, 1))),
    Entry("http://e/r", md=Metadata(hash=Hashes((HashValue("MD5", "abc"),)))),
    Entry("http://e/r", md=Metadata(hash=Hashes((HashValue("md5", "a b"),)))),
    Entry("http://e/r", md=Metadata(length="12")),  # type: ignore[arg-type]
    Entry("http://e/r", md=Metadata(extra={"length": "1"})),  # duplicate attribute
    Entry("http://e/r", md=Metadata(extra={"xmlns": "urn:x"})),
    Entry("http://e/r", md=Metadata(extra={"a b": "1"})),
    Entry("http://e/r", md=Metadata(extra={"p:x": "1"})),
    Entry("http://e/r", md=Metadata(extra={"{}x": "1"})),
    Entry("http://e/r", links=(Link(rel="a", href=None),)),  # type: ignore[arg-type]
])
def test_values_that_would_not_read_back_are_refused(entry: Entry) -> None:
    stream = io.BytesIO()
    writer = DocumentWriter(stream, Head())
    before = stream.getvalue()
    with pytest.raises(InvalidValueError):
        writer.write(entry)
    assert stream.getvalue() == before and writer.entries == 0  # nothing of it was written


@pytest.mark.parametrize(("entry", "problem"), [
    (Entry("http://e/r", md=Metadata(datetime=datetime(2013, 1, 1))),
     "<rs:md> datetime: .* has no time zone"),
    (Entry("http://e/r", lastmod=datetime(2013, 1, 1)), "<lastmod>: .* has no time zone"),
    (Entry("http://e/r", md=Metadata(extra={"a b": "1"})), "<rs:md> attribute name 'a b'"),
    (Entry("http://e/r", extra=("<a>",)), "foreign element '<a>' is not well-formed"),
])
def test_errors_name_the_entry(entry: Entry, problem: str) -> None:
    with pytest.raises(InvalidValueError, match=f"^the entry for http://e/r : {problem}"):
        DocumentWriter(io.BytesIO(), Head()).write(entry)


def test_bad_namespace_prefix_is_refused() -> None:
    with pytest.raises(InvalidValueError):
        DocumentWriter(io.BytesIO(), Head(namespaces={"a b": "urn:x"}))


# -- DocumentWriter ----------------------------------------------------------------------------

def change(name: str, hours: int | None = None, *, lastmod: int | None = None) -> Entry:
    return Entry(f"http://e/{name}", lastmod=None if lastmod is None else at(lastmod),
                 md=Metadata(change="updated", datetime=None if hours is None else at(hours)))


def at(hours: int) -> datetime:
    return T0 + timedelta(hours=hours)


@pytest.mark.parametrize("capability", ["changelist", "changedump-manifest"])
@pytest.mark.parametrize("entries", [
    [change("a", 2), change("b", 1)],
    [change("a", lastmod=2), change("b", lastmod=1)],  # 1.0: the change time is in lastmod
    [change("a", 2), change("u"), change("b", 1)],  # untimed entries are not ordered
], ids=["datetime", "lastmod", "untimed-between"])
def test_change_documents_refuse_changes_out_of_order(capability: str,
                                                      entries: list[Entry]) -> None:
    stream = io.BytesIO()
    writer = DocumentWriter(stream, Head(md=Metadata(capability=capability, from_=T0)))
    for entry in entries[:-1]:
        writer.write(entry)
    before = stream.getvalue()
    with pytest.raises(InvalidValueError, match=r"^http://e/b : 2013-01-03T10:00:00Z is earlier "
                       r"than the previous entry's 2013-01-03T11:00:00Z"):
        writer.write(entries[-1])
    assert stream.getvalue() == before and writer.entries == len(entries) - 1
    writer.write(change("c", 2))  # the refused entry did not move the order on
    writer.close()


@pytest.mark.parametrize("capability", ["changelist", "changedump"])
def test_indexes_of_changes_refuse_children_out_of_order(capability: str) -> None:
    writer = DocumentWriter(io.BytesIO(), Head(root=Root.SITEMAPINDEX,
                                               md=Metadata(capability=capability, from_=T0)))
    writer.write(Entry("http://e/2.xml", md=Metadata(from_=at(2))))
    writer.write(Entry("http://e/undated.xml"))
    with pytest.raises(InvalidValueError, match=r"^http://e/1.xml : .* is earlier than the "
                       r"previous entry's 2013-01-03T11:00:00Z; .* \(section 1(2\.2|3\.1)\)$"):
        writer.write(Entry("http://e/1.xml", md=Metadata(from_=at(1))))


def test_what_the_order_rule_lets_through() -> None:
    entries = [
        change("a", lastmod=-5), change("b", 1),  # lastmod stands for the time until a datetime
        change("c", 1), change("d"),  # equal times, and no time at all
        change("e", 2, lastmod=-10), change("f", lastmod=-20),  # now lastmod is the resource's
    ]
    head = Head(md=Metadata(capability="changelist", from_=at(-24)))
    written = document_bytes(Document(head, entries))
    assert not [f for f in validate_source(written) if "chronological" in f.message]
    snapshot = Head(md=Metadata(capability="resourcelist", at=T0))  # not changes: any order
    document_bytes(Document(snapshot, [change("a", 2), change("b", 1)]))


def test_writer_streams_to_a_non_seekable_pipe_and_counts_its_entries() -> None:
    read_end, write_end = os.pipe()
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(os.fdopen(read_end, "rb").read()))
    reader.start()
    with open(write_end, "wb", buffering=0) as stream:
        assert not stream.seekable()
        with DocumentWriter(stream, RESOURCE_HEAD) as writer:
            for entry in resources(3):
                writer.write(entry)
    reader.join()
    assert writer.entries == 3
    assert received[0] == document_bytes(Document(RESOURCE_HEAD, resources(3)))


def test_failed_block_leaves_the_document_unterminated() -> None:
    stream = io.BytesIO()
    with pytest.raises(RuntimeError), DocumentWriter(stream, RESOURCE_HEAD) as writer:
        writer.write(resources(1)[0])
        raise RuntimeError("source went away")
    assert not stream.getvalue().rstrip().endswith(b"</urlset>")
    with pytest.raises(DocumentError):
        read_document(stream.getvalue())


def test_write_after_close_is_refused() -> None:
    writer = DocumentWriter(io.BytesIO(), RESOURCE_HEAD)
    writer.close()
    writer.close()  # once only
    with pytest.raises(DocumentError):
        writer.write(resources(1)[0])


def test_write_document_to_a_file(tmp_path: Path) -> None:
    document = Document(RESOURCE_HEAD, resources(5))
    with open(tmp_path / "rl.xml", "wb") as stream:
        write_document(document, stream)
    assert read_document(tmp_path / "rl.xml") == document


def test_memory_does_not_grow_with_entries() -> None:
    def entries(count: int) -> Iterator[Entry]:
        for n in range(count):
            yield Entry(f"http://example.com/res{n}", lastmod=T0,
                        md=Metadata(hash=Hashes.of(md5=f"{n:032x}"), length=n))

    peaks = []
    for count in (1_000, 10_000):
        with open(os.devnull, "wb") as sink:
            tracemalloc.start()
            with DocumentWriter(sink, RESOURCE_HEAD) as writer:
                for entry in entries(count):
                    writer.write(entry)
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        assert writer.entries == count
    assert peaks[1] < peaks[0] * 2 + 64 * 1024


# -- property: random documents round-trip -----------------------------------------------------

TIMEZONES = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)),
                             timezone(-timedelta(hours=8))])
DATETIMES = st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30),
                         timezones=TIMEZONES)
CHARACTERS = st.one_of(
    st.characters(exclude_categories=("Cs", "Cc", "Cn")),
    st.sampled_from("&<>\"' \t\n\r]"),
)
VALUES = st.text(CHARACTERS, max_size=16)
LOCS = st.text(CHARACTERS, min_size=1, max_size=40).map(str.strip).filter(bool)
HASHES = st.lists(
    st.builds(HashValue, st.sampled_from(["md5", "sha-1", "sha-256"]),
              st.text("0123456789abcdef", min_size=1, max_size=64)),
    max_size=3,
).map(lambda values: Hashes(tuple(values)))
EXTRA_NAMES = st.sampled_from(["note", "x-y.z", "{urn:ex}note", "{urn:other}a",
                               "{http://www.w3.org/XML/1998/namespace}lang"])
EXTRA = st.dictionaries(EXTRA_NAMES, VALUES, max_size=3)


def optional(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.none() | strategy


@st.composite
def metadata(draw: st.DrawFn, capability: st.SearchStrategy | None = None) -> Metadata:
    return Metadata(
        capability=draw(optional(VALUES) if capability is None else capability),
        at=draw(optional(DATETIMES)),
        completed=draw(optional(DATETIMES)),
        from_=draw(optional(DATETIMES)),
        until=draw(optional(DATETIMES)),
        change=draw(optional(st.sampled_from(["created", "updated", "deleted"]) | VALUES)),
        datetime=draw(optional(DATETIMES)),
        hash=draw(optional(HASHES)),
        length=draw(optional(st.integers(0, 2**63))),
        type=draw(optional(VALUES)),
        encoding=draw(optional(VALUES)),
        path=draw(optional(VALUES)),
        extra=draw(EXTRA),
    )


@st.composite
def links(draw: st.DrawFn) -> Link:
    return Link(
        rel=draw(st.sampled_from(["duplicate", "alternate", "up"]) | VALUES),
        href=draw(VALUES),
        pri=draw(optional(st.integers(1, 999_999))),
        modified=draw(optional(DATETIMES)),
        hash=draw(optional(HASHES)),
        length=draw(optional(st.integers(0, 2**40))),
        type=draw(optional(VALUES)),
        encoding=draw(optional(VALUES)),
        path=draw(optional(VALUES)),
        extra=draw(EXTRA),
    )


@st.composite
def entries(draw: st.DrawFn) -> Entry:
    return Entry(
        loc=draw(LOCS),
        lastmod=draw(optional(DATETIMES)),
        changefreq=draw(optional(st.sampled_from(["daily", "never"]) | VALUES.map(str.strip))),
        md=draw(optional(metadata())),
        links=tuple(draw(st.lists(links(), max_size=3))),
    )


@st.composite
def documents(draw: st.DrawFn) -> Document:
    capability = st.sampled_from([c.value for c in Capability])
    head = Head(
        root=draw(st.sampled_from(Root)),
        md=draw(optional(metadata(capability))),
        links=tuple(draw(st.lists(links(), max_size=2))),
        namespaces=draw(st.sampled_from([{}, {"ex": "urn:ex"}])),
    )
    return Document(head, draw(st.lists(entries(), max_size=5)))


@settings(max_examples=200, deadline=None)
@given(documents())
def test_random_documents_round_trip(document: Document) -> None:
    # Never write what we would not accept: changes out of order are refused exactly when the
    # validator would find them out of order as an error (in a Change Dump, a warning: "should").
    if any(f.severity is Severity.ERROR and "chronological" in f.message
           for f in validate_document(document)):
        with pytest.raises(InvalidValueError, match="forward chronological order"):
            document_bytes(document)
        return
    written = document_bytes(document)
    again = read_document(written)
    assert again == document
    assert document_bytes(again) == written

