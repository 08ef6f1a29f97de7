"""Deterministic, streaming writer for ResourceSync documents (spec section 7).

:class:`DocumentWriter` writes one ``<urlset>`` or ``<sitemapindex>`` entry by entry, so memory does
not grow with the document (:mod:`.split` splits long lists into parts and an index).

Strict out (DESIGN.md): the same model always gives the same bytes, and everything written reads
back with :func:`~airflow_provider_resourcesync.protocol.reader.read_document` to an equal model.
A value that could not survive that trip (a character XML 1.0 does not allow, a ``<loc>`` with
surrounding whitespace, a foreign element that is not well-formed) raises
:class:`~airflow_provider_resourcesync.errors.InvalidValueError` naming it and the entry's
``<loc>``, and nothing of the entry is written; so does an entry out of the forward
chronological order of changes (12.1, 12.2, 13.2: the validator's rule, :mod:`.order`).

Layout: the XML declaration, the root with its namespace declarations, then one line per head
element (``rs:md``, ``rs:ln``..., foreign elements; the order of Table 2) and one line per entry
(``loc``, ``lastmod``, ``changefreq``, ``rs:md``, ``rs:ln``..., foreign elements).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import IO, Any, NamedTuple

from lxml import etree

from ..errors import DocumentError, InvalidValueError
from .closing import FinishedOnSuccess
from .datetimes import format_datetime
from .hashes import Hashes
from .model import (
    RS_NS,
    SITEMAP_NS,
    Document,
    Entry,
    Head,
    Link,
    Metadata,
    Root,
)
from .order import required_order

__all__ = ["DocumentWriter", "Serializer", "document_bytes", "write_document"]

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


class _Attributes(NamedTuple):
    """An element's attributes: (name, format, whether its text needs escaping) in the order
    written (a fixed order: the output is deterministic), an item's values in that order, and
    the names."""

    order: tuple[tuple[str, _Format, bool], ...]
    values: Callable[[Any], tuple[Any, ...]]
    names: frozenset[str]


def _attributes(spec: tuple[tuple[str, str, _Format], ...], formats: Mapping[_Format, _Format]
                ) -> _Attributes:
    """From (attribute, field, format) triples, each format replaced by the one ``formats``
    maps it to, if any; times and integers are never escaped."""
    return _Attributes(
        tuple((name, formats.get(to_text, to_text),
               to_text not in (format_datetime, _integer)) for name, _, to_text in spec),
        attrgetter(*(field_name for _, field_name, _ in spec)),
        frozenset(name for name, _, _ in spec))


_MD: tuple[tuple[str, str, _Format], ...] = (
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
_LN: tuple[tuple[str, str, _Format], ...] = (
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
#: The ``rs:md`` attributes a package writer fills in once a bitstream is written.
_PACKAGED = ("hash", "length", "path")

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


class _LastText:
    """A format keeping the last value's text: an entry's ``rs:md`` hash and its ``via``
    link's are often one object."""

    def __init__(self, format: _Format) -> None:
        self._format = format
        self._value: Any = None
        self._text = ""

    def __call__(self, value: Any) -> str:
        if value is not self._value:  # immutable, and held here
            self._text = self._format(value)
            self._value = value
        return self._text


class _RecentTimes:
    """:func:`format_datetime` keeping the text of the last two times written: an entry's
    ``lastmod`` and ``datetime`` are often one time, and the entries of a mirror's Resource List
    alternate between the time each was stored and the Source's ``modified``, often one time
    for many. Times are compared by value: the text is the instant in UTC, so equal times have
    one text (a time with no zone equals none with one, and is refused each time)."""

    def __init__(self) -> None:
        self._last: tuple[Any, str] = (None, "")
        self._before: tuple[Any, str] = (None, "")

    def __call__(self, value: Any) -> str:
        last = self._last
        if value == last[0]:
            return last[1]
        before = self._before
        if value == before[0]:
            self._last, self._before = before, last
            return before[1]
        text = format_datetime(value)
        self._last, self._before = (value, text), last
        return text


# -- one document ------------------------------------------------------------------------------

