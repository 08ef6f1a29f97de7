"""Deterministic, streaming writer for ResourceSync documents (spec section 7).

:class:`DocumentWriter` writes one ``<urlset>`` or ``<sitemapindex>`` entry by entry, so memory does
not grow with the document; :func:`write_split` splits a long list into parts at the limits of
section 7 and groups them with an index (10.2, 12.2).

Strict out (DESIGN.md): the same model always gives the same bytes, and everything written reads
back with :func:`~airflow_provider_resourcesync.protocol.reader.read_document` to an equal model.
A value that could not survive that trip (a character XML 1.0 does not allow, a ``<loc>`` with
surrounding whitespace, a foreign element that is not well-formed) raises
:class:`~airflow_provider_resourcesync.errors.InvalidValueError` naming it, and nothing of the
entry is written.

Layout: the XML declaration, the root with its namespace declarations, then one line per head
element (``rs:md``, ``rs:ln``..., foreign elements; the order of Table 2) and one line per entry
(``loc``, ``lastmod``, ``changefreq``, ``rs:md``, ``rs:ln``..., foreign elements).
"""

from __future__ import annotations

import io
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime
from typing import IO, Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from lxml import etree

from airflow_provider_resourcesync.errors import DocumentError, InvalidValueError
from airflow_provider_resourcesync.protocol.closing import FinishedOnSuccess
from airflow_provider_resourcesync.protocol.datetimes import format_datetime
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.protocol.model import (
    MAX_DOCUMENT_BYTES,
    MAX_ENTRIES,
    RS_NS,
    SITEMAP_NS,
    Document,
    Entry,
    Head,
    Link,
    Metadata,
    Root,
)

__all__ = [
    "DocumentWriter",
    "default_part_url",
    "document_bytes",
    "write_document",
    "write_split",
]

_XML_NS = "http://www.w3.org/XML/1998/namespace"

# -- values ------------------------------------------------------------------------------------

_XML_CHARS = "\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff"
_NOT_XML = re.compile(f"[^{_XML_CHARS}]")
# Anything but the characters that pass unchanged: the fast path for the usual plain value.
_ABOVE_GT = "\x3f-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff"
_TEXT_UNSAFE = re.compile(f"[^\t\n\x20-\x25\x27-\x3b\x3d{_ABOVE_GT}]")
_ATTRIBUTE_UNSAFE = re.compile(f"[^\x20\x21\x23-\x25\x27-\x3b\x3d{_ABOVE_GT}]")
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
# Tabs and line breaks as references: a parser normalizes literal ones in attributes to spaces.
_ATTRIBUTE_ESCAPES = str.maketrans({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;",
    "\t": "&#9;", "\n": "&#10;", "\r": "&#13;",
})

_NAME_START = (
    "A-Z_a-z\xc0-\xd6\xd8-\xf6\xf8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c\u200d\u2070-\u218f"
    "\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
)
_NCNAME = re.compile(f"[{_NAME_START}][{_NAME_START}\\-.0-9\xb7\u0300-\u036f\u203f\u2040]*")


def _escape(value: str, unsafe: re.Pattern[str], table: dict[int, str], what: str) -> str:
    if unsafe.search(value) is None:
        return value
    bad = _NOT_XML.search(value)
    if bad is not None:
        raise InvalidValueError(
            f"{what} {value!r} contains {bad.group()!r}, a character XML 1.0 does not allow")
    return value.translate(table)


def _text(value: str, what: str) -> str:
    """Element content; the reader strips it, so surrounding whitespace would be lost."""
    if value != value.strip():
        raise InvalidValueError(f"{what} {value!r} has leading or trailing whitespace")
    return _escape(value, _TEXT_UNSAFE, _TEXT_ESCAPES, what)


def _attribute(value: str, what: str) -> str:
    return _escape(value, _ATTRIBUTE_UNSAFE, _ATTRIBUTE_ESCAPES, what)


def _integer(value: int) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValueError(f"{value!r} is not an integer")
    return str(value)


def _hashes(value: Hashes) -> str:
    text = str(value)
    if Hashes.parse(text) != value:
        raise InvalidValueError(
            f"{value!r} would read back differently from {text!r} (section 7: algorithm tokens "
            "are lower case, digests have no whitespace)")
    return text


