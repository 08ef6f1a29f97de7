"""The journal: a Change List (12.1) per save that found the mirror changed, under
``changes/<UTC timestamp>.xml``, and ``changelist.xml``, the Change List Index (12.2) over them,
in forward chronological order. Each change is dated when the mirror made it, by its clock (as
in 14.8's examples; the ``via`` link keeps the Source's ``modified``), and carries the object's
key (``mirror:key``), so the lookup index can be brought up to date from the lists alone.

A list's *stamp* is its name without ``.xml`` (its parts' too): the UTC time of the save that
wrote it, so stamps sort as the saves were made. The lookup index names the last list folded in
by its stamp, and the snapshot is stamped with the time it was written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import DocumentError, UnsafeContentError
from ..protocol.datetimes import as_datetime, micros
from ..protocol.hashes import Hashes
from ..protocol.model import MAX_ENTRIES, Change, Entry, Head, Link, Metadata, Root
from ..storage.keys import normalized
from .documents import (
    CAPABILITY_LIST,
    CHANGE_LIST_INDEX,
    CHANGES,
    KEY,
    NAMESPACE,
    Documents,
    name_of,
)
from .record import ObjectRecord

__all__ = ["Journal", "stamp_at"]

_LIST_NAME = re.compile(r"(.+?)(?:-\d{5})?\.xml")
_TICK = timedelta(microseconds=1)


def stamp_at(when: datetime) -> str:
    """The stamp of a save at ``when``: the name of its Change List without ``.xml``."""
    return f"{when.astimezone(UTC):%Y%m%dT%H%M%S.%fZ}"


class Journal:
    """The Change Lists of :class:`Documents` and their index; with another ``capability``,
    ``index`` and ``folder``, another series of documents kept the same way, one per save (a
    publisher's Change Dumps, 13.1, in their Change Dump Index).

    ``retiring`` is given the entries of each document retired (:meth:`retire`, or dropped
    past 50,000), before the document is deleted: to delete what they name (a Change Dump's
    packages)."""

    def __init__(self, documents: Documents, *, capability: str = "changelist",
                 index: str = CHANGE_LIST_INDEX, folder: str = CHANGES,
                 retiring: Callable[[list[Entry]], None] | None = None) -> None:
        self._documents = documents
        self._capability = capability
        self._index = index
        self._folder = folder
        self._retiring = retiring

    def index_exists(self) -> bool:
        return self._documents.destination.exists(self._documents.key(self._index))

    def start(self) -> datetime | None:
        """The index's ``from``: where the series starts; None if there is no index.

        :raises DocumentError: the index cannot be read.
        """
        documents = self._documents
        key = documents.key(self._index)
        if not documents.destination.exists(key):
            return None
        with documents.reader(key) as index:
            return index.head.md.from_ if index.head.md is not None else None

    def list_key(self, now: datetime) -> str:
        """The key of the document of a save at ``now``."""
        return f"{self._documents.key(self._folder)}{stamp_at(now)}.xml"

    def listed(self) -> list[Entry]:
        """The entries of the Change List Index; where it is missing or unreadable (a mirror
        from before there was one), the Change Lists under ``changes/``, from their heads."""
        documents = self._documents
        key = documents.key(self._index)
        if documents.destination.exists(key):
            try:
                with documents.reader(key) as index:  # each list where it is published now
                    return [Entry(documents.url(self._change_key(entry.loc)), md=entry.md)
                            for entry in index]
            except DocumentError:
                pass
        listed = []
        for part in sorted(documents.destination.keys(documents.key(self._folder))):
            with documents.reader(part) as reader:
                md = reader.head.md
                if not reader.head.is_index and md is not None:
                    listed.append(Entry(documents.url(part), md=Metadata(from_=md.from_,
                                                                         until=md.until)))
        return listed

    def drop_unlisted(self, listed: list[Entry], key: str) -> None:
        """Delete the documents of the series dated after the last of ``listed`` (the index's
        entries before this save) and before this save's document at ``key`` that no index
        lists: a save killed between its document and the index left them, and this save's
        document holds their changes (replayed on load), so a rebuild from the folder
        would list those twice. Only the folder's keys sharing the two stamps' prefix are
        listed: a few, however many documents the series holds."""
        documents = self._documents
        folder = documents.key(self._folder)
        after = self._stamp(name_of(listed[-1].loc)) if listed else ""
        before = self._stamp(key[len(folder):])
        known = {self._change_key(entry.loc) for entry in listed}
        shared = next((n for n, (a, b) in enumerate(zip(after, before, strict=False)) if a != b),
                      min(len(after), len(before)))
        for found in list(documents.destination.keys(folder + before[:shared])):
            if found not in known and after < self._stamp(found[len(folder):]) < before:
                documents.destination.delete(found)

    @staticmethod
    def _stamp(name: str) -> str:
        """The stamp of a document or of one of its parts, by its name."""
        found = _LIST_NAME.fullmatch(name)
        return found.group(1) if found else name

    def since(self, stamp: str | None) -> Iterator[tuple[str, list[str]]]:
        """The Change Lists listed after the one stamped ``stamp`` (all for None), in order:
        each one's stamp and the keys of its parts (itself, if it is not split)."""
        lists: dict[str, list[str]] = {}
        for entry in self.listed():
            listed = self._stamp(name_of(entry.loc))
            if stamp is None or listed > stamp:
                lists.setdefault(listed, []).append(self._change_key(entry.loc))
        return iter(lists.items())

    def changes(self, keys: Iterable[str]
                ) -> Iterator[tuple[str, ObjectRecord | None, datetime | None]]:
        """The changes the lists at ``keys`` make, in order: each URI (in its normal form), its
        record (None for a deletion) and when the mirror's copy changed. An origin with no
        normal form (credentials in it) is never mapped now, and passed over.

        :raises DocumentError: a list cannot be read or was not written by the mirror.
        """
        for key in keys:
            with self._documents.reader(key) as reader:
                for entry in reader:
                    change = self._change(entry, reader.url)
                    if change is not None:
                        yield change

    def _change(self, entry: Entry, url: str
                ) -> tuple[str, ObjectRecord | None, datetime | None] | None:
        md = entry.md
        if md is None or md.change is None or (md.change != Change.DELETED and md.length is None):
            raise DocumentError(f"the entry for {entry.loc} lacks the change or length we "
                                "write: the Change List is not ours", url=url, line=entry.line,
                                section="14.8")
        origin, via = self._documents.origin(entry, url)
        try:
            uri = normalized(origin)
        except UnsafeContentError:
            return None
        if md.change == Change.DELETED:
            return uri, None, None
        assert md.length is not None
        modified = via.modified if via is not None else entry.lastmod
        return uri, ObjectRecord(uri, self._documents.key_of(entry, url), md.length,
                         Hashes.parse(str(md.hash or "")), modified, md.type), entry.lastmod

    def _change_key(self, url: str) -> str:
        """The key of a Change List the index lists, by its name (the base URL may have
        changed)."""
        return self._documents.key(self._folder) + name_of(url)

    def write_list(self, key: str, start: datetime, end: datetime,
                   changes: Iterable[Sequence[Any]]) -> list[Entry]:
        """A Change List at ``key`` from ``start`` to ``end`` (12.1) of ``changes`` (rows of the
        record store's :meth:`~.records.RecordStore.changes`); its entries in the Change List
        Index: the list, or the parts it was split into."""
        floor = micros(start, "start") or 0
        return self.write(key, start, end, (self._entry(row, floor) for row in changes),
                          {"mirror": NAMESPACE})

    def write(self, key: str, start: datetime, end: datetime, entries: Iterable[Entry],
              namespaces: dict[str, str] | None = None) -> list[Entry]:
        """A document of the series at ``key`` from ``start`` to ``end`` listing ``entries``;
        its entries in the index: the document, or the parts it was split into."""
        documents = self._documents
        head = Head(md=Metadata(capability=self._capability, from_=start, until=end),
                    links=(Link(rel="up", href=documents.url(documents.key(CAPABILITY_LIST))),),
                    namespaces=namespaces or {})
        written = documents.write_list(  # each links to the index that lists it (12.1, 13.1)
            head, entries, key, lambda number: f"{key.removesuffix('.xml')}-{number:05d}.xml",
            documents.key(self._index))
        if written == {key}:
            return [Entry(documents.url(key), md=Metadata(from_=start, until=end))]
        with documents.reader(key) as parts:
            return [Entry(part.loc, md=part.md) for part in parts]

    def _entry(self, row: Sequence[Any], floor: int) -> Entry:
        """The entry of a change (none dated before ``floor``)."""
        when, uri, change, key, length, hash_, lastmod, type_, stored = row
        held = change != Change.DELETED
        hashes = (Hashes.parse(hash_) or None) if held else None
        documents = self._documents
        md = Metadata(change=change, datetime=as_datetime(max(when, floor)), hash=hashes,
                      length=length if held else None, type=type_ if held else None,
                      extra={KEY: key})
        if documents.resources is not None:  # the loc is the URI; its lastmod the object's
            return Entry(uri, lastmod=as_datetime(lastmod) if held else None, md=md)
        return Entry(
            documents.url(key), lastmod=as_datetime(stored) if held else None, md=md,
            links=(Link(rel="via", href=uri, modified=as_datetime(lastmod) if held else None,
                        hash=hashes, length=length if held else None,
                        type=type_ if held else None),))

    def write_index(self, entries: list[Entry], *, start: datetime | None = None) -> None:
        """The Change List Index over ``entries``, every Change List in forward chronological
        order (12.2); with none, an index from ``start`` (where the series will start) listing
        nothing yet. Past section 7's 50,000 entries the oldest lists are dropped: a mirror
        that others sync from keeps the changes of its latest 50,000 runs."""
        documents = self._documents
        dropped, entries = entries[:-MAX_ENTRIES], entries[-MAX_ENTRIES:]
        first = entries[0].md if entries else Metadata(from_=start)
        last = entries[-1].md if entries else None
        documents.write(documents.key(self._index), Head(
            root=Root.SITEMAPINDEX,
            md=Metadata(capability=self._capability, from_=first.from_ if first else None,
                        until=last.until if last else None),
            links=(Link(rel="up", href=documents.url(documents.key(CAPABILITY_LIST))),)),
            entries)
        if dropped:
            self._drop_retired(entries, None)

    # -- retirement ------------------------------------------------------------------------------

    def retire(self, before: datetime) -> None:
        """Retire the documents of the series that end before ``before``, the newest excepted
        (a follower from before it is told of the gap), each whole (every part of a split
        one): the index is rewritten without them (its ``from`` where the last of them
        ended), then they are deleted (:meth:`_drop_retired`). A save killed between leaves
        them listed nowhere, and the next one deletes them."""
        listed = self.listed()
        if not listed:
            self._drop_retired([], self.start())
            return
        first = next((n for n, entry in enumerate(listed) if entry.md is None
                      or entry.md.until is None or entry.md.until >= before), len(listed) - 1)
        stamp = self._stamp(name_of(listed[first].loc))
        while first and self._stamp(name_of(listed[first - 1].loc)) == stamp:
            first -= 1  # the parts of the first document kept are kept together
        if first:
            self.write_index(listed[first:])
        self._drop_retired(listed[first:], None)

    def _drop_retired(self, kept: list[Entry], start: datetime | None) -> None:
        """Delete the documents of the series dated before the first of ``kept`` (the index's
        entries; with none, not after the index's ``start``), which no index lists any more:
        each one's entries to ``retiring`` first, and a split one before its parts, so that
        no document left names a missing one. The folder's keys come in order, and only those
        before the first kept are read."""
        if kept:
            limit = self._stamp(name_of(kept[0].loc))
        elif start is not None:
            limit = stamp_at(start + _TICK)
        else:
            return
        documents = self._documents
        folder = documents.key(self._folder)
        retired = []
        for key in documents.destination.keys(folder):
            stamp = self._stamp(key[len(folder):])
            if stamp >= limit:
                break
            retired.append((stamp, key != f"{folder}{stamp}.xml", key))
        for _, _, key in sorted(retired):
            if self._retiring is not None:
                with documents.reader(key) as reader:
                    if not reader.head.is_index:
                        self._retiring(list(reader))
            documents.destination.delete(key)
