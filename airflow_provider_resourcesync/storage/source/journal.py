"""The journal: a Change List (12.1) per save that found the mirror changed, under
``changes/<UTC timestamp>.xml``, and ``changelist.xml``, the Change List Index (12.2) over them,
in forward chronological order. Each change is dated when the mirror made it, by its clock (as
in 14.8's examples; the ``via`` link keeps the Source's ``modified``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from ...errors import DocumentError
from ...protocol.hashes import Hashes
from ...protocol.model import MAX_ENTRIES, Change, Entry, Head, Link, Metadata, Root
from .documents import CAPABILITY_LIST, CHANGE_LIST_INDEX, CHANGES, Documents, name_of
from .records import as_datetime, micros

__all__ = ["Journal"]


class Journal:
    """The Change Lists of the mirror's :class:`Documents` and their index."""

    def __init__(self, documents: Documents) -> None:
        self._documents = documents

    def index_exists(self) -> bool:
        return self._documents.destination.exists(self._documents.key(CHANGE_LIST_INDEX))

    def list_key(self, now: datetime) -> str:
        """The key of the Change List of a save at ``now``."""
        return f"{self._documents.key(CHANGES)}{now.astimezone(UTC):%Y%m%dT%H%M%S.%fZ}.xml"

    def listed(self) -> list[Entry]:
        """The entries of the Change List Index; where it is missing or unreadable (a mirror
        from before there was one), the Change Lists under ``changes/``, from their heads."""
        documents = self._documents
        key = documents.key(CHANGE_LIST_INDEX)
        if documents.destination.exists(key):
            try:
                with documents.reader(key) as index:  # each list where it is published now
                    return [Entry(documents.url(self._change_key(entry.loc)), md=entry.md)
                            for entry in index]
            except DocumentError:
                pass
        listed = []
        for part in sorted(documents.destination.keys(documents.key(CHANGES))):
            with documents.reader(part) as reader:
                md = reader.head.md
                if not reader.head.is_index and md is not None:
                    listed.append(Entry(documents.url(part), md=Metadata(from_=md.from_,
                                                                         until=md.until)))
        return listed

    def _change_key(self, url: str) -> str:
        """The key of a Change List the index lists, by its name (the base URL may have
        changed)."""
        return self._documents.key(CHANGES) + name_of(url)

    def write_list(self, key: str, start: datetime, end: datetime,
                   changes: Iterable[Sequence[Any]]) -> list[Entry]:
        """A Change List at ``key`` from ``start`` to ``end`` (12.1) of ``changes`` (rows of the
        record store's :meth:`~.records.RecordStore.changes`); its entries in the Change List
        Index: the list, or the parts it was split into."""
        documents = self._documents
        head = Head(md=Metadata(capability="changelist", from_=start, until=end),
                    links=(Link(rel="up", href=documents.url(documents.key(CAPABILITY_LIST))),))
        floor = micros(start, "start") or 0
        written = documents.write_list(
            head, (self._entry(row, floor) for row in changes), key,
            lambda number: f"{key.removesuffix('.xml')}-{number:05d}.xml")
        if written == {key}:
            return [Entry(documents.url(key), md=Metadata(from_=start, until=end))]
        with documents.reader(key) as parts:
            return [Entry(part.loc, md=part.md) for part in parts]

    def _entry(self, row: Sequence[Any], floor: int) -> Entry:
        """The entry of a change (none dated before ``floor``)."""
        when, uri, change, key, length, hash_, lastmod, type_, stored = row
        held = change != Change.DELETED
        hashes = (Hashes.parse(hash_) or None) if held else None
        return Entry(
            self._documents.url(key), lastmod=as_datetime(stored) if held else None,
            md=Metadata(change=change, datetime=as_datetime(max(when, floor)),
                        hash=hashes, length=length if held else None,
                        type=type_ if held else None),
            links=(Link(rel="via", href=uri, modified=as_datetime(lastmod) if held else None,
                        hash=hashes, length=length if held else None,
                        type=type_ if held else None),))

    def write_index(self, entries: list[Entry]) -> None:
        """The Change List Index over ``entries``, every Change List in forward chronological
        order (12.2). Past section 7's 50,000 entries the oldest lists are dropped: a mirror
        that others sync from keeps the changes of its latest 50,000 runs."""
        documents = self._documents
        dropped, entries = entries[:-MAX_ENTRIES], entries[-MAX_ENTRIES:]
        first, last = entries[0].md, entries[-1].md
        documents.write(documents.key(CHANGE_LIST_INDEX), Head(
            root=Root.SITEMAPINDEX,
            md=Metadata(capability="changelist", from_=first.from_ if first else None,
                        until=last.until if last else None),
            links=(Link(rel="up", href=documents.url(documents.key(CAPABILITY_LIST))),)),
            entries)
        for entry in dropped:
            documents.destination.delete(self._change_key(entry.loc))
