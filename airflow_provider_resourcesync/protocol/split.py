"""Automatic split of long lists (spec section 7: 50,000 entries or 50 MB per document) into
parts grouped by an index (10.2, 12.2), streaming, with bounded memory.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime
from typing import IO, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from ..errors import DocumentError, InvalidValueError
from .model import (
    MAX_DOCUMENT_BYTES,
    MAX_ENTRIES,
    Entry,
    Head,
    Link,
    Metadata,
    Root,
)
from .writer import Serializer

__all__ = ["default_part_url", "write_split"]

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
        self._serializer = Serializer(Root.SITEMAPINDEX, head.namespaces)
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
        self._serializer = Serializer(head.root, head.namespaces)
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
