"""Walking a Source's documents over the wire: capabilities (9), Resource Lists (10), dumps (11,
13) and the changes after a position (12), across their indexes.

Parts of an index are fetched lazily, one open at a time, and streamed. Indexes do not nest
(spec 7): an index met where a list is expected is refused. An index served as a plain
``<urlset>`` whose entries carry the document's own capability is read as an index (DESIGN.md,
lenient in). Errors are the client's and the reader's, each naming its document.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from itertools import chain

from ..errors import DocumentError
from ..protocol.closing import ClosedOnExit
from ..protocol.datetimes import zone_assumed
from ..protocol.gap import check_no_gap
from ..protocol.model import Capability, DocumentKind, Entry, Head, Root
from ..protocol.position import (
    ChangeListRef,
    ChangePosition,
    is_before,
    lists_to_read,
    reading,
)
from ..protocol.position import changes_after as changes_in_list
from ..protocol.reader import DocumentReader
from .sinks import FetchedDocument
from .sync_client import ResourceSyncClient

__all__ = [
    "ChangeItem",
    "Ended",
    "ResourceListWalk",
    "capabilities_in",
    "capability_documents",
    "change_dump_packages_after",
    "changes_after",
    "child_ref",
    "choose_capability",
    "is_index_of",
    "nested_index",
    "own_ref",
    "resource_dump_packages",
    "resource_list",
]

log = logging.getLogger(__name__)


# -- capabilities (9) ----------------------------------------------------------------------------

def capabilities_in(entries: Iterable[Entry]) -> dict[Capability, str]:
    """Capability -> document URL from a Capability List's entries (9). The first entry of a
    capability counts (the spec allows one); ``resourceList`` reads as ``resourcelist``; entries
    without a known capability are left out."""
    found: dict[Capability, str] = {}
    for entry in entries:
        capability = entry.md.capability_value if entry.md is not None else None
        if capability is not None:
            found.setdefault(capability, entry.loc)
    return found


def capability_documents(client: ResourceSyncClient, capability_list_url: str
                         ) -> dict[Capability, str]:
    """The capability documents a Capability List points at (9)."""
    document = client.read_document(capability_list_url)
    if document.kind is not DocumentKind.CAPABILITY_LIST:
        raise DocumentError(f"expected a Capability List, found {_found_as(document.head)}",
                            url=capability_list_url, section="9")
    return capabilities_in(document.entries)


def choose_capability(wanted: Capability | None, preferred: tuple[Capability, ...],
                      capabilities: dict[Capability, str], url: str, purpose: str) -> Capability:
    """``wanted`` if given, else the first of ``preferred`` the Capability List at ``url``
    offers (9).

    :raises DocumentError: it offers none of them, saying what it offers and for what
        (``purpose``: "to baseline from").
    """
    for capability in (wanted,) if wanted else preferred:
        if capability in capabilities:
            return capability
    titles = " or ".join(_title(capability) for capability in ((wanted,) if wanted else preferred))
    offered = ", ".join(sorted(capabilities)) or "nothing"
    raise DocumentError(f"no {titles} {purpose}: the Capability List offers {offered}", url=url,
                        section="9")


def _title(capability: Capability) -> str:
    kind = DocumentKind.of(capability, Root.URLSET)
    return kind.title if kind is not None else capability.value


# -- opening lists and indexes -------------------------------------------------------------------

@dataclass(slots=True)
class _Opened:
    """A capability document with its head read; ``entries`` not yet consumed."""

    reader: DocumentReader
    entries: Iterator[Entry]
    is_index: bool
    fetched: FetchedDocument
    max_bytes: int

    @property
    def head(self) -> Head:
        return self.reader.head

    def read_again(self) -> Iterator[Entry]:
        """The document's entries once more, from the same copy (no request)."""
        with DocumentReader(self.fetched.path, url=self.fetched.url,
                            max_bytes=self.max_bytes) as reader:
            yield from reader

    def count(self) -> int:
        """How many entries the document has, read from the same copy (no request)."""
        with DocumentReader(self.fetched.path, url=self.fetched.url,
                            max_bytes=self.max_bytes) as reader:
            return reader.count()


def _found_as(head: Head) -> str:
    """What a document is, for an error: "a Resource List", or its capability as written."""
    if head.kind is not None:
        return f"a {head.kind.title}"
    return f"a document with capability {head.md.capability if head.md else None!r}"


def is_index_of(url: str, head: Head, first: Entry | None, capability: Capability) -> bool:
    """Whether the document at ``url``, which must be a list of ``capability`` or its index, is
    the index. A ``<urlset>`` whose entries carry the document's own capability is an index in
    disguise (DESIGN.md, lenient in).

    :raises DocumentError: the document is of another capability.
    """
    if head.capability is not capability:
        kind = DocumentKind.of(capability, Root.URLSET)
        assert kind is not None
        raise DocumentError(f"expected a {kind.title} or its index, found {_found_as(head)}",
                            url=url, section=kind.section)
    return head.is_index or (first is not None and first.md is not None
                             and first.md.capability_value is capability)


