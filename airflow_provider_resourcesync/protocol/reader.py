"""Streaming reader for ResourceSync documents, on lxml ``iterparse``.

The document's head (its own ``rs:md`` and ``rs:ln``, section 7) is available as soon as the reader
is opened; entries follow one at a time and are freed as they go, so memory does not grow with the
document. Gzip documents (``.xml.gz``) are recognised by their magic bytes and read transparently.

Safety (DESIGN.md): no DTD is accepted (that also rules out entity expansion and external
entities), the parser never touches the network, and the decompressed size is capped.
"""

from __future__ import annotations

import copy
import gzip
import io
import os
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any, Protocol

from lxml import etree

from ..errors import (
    DocumentError,
    InvalidValueError,
    UnsafeContentError,
)
from .closing import ClosedOnExit
from .datetimes import parse_datetime
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

__all__ = ["DEFAULT_MAX_BYTES", "DocumentReader", "read_document"]

#: Default cap on a document's (decompressed) size. Memory does not grow with size (entries are
#: streamed), so the cap bounds work, not memory: well above section 7's 50 MB, which real Sources
#: exceed, and far below what a decompression bomb or an endless response would feed us.
DEFAULT_MAX_BYTES = 1024 * 1024 * 1024

#: Elements one entry may hold, and foreign elements one document may hold at its root: caps
#: that keep a hostile document from growing the tree (or the head) without bound.
MAX_ELEMENTS_PER_ENTRY = 10_000
MAX_ROOT_EXTRAS = 10_000

Source = bytes | str | os.PathLike[str] | IO[bytes]

_URLSET = f"{{{SITEMAP_NS}}}urlset"
_SITEMAPINDEX = f"{{{SITEMAP_NS}}}sitemapindex"
_URL = f"{{{SITEMAP_NS}}}url"
_SITEMAP = f"{{{SITEMAP_NS}}}sitemap"
_LOC = f"{{{SITEMAP_NS}}}loc"
_LASTMOD = f"{{{SITEMAP_NS}}}lastmod"
_CHANGEFREQ = f"{{{SITEMAP_NS}}}changefreq"
_MD = f"{{{RS_NS}}}md"
_LN = f"{{{RS_NS}}}ln"
_ROOTS = {_URLSET: Root.URLSET, _SITEMAPINDEX: Root.SITEMAPINDEX}


def _text(value: str) -> str:
    return value