class Serializer:
    """Turns a head and entries into bytes, for one root element and its namespace context."""

    def __init__(self, root: Root, namespaces: Mapping[str, str]) -> None:
        self._root = root
        self._entry_tag = root.entry_tag
        # At the root, an entry would be read as one: it cannot be kept as a foreign element.
        self._head_fields = _HEAD_FIELDS | {f"{{{SITEMAP_NS}}}{root.entry_tag}"}
        declared = _declarations(namespaces)
        self._root_open = f'<{root} xmlns="{SITEMAP_NS}" xmlns:rs="{RS_NS}"' + "".join(
            f' xmlns:{prefix}="{_attribute(uri, "namespace")}"' for prefix, uri in declared) + ">"
        self._prefixes = {uri: prefix for prefix, uri in reversed(declared)}
        self._prefixes.update({RS_NS: "rs", _XML_NS: "xml"})
        self._taken = {"rs", "xml", *(prefix for prefix, _ in declared)}
        self._time = _RecentTimes()
        formats: dict[_Format, _Format] = {format_datetime: self._time,
                                           _hashes: _LastText(_hashes)}
        self._md_attributes = _attributes(_MD, formats)
        self._ln_attributes = _attributes(_LN, formats)
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
        """One ``<url>`` (``<sitemap>`` in an index) on one line.

        :raises InvalidValueError: naming the entry's ``<loc>`` and the value that cannot be
            written.
        """
        before, md, after = self._checked_entry(entry, entry.md)
        return (before + "".join(md) + after).encode()

    def entry_template(self, entry: Entry) -> tuple[str, str, str, str]:
        """:meth:`entry` in four pieces, its ``rs:md`` cut where ``hash``, ``length`` and
        ``path`` go: what a package writer learns only by writing the bitstream
        (:meth:`filled`). Values the entry has there already are checked, not written.

        :raises InvalidValueError: as :meth:`entry`.
        """
        before, md, after = self._checked_entry(entry, entry.md or Metadata(), _PACKAGED)
        first, at_length, at_path, last = md
        return before + first, at_length, at_path, last + after

    @staticmethod
    def filled(template: tuple[str, str, str, str], hashes: Hashes, length: int, path: str
               ) -> bytes:
        """The entry of ``template`` (:meth:`entry_template`) with its ``hash``, ``length``
        and ``path``, as :meth:`entry` writes them. They are written as they are: digests
        computed by :class:`~.hashes.Digester` and a package path, in characters that need
        no escaping.
        """
        first, at_length, at_path, last = template
        return (f'{first} hash="{hashes}"{at_length} length="{length:d}"{at_path} '
                f'path="{path}"{last}').encode()

    def _checked_entry(self, entry: Entry, md: Metadata | None, holes: tuple[str, ...] = ()
                       ) -> tuple[str, list[str], str]:
        """The entry before its ``rs:md``, the ``rs:md`` in pieces (:meth:`_element`), and
        the rest; errors name the entry's ``<loc>``."""
        if not entry.loc:
            raise InvalidValueError("an entry needs a <loc> (section 7)")
        try:
            return self._entry(entry, _text(entry.loc, "<loc>"), md, holes)
        except InvalidValueError as exc:
            raise InvalidValueError(f"the entry for {entry.loc} : {exc}") from None

    def _entry(self, entry: Entry, loc: str, md: Metadata | None, holes: tuple[str, ...]
               ) -> tuple[str, list[str], str]:
        tag = self._entry_tag
        parts = [f"  <{tag}><loc>", loc, "</loc>"]
        if entry.lastmod is not None:
            try:
                parts += ["<lastmod>", self._time(entry.lastmod), "</lastmod>"]
            except InvalidValueError as exc:
                raise InvalidValueError(f"<lastmod>: {exc}") from None
        if entry.changefreq is not None:
            parts += ["<changefreq>", _text(entry.changefreq, "<changefreq>"), "</changefreq>"]
        pieces = self._element("rs:md", md, self._md_attributes, holes) if md is not None else [""]
        after = [self._link(link) for link in entry.links]
        after.extend(self._foreign(text, in_entry=True) for text in entry.extra)
        after.append(f"</{tag}>\n")
        return "".join(parts), pieces, "".join(after)

    def end(self) -> bytes:
        return f"</{self._root}>\n".encode()

    # -- rs:md and rs:ln -------------------------------------------------------------------------

    def _md(self, md: Metadata) -> str:
        return "".join(self._element("rs:md", md, self._md_attributes))

    def _link(self, link: Link) -> str:
        if link.rel is None or link.href is None:
            raise InvalidValueError(f"<rs:ln> needs both rel and href (section 7): {link!r}")
        return "".join(self._element("rs:ln", link, self._ln_attributes))

    def _element(self, tag: str, item: Metadata | Link, attributes: _Attributes,
                 holes: tuple[str, ...] = ()) -> list[str]:
        """The element, in pieces cut where each of ``holes`` (attribute names, in the order
        written) goes: a value there is checked, not written."""
        current = [f"<{tag}"]
        pieces = [current]
        for (name, to_text, escaped), value in zip(attributes.order, attributes.values(item),
                                                       strict=True):
            if value is None:
                if name in holes:
                    current = []
                    pieces.append(current)
                continue
            try:
                text = _attribute(to_text(value), "value") if escaped else to_text(value)
            except InvalidValueError as exc:
                raise InvalidValueError(f"<{tag}> {name}: {exc}") from None
            if name in holes:
                current = []
                pieces.append(current)
            else:
                current.append(f' {name}="{text}"')
        if item.extra:
            local: dict[str, str] = {}  # namespace -> prefix declared on this element
            for key in sorted(item.extra):
                name = self._qualified(key, tag, attributes.names, local)
                current.append(f' {name}="{_attribute(item.extra[key], f"<{tag}> {key}")}"')
            pieces[0][1:1] = [f' xmlns:{prefix}="{_attribute(uri, "namespace")}"'
                              for uri, prefix in local.items()]  # after the tag's name
        current.append("/>")
        return ["".join(piece) for piece in pieces]

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
        """A foreign element, checked, and serialized as the reader will see it in this document.

        The string means what it means alone, as the reader serializes one (with the namespace
        declarations it needs): an element with neither a prefix nor a default namespace declared
        is in no namespace, and stays in none under this document's default namespace (the
        Sitemap's) by an ``xmlns=""``. An element the reader would take for a field (or, at the
        root, for an entry) is refused; its content is not looked at: the reader takes only the
        root's children for entries.
        """
        element = self._alone(text, reset_default=False)
        if element.tag in (_ENTRY_FIELDS if in_entry else self._head_fields):
            raise InvalidValueError(
                f"foreign element {text!r} would be read as a ResourceSync element, not kept")
        if None not in element.nsmap and any(
                isinstance(e.tag, str) and not e.tag.startswith("{") for e in element.iter()):
            element = self._alone(text, reset_default=True)
        return self._in_document(etree.tostring(element, encoding="unicode"), in_entry=in_entry)

    def _alone(self, text: str, *, reset_default: bool) -> Any:
        """``text``'s one element, parsed in a wrapper that declares no namespace but, if
        ``reset_default``, an empty default one (which the element's serialization carries)."""
        start = '<w xmlns="">' if reset_default else "<w>"
        try:
            wrapper = etree.fromstring(f"{start}{text}</w>".encode(), self._parser)
        except (etree.XMLSyntaxError, UnicodeEncodeError) as exc:
            raise InvalidValueError(f"foreign element {text!r} is not well-formed XML: {exc}"
                                    ) from None
        if len(wrapper) != 1 or (wrapper.text or "").strip() or (wrapper[0].tail or "").strip():
            raise InvalidValueError(f"foreign element {text!r} is not exactly one element")
        return wrapper[0]

    def _in_document(self, alone: str, *, in_entry: bool) -> str:
        """One element, serialized as the reader does in this document's namespace context:
        with the declarations in scope, so that reading it back gives the same string."""
        inner = (f"<{self._entry_tag}>", f"</{self._entry_tag}>") if in_entry else ("", "")
        source = f"{self._root_open}{inner[0]}{alone}{inner[1]}</{self._root}>"
        root = etree.fromstring(source.encode(), self._parser)
        element = root[0][0] if in_entry else root[0]
        return etree.tostring(element, encoding="unicode", with_tail=False)


