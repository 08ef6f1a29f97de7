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
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from ..errors import DocumentError, InvalidValueError
from .datetimes import format_datetime
from .model import (
    MAX_DOCUMENT_BYTES,
    MAX_ENTRIES,
    DocumentKind,
    Entry,
    Head,
    Link,
    Metadata,
    Root,
)
from .order import ChangeOrder, ForwardOrder, package_start
from .writer import Serializer

__all__ = ["Output", "default_part_url", "write_split"]

#: Serialized entries of a part are held in memory up to this size, then spill to disk.
_SPOOL_MEMORY = 4 * 1024 * 1024
#: The longest datetime :func:`format_datetime` writes, to size a part's head before it is known.
_LONGEST_DATETIME = datetime.max.replace(tzinfo=UTC)


class Output(Protocol):
    """Where a document is written: a binary stream, written to only."""

    def write(self, data: bytes, /) -> object: ...
    def writelines(self, lines: Iterable[bytes], /) -> object: ...


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


class _Spool:
    """Serialized entries, held in memory up to a size and then on disk."""

    def __init__(self) -> None:
        self.size = 0
        self.count = 0
        self._body = tempfile.SpooledTemporaryFile(max_size=_SPOOL_MEMORY)  # noqa: SIM115

    def add(self, data: bytes) -> None:
        self._body.write(data)
        self.size += len(data)
        self.count += 1

    def extend(self, other: _Spool) -> None:
        other.copy_to(self._body)
        self.size += other.size
        self.count += other.count

    def copy_to(self, stream: Output) -> None:
        self._body.seek(0)
        shutil.copyfileobj(self._body, stream)

    def reset(self) -> None:
        self._body.seek(0)
        self._body.truncate()
        self.size = self.count = 0

    def close(self) -> None:
        self._body.close()


class _Part(_Spool):
    """A part being filled, from ``from_`` (a change document's) on."""

    def __init__(self, from_: datetime | None) -> None:
        super().__init__()
        self.from_ = from_


class _Run(_Spool):
    """Entries no part boundary may separate: in a change document, the changes at one time and
    those without a time that follow them. A part that begins with the run begins at ``start``."""

    def __init__(self) -> None:
        super().__init__()
        self.start: datetime | None = None
        self.first_loc = ""

    def add_entry(self, data: bytes, loc: str) -> None:
        if not self.count:
            self.first_loc = loc
        self.add(data)