_Format = Callable[[Any], str]
# (attribute, field, format) in the order written: the fixed order makes the output deterministic.
_MD_ATTRIBUTES: tuple[tuple[str, str, _Format], ...] = (
    ("capability", "capability", str),
    ("at", "at", format_datetime),
    ("completed", "completed", format_datetime),
    ("from", "from_", format_datetime),
    ("until", "until", format_datetime),
    ("change", "change", str),
    ("datetime", "datetime", format_datetime),
    ("hash", "hash", _hashes),
    ("length", "length", _integer),
    ("type", "type", str),
    ("encoding", "encoding", str),
    ("path", "path", str),
)
_LN_ATTRIBUTES: tuple[tuple[str, str, _Format], ...] = (
    ("rel", "rel", str),
    ("href", "href", str),
    ("pri", "pri", _integer),
    ("modified", "modified", format_datetime),
    ("hash", "hash", _hashes),
    ("length", "length", _integer),
    ("type", "type", str),
    ("encoding", "encoding", str),
    ("path", "path", str),
)
_MD_NAMES = frozenset(name for name, _, _ in _MD_ATTRIBUTES)
_LN_NAMES = frozenset(name for name, _, _ in _LN_ATTRIBUTES)

# Children the reader takes for fields, not for foreign elements (they must not hide in ``extra``).
_ENTRY_FIELDS = frozenset(
    f"{{{ns}}}{name}" for ns, name in
    ((SITEMAP_NS, "loc"), (SITEMAP_NS, "lastmod"), (SITEMAP_NS, "changefreq"),
     (RS_NS, "md"), (RS_NS, "ln")))
_HEAD_FIELDS = frozenset(
    f"{{{ns}}}{name}" for ns, name in
    ((RS_NS, "md"), (RS_NS, "ln"), (SITEMAP_NS, "urlset"), (SITEMAP_NS, "sitemapindex")))


def _declarations(namespaces: Mapping[str, str]) -> list[tuple[str, str]]:
    """The head's own namespace prefixes, sorted; the default namespace, ``rs`` and ``xml`` are
    always the writer's."""
    found = []
    for prefix, uri in sorted(namespaces.items()):
        if prefix in ("", "rs", "xml"):
            continue
        if prefix == "xmlns" or not _NCNAME.fullmatch(prefix) or not uri:
            raise InvalidValueError(f"namespace declaration {prefix!r}: {uri!r} cannot be written")
        found.append((prefix, uri))
    return found


# -- one document ------------------------------------------------------------------------------