def _integer(value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise InvalidValueError(f"{value!r} is not an integer") from None


# Attribute name -> (field name, converter). Anything else goes to ``extra``.
_Converter = Callable[[str], Any]
_MD_FIELDS: dict[str, tuple[str, _Converter]] = {
    "capability": ("capability", _text),
    "at": ("at", parse_datetime),
    "completed": ("completed", parse_datetime),
    "from": ("from_", parse_datetime),
    "until": ("until", parse_datetime),
    "change": ("change", _text),
    "datetime": ("datetime", parse_datetime),
    "hash": ("hash", Hashes.parse),
    "length": ("length", _integer),
    "type": ("type", _text),
    "encoding": ("encoding", _text),
    "path": ("path", _text),
}
_LN_FIELDS: dict[str, tuple[str, _Converter]] = {
    "rel": ("rel", _text),
    "href": ("href", _text),
    "pri": ("pri", _integer),
    "modified": ("modified", parse_datetime),
    "hash": ("hash", Hashes.parse),
    "length": ("length", _integer),
    "type": ("type", _text),
    "encoding": ("encoding", _text),
    "path": ("path", _text),
}


class DocumentReader(ClosedOnExit):
    """Reads one ResourceSync document: :attr:`head` at once, then entries by iteration.

    :param source: the document as bytes, a file path, or a binary file object (not closed here
        unless the reader opened it).
    :param url: the document's URL, used in every error message.
    :param max_bytes: refuse documents larger than this once decompressed.

    Errors are :class:`~airflow_provider_resourcesync.errors.DocumentError` (malformed XML, values
    the spec does not allow, a document that is not a Sitemap) and
    :class:`~airflow_provider_resourcesync.errors.UnsafeContentError` (DTDs, size cap), each naming
    the document and the line.
    """

    def __init__(
        self, source: Source, *, url: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        if url is None:
            url = os.fspath(source) if isinstance(source, str | os.PathLike) else "<document>"
        self.url: str = url
        self._max_bytes = max_bytes
        self._owned: IO[bytes] | None = None
        stream = self._open(source)
        self._events = etree.iterparse(
            stream,
            events=("end",),
            resolve_entities=False,
            load_dtd=False,
            no_network=True,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )
        self._root: Any = None
        self._extras: list[str] = []
        self._pending: Entry | None = None
        self._entry_tag = _URL
        self._started = False
        try:
            self.head: Head = self._read_head()
        except BaseException:
            self.close()
            raise

    # -- opening -------------------------------------------------------------------------------

    def _open(self, source: Source) -> _Capped:
        if isinstance(source, bytes):
            raw: IO[bytes] = io.BytesIO(source)
        elif isinstance(source, str | os.PathLike):
            try:
                raw = self._owned = open(source, "rb")  # noqa: SIM115 - closed by close()
            except OSError as exc:
                raise DocumentError(f"cannot open the document: {exc.strerror}",
                                    url=self.url) from None
        else:
            raw = source
        magic = raw.read(2)
        prefixed = _Prefixed(magic, raw)
        stream: _Readable = (gzip.GzipFile(fileobj=prefixed, mode="rb")
                             if magic == b"\x1f\x8b" else prefixed)
        return _Capped(stream, self._max_bytes, self.url)

    def close(self) -> None:
        """Release the file the reader opened, if any."""
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    # -- events --------------------------------------------------------------------------------

    def _next_element(self) -> Any:
        """The next element whose end tag was read, or None at the end of the document."""
        try:
            _, element = next(self._events)
        except StopIteration:
            return None
        except etree.XMLSyntaxError as exc:
            raise self._syntax_error(exc) from None
        if self._root is None:
            self._check_root(element)
        return element

    def _syntax_error(self, exc: etree.XMLSyntaxError) -> DocumentError:
        errors = self._events.error_log
        if errors:  # the parser's own log names the first fault and its line
            first = errors[0]
            return DocumentError(f"malformed XML: {first.message}", url=self.url, line=first.line)
        if self._root is None:
            return DocumentError("not an XML document (no root element)", url=self.url)
        return DocumentError(f"malformed XML: {exc.msg}", url=self.url, line=exc.position[0])

    def _check_root(self, element: Any) -> None:
        tree = element.getroottree()
        docinfo = tree.docinfo
        if docinfo.doctype or docinfo.internalDTD is not None or docinfo.externalDTD is not None:
            raise UnsafeContentError(
                "the document declares a DTD", rule="no DTDs in ResourceSync documents",
                url=self.url, line=1,
            )
        root = tree.getroot()
        if root.tag not in _ROOTS:
            raise DocumentError(
                f"root element is <{_local(root.tag)}>, expected <urlset> or <sitemapindex> "
                f"in the Sitemap namespace {SITEMAP_NS}",
                url=self.url, line=root.sourceline, section="7",
            )
        self._root = root
        self._entry_tag = _URL if root.tag == _URLSET else _SITEMAP

    # -- head ----------------------------------------------------------------------------------

    def _next_root_child(self) -> Any:
        """The next child of the root, once its end tag is read; None at the end.

        Elements nested deeper are counted on the way, and a single child holding more than
        :data:`MAX_ELEMENTS_PER_ENTRY` of them is refused before the tree can grow further.
        """
        nested = 0
        while (element := self._next_element()) is not None:
            if element.getparent() is self._root:
                return element
            nested += 1
            if nested > MAX_ELEMENTS_PER_ENTRY and element is not self._root:
                raise UnsafeContentError(
                    f"an element holds more than {MAX_ELEMENTS_PER_ENTRY} elements",
                    rule="element count cap", url=self.url, line=element.sourceline)
        if self._root is None:
            raise DocumentError("empty document", url=self.url)
        return None

    def _read_head(self) -> Head:
        md: Metadata | None = None
        links: list[Link] = []
        while (element := self._next_root_child()) is not None:
            tag = element.tag
            if tag == self._entry_tag:
                self._pending = self._entry(element)
                break
            if tag == _MD:
                if md is not None:
                    raise self._error(element, "more than one <rs:md> for the document", "7")
                md = self._attributes(element, Metadata, _MD_FIELDS)
            elif tag == _LN:
                links.append(self._attributes(element, Link, _LN_FIELDS))
            else:
                self._keep_extra(element)
        root = self._root
        return Head(
            root=_ROOTS[root.tag],
            md=md,
            links=tuple(links),
            extra=tuple(self._extras),
            namespaces={p or "": uri for p, uri in root.nsmap.items()},
        )

    def _keep_extra(self, element: Any) -> None:
        """Keep a foreign element found at the root, serialized, and free it."""
        if element.tag in _ROOTS:
            raise self._error(element, f"<{_local(element.tag)}> inside a document", "7")
        if len(self._extras) >= MAX_ROOT_EXTRAS:
            raise UnsafeContentError(
                f"more than {MAX_ROOT_EXTRAS} foreign elements at the document's root",
                rule="element count cap", url=self.url, line=element.sourceline)
        self._extras.append(_serialize(element))
        self._root.remove(element)

    # -- entries -------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Entry]:
        if self._started:
            raise DocumentError("entries can be read only once", url=self.url)
        self._started = True
        return self._entries()

    def count(self) -> int:
        """How many entries the document has, read to its end without building them (in place
        of iterating: entries can be read only once)."""
        if self._started:
            raise DocumentError("entries can be read only once", url=self.url)
        self._started = True
        count = 0 if self._pending is None else 1
        while (element := self._next_root_child()) is not None:
            count += element.tag == self._entry_tag
        self.close()
        return count

    def _entries(self) -> Iterator[Entry]:
        if self._pending is not None:
            yield self._pending
            self._pending = None
        entry_tag = self._entry_tag
        kept = len(self._extras)
        while (element := self._next_root_child()) is not None:
            tag = element.tag
            if tag == entry_tag:
                yield self._entry(element)
            elif tag in (_MD, _LN):
                raise self._error(
                    element, f"<rs:{_local(tag)}> of the document after its entries", "7")
            else:  # a foreign element among or after the entries: kept with the head's
                self._keep_extra(element)
        if len(self._extras) > kept:
            self.head.extra = tuple(self._extras)
        self.close()

    def _entry(self, element: Any) -> Entry:
        loc: str | None = None
        lastmod = changefreq = md = None
        links: list[Link] = []
        extra: list[str] = []
        try:
            for child in element:
                tag = child.tag
                if tag == _LOC:
                    loc = self._simple(child, loc)
                elif tag == _MD:
                    if md is not None:
                        raise self._error(child, "more than one <rs:md> in an entry", "7")
                    md = self._attributes(child, Metadata, _MD_FIELDS)
                elif tag == _LASTMOD:
                    lastmod = parse_datetime(self._simple(child, lastmod))
                elif tag == _LN:
                    links.append(self._attributes(child, Link, _LN_FIELDS))
                elif tag == _CHANGEFREQ:
                    changefreq = self._simple(child, changefreq)
                elif isinstance(tag, str):
                    extra.append(_serialize(child))
        except InvalidValueError as exc:
            raise self._error(element, f"<{_local(element.tag)}>: {exc}", "7") from None
        if not loc:
            raise self._error(element, f"<{_local(element.tag)}> without a <loc>", "7")
        line = element.sourceline
        # Free the entry and everything read before it: memory stays flat however long the list.
        element.clear(keep_tail=False)
        parent = element.getparent()
        while element.getprevious() is not None:
            del parent[0]
        return Entry(loc, lastmod, changefreq, md, tuple(links), tuple(extra), line)

    # -- helpers -------------------------------------------------------------------------------

    def _simple(self, element: Any, previous: object) -> str:
        """The text of ``<loc>``, ``<lastmod>`` or ``<changefreq>``: once per entry, text only."""
        name = _local(element.tag)
        if previous is not None:
            raise self._error(element, f"more than one <{name}> in an entry", "7")
        if len(element):
            raise self._error(element, f"<{name}> holds elements; it holds only text", "7")
        return (element.text or "").strip()

    def _attributes(self, element: Any, cls: type[Any], fields: dict[str, tuple[str, _Converter]]
                    ) -> Any:
        values: dict[str, Any] = {}
        extra: dict[str, str] = {}
        for name, value in element.attrib.items():
            spec = fields.get(name)
            if spec is None:
                extra[name] = value
                continue
            try:
                values[spec[0]] = spec[1](value)
            except InvalidValueError as exc:
                raise self._error(
                    element, f"<rs:{_local(element.tag)}> attribute {name}: {exc}", "7") from None
        if extra:
            values["extra"] = extra
        if cls is Link and not ("rel" in values and "href" in values):
            raise self._error(element, "<rs:ln> needs both rel and href", "7")
        return cls(**values)

    def _error(self, element: Any, message: str, section: str | None = None) -> DocumentError:
        return DocumentError(message, url=self.url, line=element.sourceline, section=section)


def read_document(source: Source, *, url: str | None = None,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Read a whole document into memory (for small documents: capability lists, indexes)."""
    with DocumentReader(source, url=url, max_bytes=max_bytes) as reader:
        return Document(reader.head, list(reader))


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _serialize(element: Any) -> str:
    """The element on its own (exclusive C14N): only the namespaces it uses are declared, so the
    string does not depend on the prefixes of the document it came from.

    libxml2's C14N refuses a document in which any namespace in scope has a relative URI
    (``xmlns:x="rel"``) or one it cannot parse as a URI. Such an element is copied out of its
    document, with the declarations it uses, and the copy written by lxml's C14N 2.0, which
    takes a namespace name as a plain string and writes the same form.
    """
    try:
        return etree.tostring(element, method="c14n", exclusive=True, with_comments=False).decode()
    except etree.C14NError:
        alone = copy.deepcopy(element)
        alone.tail = None
        etree.cleanup_namespaces(alone)
        return etree.tostring(alone, method="c14n2", with_comments=False).decode()


class _Prefixed(io.RawIOBase):
    """A stream with some already-read bytes put back in front of it."""

    def __init__(self, prefix: bytes, stream: IO[bytes]) -> None:
        self._prefix = prefix
        self._stream = stream

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._prefix:
            head, self._prefix = self._prefix, b""
            if size < 0:
                return head + self._stream.read()
            return head + self._stream.read(max(0, size - len(head)))
        return self._stream.read(size)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _Readable(Protocol):
    """What the reader reads from: ``read`` alone."""

    def read(self, size: int = -1, /) -> bytes: ...


class _Capped:
    """Raises once more than ``limit`` bytes have been read from ``stream``."""

    def __init__(self, stream: _Readable, limit: int, url: str) -> None:
        self._stream = stream
        self._limit = limit
        self._url = url
        self._count = 0

    def read(self, size: int = -1) -> bytes:
        try:
            data = self._stream.read(size)
        except (EOFError, zlib.error, OSError) as exc:  # gzip.BadGzipFile is an OSError
            raise DocumentError(f"cannot read the document: {exc}", url=self._url) from None
        self._count += len(data)
        if self._count > self._limit:
            raise UnsafeContentError(
                f"document is larger than {self._limit} bytes", rule="document size cap",
                url=self._url,
            )
        return data