class _Times:
    """The times that place a change document's entries in parts, checked as they come.

    A Change List's (or Change Dump Manifest's) entries are changes, at their change time in
    forward chronological order (12.1, 13.2; :class:`~.order.ChangeOrder`, the validator's rule);
    a Change Dump's are packages, from their ``from`` (else ``lastmod``) to their ``until``
    (13.1). A part may begin at an entry that starts later than every entry before it starts,
    and not before any of them ends: the earlier part then ends there (its ``until`` is strictly
    after its last change) and the next begins at the same instant, so that parts neither
    overlap nor leave a gap (12.2), and a Destination that goes on after a part's ``until``
    misses nothing. Every time lies within the document's ``from`` and ``until``.
    """

    def __init__(self, head: Head, kind: DocumentKind) -> None:
        self._dump = kind is DocumentKind.CHANGE_DUMP
        self._order = (ForwardOrder(package_start, kind.section) if self._dump
                       else ChangeOrder(kind.section))
        self._from = head.md.from_ if head.md is not None else None
        self._until = head.md.until if head.md is not None else None
        #: The latest start, and the latest end, of the entries taken so far.
        self._latest: tuple[datetime, datetime] | None = None

    def run_start(self, entry: Entry) -> datetime | None:
        """Take the next entry: where a part may begin at it, or None if it may not.

        :raises InvalidValueError: the entry is earlier than the one before it, or outside the
            document's interval.
        """
        self._order.require(entry)
        start = self._order.advance(entry)
        if start is None:
            return None
        until = entry.md.until if self._dump and entry.md is not None else None
        end = start if until is None else max(start, until)
        self._check_window(entry, start, end)
        latest = self._latest
        self._latest = (start, end) if latest is None else (start, max(latest[1], end))
        if latest is None or (start > latest[0] and start >= latest[1]):
            return start
        return None

    def _check_window(self, entry: Entry, start: datetime, end: datetime) -> None:
        if self._from is not None and start < self._from:
            raise InvalidValueError(
                f"{entry.loc} : {format_datetime(start)} is before the document's from "
                f"{format_datetime(self._from)} (section {self._order.section})")
        if self._until is not None and end > self._until:
            raise InvalidValueError(
                f"{entry.loc} : {format_datetime(end)} is after the document's until "
                f"{format_datetime(self._until)} (section {self._order.section})")


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

    def write(self, stream: Output) -> None:
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
    """Fills parts greedily, run by run, and writes each when the next run does not fit (see
    :func:`write_split`). Outside change documents every entry is a run of its own.

    Part 1 might still turn out to be the whole document, whose head is shorter than a part's (no
    ``index`` link): runs that fit the whole document but not part 1 wait in ``_tail`` until the
    input ends (one document) or overflows (then they open part 2).
    """

    def __init__(
        self,
        head: Head,
        *,
        url: str,
        open_output: Callable[[str], AbstractContextManager[Output]],
        part_url: Callable[[int], str],
        max_entries: int,
        max_bytes: int,
        index: str | None = None,
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise InvalidValueError(f"limits must be positive: {max_entries=}, {max_bytes=}")
        self._head, self._url = head, url
        self._parts_index = index or url
        self._open_output, self._part_url = open_output, part_url
        self._max_entries, self._max_bytes = max_entries, max_bytes
        kind = head.kind
        self._uses_from = kind is not None and kind.uses_from
        self._uses_at = kind is not None and kind.uses_at
        self._times = _Times(head, kind) if kind is not None and kind.uses_from and (
            not kind.is_index) else None
        self._serializer = Serializer(head.root, head.namespaces)
        self._end = self._serializer.end()
        self._single_head = self._serializer.head(head if index is None else replace(
            head, links=(*head.links, Link(rel="index", href=index))))
        self._part_overhead = len(self._end) + len(
            self._serializer.head(self._part_head(_LONGEST_DATETIME, _LONGEST_DATETIME)))
        if len(self._single_head) + len(self._end) > max_bytes:
            raise DocumentError(f"the document's head alone exceeds {max_bytes} bytes", url=url)
        self._part = _Part(head.md.from_ if head.md is not None else None)
        self._run = _Run()
        self._tail: list[_Run] = []
        self._index = _Index(_index_head(head), url, max_bytes)
        self._split = False

    def add(self, entry: Entry) -> None:
        data = self._serializer.entry(entry)
        if self._times is None:
            self._end_run(None)
        elif (start := self._times.run_start(entry)) is not None:
            self._end_run(start)
        self._run.add_entry(data, entry.loc)

    def finish(self) -> list[str]:
        self._end_run(None)
        if not self._split:
            with self._open_output(self._url) as stream:
                stream.write(self._single_head)
                self._part.copy_to(stream)
                for run in self._tail:
                    run.copy_to(stream)
                stream.write(self._end)
            return [self._url]
        self._flush(self._head.md.until if self._head.md is not None else None)
        with self._open_output(self._url) as stream:
            self._index.write(stream)
        return [*self._index.locs, self._url]

    def close(self) -> None:
        for spool in (self._part, self._run, *self._tail):
            spool.close()

    # -- filling ---------------------------------------------------------------------------------

    def _end_run(self, start: datetime | None) -> None:
        """Place the run just completed, and start an empty one, which begins at ``start``."""
        if self._run.count:
            self._complete(self._run)
        self._run.reset()
        self._run.start = start

    def _complete(self, run: _Run) -> None:
        if self._split or (not self._tail and self._fits_part(run)):
            self._place(run)
        elif self._fits_single(run):
            self._tail.append(run)
            self._run = _Run()
        else:
            self._start_index()
            self._place(run)

    def _fits_single(self, run: _Run) -> bool:
        held = [self._part, *self._tail, run]
        return (sum(spool.count for spool in held) <= self._max_entries
                and len(self._single_head) + sum(spool.size for spool in held)
                + len(self._end) <= self._max_bytes)

    def _fits_part(self, run: _Run) -> bool:
        return (self._part.count + run.count <= self._max_entries
                and self._part_overhead + self._part.size + run.size <= self._max_bytes)

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
        for run in tail:
            self._place(run)
            run.close()

    def _place(self, run: _Run) -> None:
        if not self._fits_part(run) and self._part.count:
            self._flush(run.start)
        if not self._fits_part(run):
            raise self._too_big(run)
        self._part.extend(run)

    def _too_big(self, run: _Run) -> DocumentError:
        limits = f"one part of {self._max_entries} entries and {self._max_bytes} bytes"
        if run.count == 1:
            return DocumentError(f"the entry for {run.first_loc} does not fit {limits}",
                                 url=self._url, section="7")
        if run.start is None:
            why = (f"have no change time and do not fit {limits}: a part cannot end where no "
                   "time tells the next part's from")
        else:
            why = (f"start at {format_datetime(run.start)} (or have no time, or overlap it) and "
                   f"do not fit {limits}: a part cannot end among them without a Destination "
                   "that goes on after its until missing the rest")
        return DocumentError(f"the {run.count} entries from {run.first_loc} on {why}",
                             url=self._url, section="12.2")

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
                       links=(*self._head.links, Link(rel="index", href=self._parts_index)))

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
    open_output: Callable[[str], AbstractContextManager[Output]],
    part_url: Callable[[int], str] | None = None,
    max_entries: int = MAX_ENTRIES,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    index: str | None = None,
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

    Changes must come in forward chronological order (12.1, 13.2; a Change Dump's packages by
    their ``from``, else ``lastmod``, 13.1), within the head's ``from`` and ``until``. A part
    never ends among changes at one time, nor before the untimed changes that follow them, nor
    inside a package's interval: its ``until`` is strictly after its last change, so that a
    Destination that goes on after it misses nothing.

    :param open_output: opens a URL for writing, as a context manager giving a binary stream.
    :param index: the index that lists the document, or its parts in its place (a Change List
        in a Change List Index, 12.1; a Change Dump in a Change Dump Index, 13.1): the document
        links to it with ``index``, and so do the parts, not to the index at ``url``, which
        then only records them.
    :returns: the URLs written, in the order written (the index last).
    :raises DocumentError: if an entry alone, the changes a part cannot end among, or the index
        exceed the limits, or the head is an index or belongs to one (indexes do not nest).
        Parts written before are left as they are; the index at ``url`` is only written once all
        parts are.
    :raises InvalidValueError: for a value that cannot be written, changes out of order or
        outside the head's interval (naming the entry), or ``part_url`` giving a URL twice.
    """
    splitter = _Splitter(
        head, url=url, open_output=open_output,
        part_url=part_url or (lambda number: default_part_url(url, number)),
        max_entries=max_entries, max_bytes=max_bytes, index=index,
    )
    try:
        for entry in entries:
            splitter.add(entry)
        return splitter.finish()
    finally:
        splitter.close()