class _Serializer:
    """Turns a head and entries into bytes, for one root element and its namespace context."""

    def __init__(self, root: Root, namespaces: Mapping[str, str]) -> None:
        self._root = root
        self._entry_tag = root.entry_tag
        self._entry_qname = f"{{{SITEMAP_NS}}}{root.entry_tag}"
        declared = _declarations(namespaces)
        self._root_open = f'<{root} xmlns="{SITEMAP_NS}" xmlns:rs="{RS_NS}"' + "".join(
            f' xmlns:{prefix}="{_attribute(uri, "namespace")}"' for prefix, uri in declared) + ">"
        self._prefixes = {uri: prefix for prefix, uri in reversed(declared)}
        self._prefixes.update({RS_NS: "rs", _XML_NS: "xml"})
        self._taken = {"rs", "xml", *(prefix for prefix, _ in declared)}
        self._parser = etree.XMLParser(
            resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False,
            remove_comments=True, remove_pis=True,
        )

    def head(self, head: Head) -> bytes:
        """The XML declaration, the root's start tag and the head's elements (section 7)."""
        lines = ['<?xml version="1.0" encoding="UTF-8"?>', self._root_open]
        if head.md is not None:
            lines.append("  " + self._md(head.md))
        lines.extend("  " + self._link(link) for link in head.links)
        lines.extend("  " + self._foreign(text, in_entry=False) for text in head.extra)
        return ("\n".join(lines) + "\n").encode()

    def entry(self, entry: Entry) -> bytes:
        """One ``<url>`` (``<sitemap>`` in an index) on one line."""
        if not entry.loc:
            raise InvalidValueError("an entry needs a <loc> (section 7)")
        tag = self._entry_tag
        parts = [f"  <{tag}><loc>", _text(entry.loc, "<loc>"), "</loc>"]
        if entry.lastmod is not None:
            parts += ["<lastmod>", format_datetime(entry.lastmod), "</lastmod>"]
        if entry.changefreq is not None:
            parts += ["<changefreq>", _text(entry.changefreq, "<changefreq>"), "</changefreq>"]
        if entry.md is not None:
            parts.append(self._md(entry.md))
        parts.extend(self._link(link) for link in entry.links)
        parts.extend(self._foreign(text, in_entry=True) for text in entry.extra)
        parts.append(f"</{tag}>\n")
        return "".join(parts).encode()

    def end(self) -> bytes:
        return f"</{self._root}>\n".encode()

    # -- rs:md and rs:ln -------------------------------------------------------------------------

    def _md(self, md: Metadata) -> str:
        return self._element("rs:md", md, _MD_ATTRIBUTES, _MD_NAMES)

    def _link(self, link: Link) -> str:
        if link.rel is None or link.href is None:
            raise InvalidValueError(f"<rs:ln> needs both rel and href (section 7): {link!r}")
        return self._element("rs:ln", link, _LN_ATTRIBUTES, _LN_NAMES)

    def _element(self, tag: str, item: Metadata | Link,
                 spec: tuple[tuple[str, str, _Format], ...], known: frozenset[str]) -> str:
        parts = [f"<{tag}"]
        for name, field_name, to_text in spec:
            value = getattr(item, field_name)
            if value is None:
                continue
            try:
                text = _attribute(to_text(value), "value")
            except InvalidValueError as exc:
                raise InvalidValueError(f"<{tag}> {name}: {exc}") from None
            parts.append(f' {name}="{text}"')
        local: dict[str, str] = {}  # namespace -> prefix declared on this element
        for key in sorted(item.extra):
            name = self._qualified(key, tag, known, local)
            parts.append(f' {name}="{_attribute(item.extra[key], f"<{tag}> {key}")}"')
        declarations = "".join(
            f' xmlns:{prefix}="{_attribute(uri, "namespace")}"' for uri, prefix in local.items())
        return parts[0] + declarations + "".join(parts[1:]) + "/>"

    def _qualified(self, key: str, tag: str, known: frozenset[str], local: dict[str, str]
                   ) -> str:
        """The written name of an extra attribute: ``name`` or ``{namespace}name`` (section 7:
        community attributes are namespaced), declaring a prefix where the root has none."""
        uri, _, name = key[1:].partition("}") if key.startswith("{") else ("", "", key)
        if not _NCNAME.fullmatch(name) or (key.startswith("{") and not uri) or (
                not uri and (name in known or name == "xmlns")):
            raise InvalidValueError(f"<{tag}> attribute name {key!r} cannot be written")
        if not uri:
            return name
        prefix = self._prefixes.get(uri) or local.get(uri)
        if prefix is None:
            number = 0
            while f"ns{number}" in self._taken or f"ns{number}" in local.values():
                number += 1
            prefix = local[uri] = f"ns{number}"
        return f"{prefix}:{name}"

    # -- foreign elements ------------------------------------------------------------------------

    def _foreign(self, text: str, *, in_entry: bool) -> str:
        """A foreign element, checked and serialized as the reader will see it in this document.

        It is parsed in the same namespace context it is written into, so its namespace
        declarations come out as the reader serializes them, and reading it back gives the same
        string. Elements the reader would take for fields or entries are refused.
        """
        inner = (f"<{self._entry_tag}>", f"</{self._entry_tag}>") if in_entry else ("", "")
        source = f"{self._root_open}{inner[0]}{text}{inner[1]}</{self._root}>"
        try:
            wrapper = etree.fromstring(source.encode(), self._parser)
        except (etree.XMLSyntaxError, UnicodeEncodeError) as exc:
            raise InvalidValueError(f"foreign element {text!r} is not well-formed XML: {exc}"
                                    ) from None
        container = wrapper[0] if in_entry and len(wrapper) == 1 else wrapper
        if (len(wrapper) != 1 or len(container) != 1 or (container.text or "").strip()
                or (container[0].tail or "").strip()):
            raise InvalidValueError(f"foreign element {text!r} is not exactly one element")
        element = container[0]
        fields = _ENTRY_FIELDS if in_entry else _HEAD_FIELDS
        if element.tag in fields or any(e.tag == self._entry_qname for e in element.iter()):
            raise InvalidValueError(
                f"foreign element {text!r} would be read as a ResourceSync element, not kept")
        return etree.tostring(element, encoding="unicode", with_tail=False)