def nested_index(url: str) -> DocumentError:
    """The error for an index met where a list is expected (a part of an index)."""
    return DocumentError("an index where a list is expected: indexes do not nest", url=url,
                         section="7")


def _open(client: ResourceSyncClient, url: str, capability: Capability) -> _Opened:
    """Open the document at ``url``, which must be of ``capability`` (a list or its index)."""
    fetched, max_bytes = client.fetch_document(url), client.policy.max_document_bytes
    reader = DocumentReader(fetched.path, url=fetched.url, max_bytes=max_bytes)
    try:
        entries = iter(reader)
        first = next(entries, None)
        is_index = is_index_of(url, reader.head, first, capability)
    except BaseException:
        reader.close()
        raise
    _warn_zoneless(url, reader.head)
    return _Opened(reader, chain(() if first is None else (first,), entries), is_index, fetched,
                   max_bytes)


def _warn_zoneless(url: str, head: Head) -> None:
    """Lenient in: times with no zone designator are read as UTC (7), and said so."""
    md = head.md
    if md is None:
        return
    named = [name for name, value in (("at", md.at), ("completed", md.completed),
                                      ("from", md.from_), ("until", md.until))
             if value is not None and zone_assumed(value)]
    if named:
        log.warning("The document %s gives its %s with no time zone (a W3C Datetime needs one, "
                    "spec section 7): read as UTC", url, " and ".join(named))


def _open_list(client: ResourceSyncClient, url: str, capability: Capability) -> _Opened:
    """Open a list that must not be an index (a part of an index: indexes do not nest, 7)."""
    opened = _open(client, url, capability)
    if opened.is_index:
        opened.reader.close()
        raise nested_index(url)
    return opened


def _children(opened: _Opened) -> list[Entry]:
    """The entries of an index, read whole (an index is small: one entry per part)."""
    with opened.reader:
        return list(opened.entries)


def _stream(opened: _Opened) -> Iterator[Entry]:
    with opened.reader:
        yield from opened.entries


def _always(entry: Entry) -> bool:
    return True


def _across(client: ResourceSyncClient, url: str, capability: Capability,
            keep: Callable[[Entry], bool] = _always) -> Iterator[Entry]:
    """The kept entries of a list, or of every kept part of its index, in order."""
    opened = _open(client, url, capability)
    if not opened.is_index:
        yield from filter(keep, _stream(opened))
        return
    for child in filter(keep, _children(opened)):
        yield from filter(keep, _stream(_open_list(client, child.loc, capability)))


# -- Resource Lists (10.1, 10.2) -----------------------------------------------------------------

_RESOURCE_LIST = Capability.RESOURCE_LIST


@dataclass(eq=False)
class ResourceListWalk(ClosedOnExit):
    """A Resource List or a Resource List Index (10.1, 10.2): iterating yields every resource
    entry across the index, fetching parts lazily, one open at a time.

    :param url: the document asked for.
    :param head: the head of the list, or of the index.
    :param at: when the snapshot started (the head's ``at``).
    :param urls: the Resource Lists opened so far (the parts of an index, or the single list).
    :param expected: how many entries there are: a single list's, counted; an index's, the
        parts opened so far counted and the others guessed from them (then not ``exact``).
    """

    url: str
    head: Head
    at: datetime | None
    urls: list[str]
    _client: ResourceSyncClient = field(repr=False)
    _parts: list[Entry] | None = field(repr=False)  # the index's children; None: a single list
    _pending: _Opened | None = field(repr=False)  # the single list, opened and not yet read
    expected: int | None = None
    exact: bool = False

    def __iter__(self) -> Iterator[Entry]:
        if self._parts is None:
            pending, self._pending = self._pending, None
            return _stream(pending or _open_list(self._client, self.url, _RESOURCE_LIST))
        return self._across_parts(self._parts)

    def _across_parts(self, parts: list[Entry]) -> Iterator[Entry]:
        counted = 0
        for number, part in enumerate(parts, 1):
            opened = _open_list(self._client, part.loc, _RESOURCE_LIST)
            if part.loc not in self.urls:
                self.urls.append(part.loc)
            counted += opened.count()
            self.expected = counted + counted * (len(parts) - number) // number
            self.exact = number == len(parts)
            yield from _stream(opened)

    def close(self) -> None:
        """Release the single list opened and not iterated, if any."""
        if self._pending is not None:
            self._pending.reader.close()
            self._pending = None


def resource_list(client: ResourceSyncClient, url: str) -> ResourceListWalk:
    """Open a Resource List or a Resource List Index (10.1, 10.2); only its head is read now
    (an index is read whole, its parts when iterated)."""
    opened = _open(client, url, _RESOURCE_LIST)
    head = opened.head
    at = head.md.at if head.md is not None else None
    if opened.is_index:
        return ResourceListWalk(url, head, at, [], client, _children(opened), None)
    return ResourceListWalk(url, head, at, [url], client, None, opened, opened.count(), True)


