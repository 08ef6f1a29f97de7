"""The reader on hostile bytes: the spec's examples, mutated, raise nothing but DocumentError.

A Source's documents are hostile (DESIGN.md, "Safety rules"): whatever bytes arrive, reading them
either gives a document or raises :class:`DocumentError` (or its :class:`UnsafeContentError`)
naming the URL, never another exception from lxml or the standard library.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_resourcesync.errors import DocumentError
from airflow_provider_resourcesync.protocol.reader import read_document
from tests.protocol.conftest import XML_EXAMPLES

#: Pieces a mutation inserts: namespace trouble (relative, empty, undeclared, unparsable URIs,
#: rebinding the document's own prefixes), markup out of place, entities, bytes that are not text.
PIECES = [
    b'<x:y xmlns:x="rel"/>', b' xmlns:x="rel"', b'<q:a/>', b' xmlns:rs=""', b' xmlns=""',
    b' xmlns:r="http://o/}/"', b' xmlns:r="a b"', b'<a xmlns="../rel">t</a>', b"<rs:x/>",
    b' xml:lang="en"', b' xmlns:xml="urn:x"', b"<url><loc>http://e.com/a</loc></url>",
    b'<rs:md capability="x"/>', b'<rs:ln rel="a" href="b"/>', b"<sitemapindex/>", b"</url>",
    b"<urlset>", b"&amp;", b"&#0;", b"&nope;", b"<![CDATA[x]]>", b"<!-- c -->", b"<?pi x?>",
    b"<!DOCTYPE a>", b"\x00", b"\xff\xfe", b"\xc3", b"\xe2\x80\xa8", b"<", b">", b'"', b"'",
]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A spec example after one to four insertions, deletions, byte flips or repeats."""
    data = draw(st.sampled_from(XML_EXAMPLES)).read_bytes()
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["insert", "delete", "flip", "repeat"]))
        if kind == "insert":
            data = data[:at] + draw(st.sampled_from(PIECES)) + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 20)):]
        elif kind == "flip":
            data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1:]
        else:
            end = draw(st.integers(at, len(data)))
            data = data[:end] + data[at:end] + data[end:]
    return data


@settings(max_examples=600, deadline=None, derandomize=True)
@given(mutated())
def test_a_mutated_document_is_read_or_refused_as_a_document_error(data: bytes) -> None:
    try:
        document = read_document(data, url="http://e.com/mutated.xml")
    except DocumentError as refused:
        assert refused.url == "http://e.com/mutated.xml"
    else:
        assert all(entry.loc for entry in document)


@pytest.mark.parametrize("name", ["rel", "../up"])
@pytest.mark.parametrize("example", XML_EXAMPLES, ids=lambda path: path.stem)
def test_a_foreign_element_in_a_relative_namespace_keeps_every_entry(example: Path,
                                                                     name: str) -> None:
    data = example.read_bytes()
    expected = len(read_document(data))
    end = data.index(b"</url>") if b"</url>" in data else data.index(b"</sitemap>")
    document = read_document(data[:end] + f'<x:y xmlns:x="{name}">kept</x:y>'.encode()
                             + data[end:])
    assert len(document) == expected
    assert document.entries[0].extra[-1] == f'<x:y xmlns:x="{name}">kept</x:y>'