class DocumentWriter(FinishedOnSuccess):
    """Streams one document (section 7) to a binary stream, which need not be seekable.

    The head is written at once, each entry as :meth:`write` is called, and the closing tag by
    :meth:`close` (the stream itself stays open). As a context manager the closing tag is written
    only when the block succeeds: a failed run leaves a truncated document that no reader takes
    for a complete one.

    :param stream: where the document goes.
    :param head: the document's root, ``rs:md``, ``rs:ln`` and foreign elements.
    """

    def __init__(self, stream: IO[bytes], head: Head) -> None:
        self._stream = stream
        self._serializer = _Serializer(head.root, head.namespaces)
        self._closed = False
        #: Entries written so far.
        self.entries = 0
        #: Bytes written so far, the closing tag included once closed.
        self.bytes_written = 0
        self._emit(self._serializer.head(head))

    def write(self, entry: Entry) -> None:
        """Write one entry; an entry that cannot be written raises before any of it is."""
        if self._closed:
            raise DocumentError("entry written after the document was closed")
        self._emit(self._serializer.entry(entry))
        self.entries += 1

    def close(self) -> None:
        """Write the closing tag (once); the stream is not closed."""
        if not self._closed:
            self._emit(self._serializer.end())
            self._closed = True

    def _emit(self, data: bytes) -> None:
        self._stream.write(data)
        self.bytes_written += len(data)


def write_document(document: Document, stream: IO[bytes]) -> None:
    """Write a whole document to ``stream``."""
    with DocumentWriter(stream, document.head) as writer:
        for entry in document.entries:
            writer.write(entry)


def document_bytes(document: Document) -> bytes:
    """A whole document as bytes."""
    buffer = io.BytesIO()
    write_document(document, buffer)
    return buffer.getvalue()


# -- split and index ---------------------------------------------------------------------------

#: Serialized entries of a part are held in memory up to this size, then spill to disk.
_SPOOL_MEMORY = 4 * 1024 * 1024
#: The longest datetime :func:`format_datetime` writes, to size a part's head before it is known.
_LONGEST_DATETIME = datetime.max.replace(tzinfo=UTC)


def default_part_url(url: str, number: int) -> str:
    """The URL of part ``number`` (from 1) of the document at ``url``.

    ``.../resourcelist.xml`` -> ``.../resourcelist-00001.xml``; ``changelist.xml.gz`` ->
    ``changelist-00001.xml.gz``; a name without extension gets the suffix at its end.
    """
    scheme, netloc, path, query, fragment = urlsplit(url)
    directory, slash, name = path.rpartition("/")
    if not name:
        raise InvalidValueError(f"{url!r} names no file to number parts after; pass part_url")
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem:
        stem, extension = name, ""
    else:
        extension = "." + extension
        inner_stem, inner_dot, inner = stem.rpartition(".")
        if extension.lower() == ".gz" and inner_dot and inner_stem:
            stem, extension = inner_stem, f".{inner}{extension}"
    path = f"{directory}{slash}{stem}-{number:05d}{extension}"
    return urlunsplit((scheme, netloc, path, query, fragment))


class _Item(NamedTuple):
    """A serialized entry waiting for its part."""

    data: bytes
    time: datetime | None
    loc: str


class _Part:
    """A part being filled: its serialized entries, spooled to memory and then to disk."""

    def __init__(self, from_: datetime | None) -> None:
        self.from_ = from_
        self.size = 0
        self.count = 0
        self._body = tempfile.SpooledTemporaryFile(max_size=_SPOOL_MEMORY)  # noqa: SIM115

    def add(self, data: bytes) -> None:
        self._body.write(data)
        self.size += len(data)
        self.count += 1

    def copy_to(self, stream: IO[bytes]) -> None:
        self._body.seek(0)
        shutil.copyfileobj(self._body, stream)

    def close(self) -> None:
        self._body.close()


class _Index:
    """The index over the parts written so far (sections 10.2, 12.2).

    It holds at most section 7's 50,000 entries (a smaller ``max_entries`` sizes the parts, not
    the index) in at most ``max_bytes``.
    """

    def __init__(self, head: Head, url: str, max_bytes: int) -> None:
        self._serializer = _Serializer(Root.SITEMAPINDEX, head.namespaces)
        self._head = self._serializer.head(head)
        self._url = url
        self._max_bytes = max_bytes
        self._entries: list[bytes] = []
        self._size = len(self._head) + len(self._serializer.end())
        self.locs: list[str] = []

    def add(self, entry: Entry) -> None:
        """List one more part; raises before the part is written if the index cannot hold it."""
        if entry.loc == self._url or entry.loc in self.locs:
            raise InvalidValueError(f"part URL {entry.loc!r} is used twice")
        data = self._serializer.entry(entry)
        if len(self._entries) >= MAX_ENTRIES or self._size + len(data) > self._max_bytes:
            raise DocumentError(
                f"the index would list more than {MAX_ENTRIES} parts or exceed "
                f"{self._max_bytes} bytes, and Sitemap indexes do not nest; allow larger parts",
                url=self._url, section="7")
        self._entries.append(data)
        self._size += len(data)
        self.locs.append(entry.loc)

    def write(self, stream: IO[bytes]) -> None:
        stream.write(self._head)
        stream.writelines(self._entries)
        stream.write(self._serializer.end())