class DocumentWriter(FinishedOnSuccess):
    """Streams one document (section 7) to a binary stream, which need not be seekable.

    The head is written at once, each entry as :meth:`write` is called, and the closing tag by
    :meth:`close` (the stream itself stays open). As a context manager the closing tag is written
    only when the block succeeds: a failed run leaves a truncated document that no reader takes
    for a complete one.

    In a Change List or a Change Dump Manifest, a change earlier than the previous timed one is
    refused (12.1, 13.2: forward chronological order), as is a child of a Change List Index or
    Change Dump Index that starts earlier than the one before (12.2): the validator's rules,
    :mod:`.order`.

    :param stream: where the document goes.
    :param head: the document's root, ``rs:md``, ``rs:ln`` and foreign elements.
    """

    def __init__(self, stream: IO[bytes], head: Head) -> None:
        self._stream = stream
        self._serializer = Serializer(head.root, head.namespaces)
        self._order = required_order(head.kind)
        self._closed = False
        #: Entries written so far.
        self.entries = 0
        self._emit(self._serializer.head(head))

    def write(self, entry: Entry) -> None:
        """Write one entry; an entry that cannot be written raises before any of it is.

        :raises InvalidValueError: a value cannot be written, or a change is out of order.
        """
        if self._closed:
            raise DocumentError("entry written after the document was closed")
        data = self._serializer.entry(entry)
        if self._order is not None:
            self._order.require(entry)
            self._order.advance(entry)
        self._emit(data)
        self.entries += 1

    def close(self) -> None:
        """Write the closing tag (once); the stream is not closed."""
        if not self._closed:
            self._emit(self._serializer.end())
            self._closed = True

    def _emit(self, data: bytes) -> None:
        self._stream.write(data)


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