# -- Change Lists (12.1, 12.2) -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ChangeItem:
    """One change after a position: the list it is in, its index in that list (from 0), the
    entry. ``position.advance(item.list, item.index, item.entry)`` moves past it. ``doubtful``:
    dated before the position in a list whose times cannot say whether it is older
    (:class:`~airflow_provider_resourcesync.protocol.position.Reading`)."""

    list: ChangeListRef
    index: int
    entry: Entry
    doubtful: bool = False


def child_ref(child: Entry) -> ChangeListRef:
    """A Change List as its index lists it (12.2: ``from`` and, once closed, ``until``)."""
    md = child.md
    return ChangeListRef(child.loc, md.from_ if md else None, md.until if md else None)


def own_ref(listed: ChangeListRef, head: Head) -> ChangeListRef:
    """The list's own interval (12.1), the index's where the list leaves it out."""
    own = ChangeListRef.of(listed.url, head)
    return ChangeListRef(listed.url, own.from_ or listed.from_, own.until or listed.until)


#: Told each Change List read to its end, and how many entries it held.
Ended = Callable[[ChangeListRef, int], object]


def _changes(ref: ChangeListRef, opened: _Opened, position: ChangePosition,
             ended: Ended | None) -> Iterator[ChangeItem]:
    """The list's changes after ``position``; where its times cannot say which are older, all
    of them, with a warning naming the list, why, and how many are dated before the position.
    Once the list is read to its end, ``ended`` is told it and its length."""
    how = reading(ref, position, opened.read_again)
    doubtful = zoneless = 0
    entries = _Counted(_stream(opened))
    for index, entry in changes_in_list(ref, entries, position, how):
        early = how.doubt is not None and is_before(entry, position)
        doubtful += early
        zoneless += entry.change_time is not None and zone_assumed(entry.change_time)
        yield ChangeItem(ref, index, entry, early)
    if zoneless:
        log.warning("The Change List %s dates %s of its changes with no time zone (a W3C "
                    "Datetime needs one, spec section 7): read as UTC", ref.url, zoneless)
    if doubtful:
        log.warning("The Change List %s %s: %s of its changes are dated before %s, where this "
                    "run starts, and are applied in case they are new (a deletion only where the "
                    "mirror's copy is not newer)", ref.url, how.doubt, doubtful, position.time)
    if ended is not None:
        ended(ref, entries.count)


class _Counted:
    """Entries passed through, counted."""

    def __init__(self, entries: Iterator[Entry]) -> None:
        self._entries = entries
        self.count = 0

    def __iter__(self) -> Iterator[Entry]:
        for entry in self._entries:
            self.count += 1
            yield entry


def changes_after(client: ResourceSyncClient, change_list_url: str, position: ChangePosition,
                  ended: Ended | None = None) -> Iterator[ChangeItem]:
    """The changes after ``position`` in a Change List or across a Change List Index (12.1,
    12.2), in forward chronological order. Closed lists ending before the position are never
    fetched; the others are read in index order through
    :func:`~airflow_provider_resourcesync.protocol.position.changes_after`; ``ended`` is told
    each list read to its end (see :meth:`~..protocol.position.ChangePosition.ended`).

    :raises ChangeGapError: the Source no longer offers every change after ``position``
        (:mod:`~..protocol.gap`); raised before any change is yielded.
    """
    opened = _open(client, change_list_url, Capability.CHANGE_LIST)
    if not opened.is_index:
        ref = ChangeListRef.of(change_list_url, opened.head)
        try:
            check_no_gap(change_list_url, [ref], position)
        except BaseException:
            opened.reader.close()
            raise
        yield from _changes(ref, opened, position, ended)
        return
    lists = list(map(child_ref, _children(opened)))
    check_no_gap(change_list_url, lists, position)
    for listed in lists_to_read(lists, position):
        part = _open_list(client, listed.url, Capability.CHANGE_LIST)
        yield from _changes(own_ref(listed, part.head), part, position, ended)


# -- dumps (11.1, 13.1) --------------------------------------------------------------------------

def _ends_after(time: datetime | None, entry: Entry) -> bool:
    """A package (or a dump of an index) that may hold changes after ``time``: its ``until`` is
    later, or it has none (open, or not said)."""
    until = entry.md.until if entry.md is not None else None
    return time is None or until is None or until > time


def change_dump_packages_after(client: ResourceSyncClient, change_dump_url: str,
                               time: datetime | None) -> Iterator[Entry]:
    """The packages of a Change Dump, or across a Change Dump Index, that end after ``time``
    (13.1), in order; None: every package."""
    return _across(client, change_dump_url, Capability.CHANGE_DUMP, partial(_ends_after, time))


def resource_dump_packages(client: ResourceSyncClient, url: str) -> Iterator[Entry]:
    """The packages of a Resource Dump, or across a Resource Dump Index (11.1), in order."""
    return _across(client, url, Capability.RESOURCE_DUMP)