def _index_head(head: Head) -> Head:
    """The index's head: same capability and links, with the time attributes that suit an index
    (Appendix A: ``at``/``completed`` for snapshots, ``from``/``until`` for changes)."""
    md, kind = head.md, head.kind
    if md is not None:
        snapshot = kind is None or not kind.uses_from
        changes = kind is None or not kind.uses_at
        md = Metadata(
            capability=md.capability,
            at=md.at if snapshot else None,
            completed=md.completed if snapshot else None,
            from_=md.from_ if changes else None,
            until=md.until if changes else None,
            extra=dict(md.extra),
        )
    return replace(head, root=Root.SITEMAPINDEX, md=md)


class _Splitter:
    """Fills parts greedily and writes each when the next entry does not fit (see write_split).

    Part 1 might still turn out to be the whole document, whose head is shorter than a part's (no
    ``index`` link): entries that fit the whole document but not part 1 wait in ``_tail`` (no
    more bytes than that difference) until the input ends (one document) or overflows (then
    they open part 2).
    """

    def __init__(
        self,
        head: Head,
        *,
        url: str,
        open_output: Callable[[str], AbstractContextManager[IO[bytes]]],
        part_url: Callable[[int], str],
        max_entries: int,
        max_bytes: int,
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise InvalidValueError(f"limits must be positive: {max_entries=}, {max_bytes=}")
        self._head, self._url = head, url
        self._open_output, self._part_url = open_output, part_url
        self._max_entries, self._max_bytes = max_entries, max_bytes
        kind = head.kind
        self._uses_from = kind is not None and kind.uses_from
        self._uses_at = kind is not None and kind.uses_at
        self._serializer = _Serializer(head.root, head.namespaces)
        self._end = self._serializer.end()
        self._single_head = self._serializer.head(head)
        self._part_overhead = len(self._end) + len(
            self._serializer.head(self._part_head(_LONGEST_DATETIME, _LONGEST_DATETIME)))
        if len(self._single_head) + len(self._end) > max_bytes:
            raise DocumentError(f"the document's head alone exceeds {max_bytes} bytes", url=url)
        self._part = _Part(head.md.from_ if head.md is not None else None)
        self._tail: list[_Item] = []
        self._tail_size = 0
        self._latest: datetime | None = None  # the last change time placed in a part
        self._index = _Index(_index_head(head), url, max_bytes)
        self._split = False

    def add(self, entry: Entry) -> None:
        item = _Item(self._serializer.entry(entry), entry.change_time, entry.loc)
        if not self._split:
            if self._fits_single(len(item.data)):
                self._hold(item)
                return
            self._start_index()
        self._place(item)

    def finish(self) -> list[str]:
        if not self._split:
            with self._open_output(self._url) as stream:
                stream.write(self._single_head)
                self._part.copy_to(stream)
                stream.writelines(item.data for item in self._tail)
                stream.write(self._end)
            return [self._url]
        self._flush(self._head.md.until if self._head.md is not None else None)
        with self._open_output(self._url) as stream:
            self._index.write(stream)
        return [*self._index.locs, self._url]

    def close(self) -> None:
        self._part.close()

    # -- filling ---------------------------------------------------------------------------------

    def _fits_single(self, size: int) -> bool:
        return (self._part.count + len(self._tail) < self._max_entries
                and len(self._single_head) + self._part.size + self._tail_size + size
                + len(self._end) <= self._max_bytes)

    def _fits_part(self, size: int) -> bool:
        return (self._part.count < self._max_entries
                and self._part_overhead + self._part.size + size <= self._max_bytes)

    def _hold(self, item: _Item) -> None:
        if not self._tail and self._fits_part(len(item.data)):
            self._append(item)
        else:
            self._tail.append(item)
            self._tail_size += len(item.data)

    def _start_index(self) -> None:
        if self._head.is_index:
            raise DocumentError("an index does not fit one document and cannot be split: "
                                "Sitemap indexes do not nest", url=self._url, section="7")
        if self._head.index is not None:
            raise DocumentError(f"the document belongs to the index {self._head.index} and cannot "
                                "be split into an index of its own: Sitemap indexes do not nest",
                                url=self._url, section="7")
        self._split = True
        tail, self._tail = self._tail, []
        for item in tail:
            self._place(item)

    def _place(self, item: _Item) -> None:
        if not self._fits_part(len(item.data)) and self._part.count:
            self._flush(self._next_from(item.time))
        if not self._fits_part(len(item.data)):
            raise DocumentError(f"the entry for {item.loc} does not fit a document of "
                                f"{self._max_bytes} bytes", url=self._url, section="7")
        self._append(item)

    def _append(self, item: _Item) -> None:
        self._part.add(item.data)
        if item.time is not None:
            self._latest = item.time

    def _next_from(self, time: datetime | None) -> datetime | None:
        """Where the next part starts, and so where this one ends (12.2): the next part's first
        change time, else the last change time before it, else this part's ``from``."""
        if time is not None:
            return time
        return self._latest if self._latest is not None else self._part.from_

    # -- writing ---------------------------------------------------------------------------------

    def _flush(self, until: datetime | None) -> None:
        """Write the current part, list it in the index, and open the next part at ``until``."""
        part = self._part
        url = self._part_url(len(self._index.locs) + 1)
        self._index.add(Entry(url, md=self._child_md(part.from_, until)))
        with self._open_output(url) as stream:
            stream.write(self._serializer.head(self._part_head(part.from_, until)))
            part.copy_to(stream)
            stream.write(self._end)
        part.close()
        self._part = _Part(until)

    def _part_head(self, from_: datetime | None, until: datetime | None) -> Head:
        """A part's head: the document's, with an ``index`` link (6.2, 10.2) and, for changes,
        the part's own interval (12.1: a closed part has ``until``; the last, if open, not)."""
        md = self._head.md
        if md is not None and self._uses_from:
            md = replace(md, from_=from_, until=until)
        return replace(self._head, md=md,
                       links=(*self._head.links, Link(rel="index", href=self._url)))

    def _child_md(self, from_: datetime | None, until: datetime | None) -> Metadata | None:
        """The index entry's ``rs:md`` (Appendix A): the part's interval, or the snapshot time."""
        md = self._head.md
        if md is None or not (self._uses_from or self._uses_at):
            return None
        if self._uses_from:
            child = Metadata(from_=from_, until=until)
        else:
            child = Metadata(at=md.at, completed=md.completed)
        return child if child != Metadata() else None


def write_split(
    head: Head,
    entries: Iterable[Entry],
    *,
    url: str,
    open_output: Callable[[str], AbstractContextManager[IO[bytes]]],
    part_url: Callable[[int], str] | None = None,
    max_entries: int = MAX_ENTRIES,
    max_bytes: int = MAX_DOCUMENT_BYTES,
) -> list[str]:
    """Write a document at ``url``, split into parts under an index if it exceeds the limits.

    Section 7 limits one document to 50,000 entries and 50 MB (head and closing tag included).
    If everything fits, one document is written at ``url``, exactly as :class:`DocumentWriter`
    would. Otherwise the parts are written at ``part_url(1)``, ``part_url(2)``... (default:
    :func:`default_part_url`), each with the head's ``rs:md``, links and an ``index`` link to
    ``url`` (6.2, 10.2); then the index at ``url`` (10.2, 12.2): a ``<sitemapindex>`` with the
    same capability and links, whose entries carry each part's ``at``/``completed`` (snapshots) or
    ``from``/``until`` (changes: part 1 starts at the head's ``from``, each part ends where the
    next begins, at its first change, and the last part ends at the head's ``until``, so it stays
    open if the head is). Entries are spooled, never held in memory.

    :param open_output: opens a URL for writing, as a context manager giving a binary stream.
    :returns: the URLs written, in the order written (the index last).
    :raises DocumentError: if an entry alone, or the index, exceeds the limits, or the head is
        an index or belongs to one (indexes do not nest). Parts written before are left as they
        are; the index at ``url`` is only written once all parts are.
    :raises InvalidValueError: for a value that cannot be written, or ``part_url`` giving a URL
        twice.
    """
    splitter = _Splitter(
        head, url=url, open_output=open_output,
        part_url=part_url or (lambda number: default_part_url(url, number)),
        max_entries=max_entries, max_bytes=max_bytes,
    )
    try:
        for entry in entries:
            splitter.add(entry)
        return splitter.finish()
    finally:
        splitter.close()
