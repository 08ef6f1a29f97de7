"""What a Change List (12.1) or a Change List Index (12.2) says, as a mark to compare from one poll
to the next: whether the Source changed since a watch last looked.

A document's mark is a SHA-256 digest of its head's ``rs:md`` and of its entries, read in one
streaming pass: a long list is never held whole, and any new, edited or dropped entry changes it,
where an entry count misses a list that drops its oldest entry as it adds one. It is a digest of
what the document says, not of its bytes: a Source rewriting an unchanged list differently (other
whitespace, other validators) leaves it as it was.

A poll reads the document watched and, in an index, the lists it does not say are closed: a list
with ``until`` is never updated again (7, 12.1), as the index says (12.2) or, where the index
leaves it out, as the list's own head said when last read (a list the index names closed keeps
the mark it had when read open, if it was: the index's own mark shows the closing). A document
answered 304 keeps its mark without being read again: an unchanged Change List costs one
request. A poll reads in a thread of its own, which stops at the next entry once the watch is
cancelled.

The marks are small (digests, and the lists an index names open), and kept as JSON across a
restart of the watch (:meth:`ChangeListMarks.to_json`, :meth:`ChangeListMarks.from_json`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ..client.async_client import AsyncResourceSyncClient
from ..client.navigate import child_ref, is_index_of, nested_index
from ..client.watch import READER_THREAD, Stop, in_thread
from ..protocol.datetimes import format_datetime, parse_datetime
from ..protocol.model import Capability
from ..protocol.position import ChangeListRef
from ..protocol.reader import DocumentReader

__all__ = ["ChangeListMarks", "Mark", "mark_of"]


@dataclass(frozen=True, slots=True)
class Mark:
    """One document as a poll read it: its digest, whether it is closed (its own ``until``),
    and, for an index, the lists it names that a poll reads or knows: those not closed, and
    those ``known`` to :func:`mark_of` (an index of many closed lists is never held whole)."""

    digest: bytes
    closed: bool
    lists: tuple[ChangeListRef, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest.hex(), "closed": self.closed,
                "lists": [[ref.url, _time(ref.from_), _time(ref.until)] for ref in self.lists]}

    @classmethod
    def from_json(cls, saved: dict[str, Any]) -> Mark:
        """:raises ValueError, TypeError, KeyError: ``saved`` is not what :meth:`to_json`
        gave."""
        lists = tuple(ChangeListRef(str(url), _parsed(since), _parsed(until))
                      for url, since, until in saved["lists"])
        return cls(bytes.fromhex(saved["digest"]), bool(saved["closed"]), lists)


def _time(value: datetime | None) -> str | None:
    return None if value is None else format_datetime(value)


def _parsed(value: str | None) -> datetime | None:
    return None if value is None else parse_datetime(value)


def mark_of(copy: Path | bytes, *, url: str, max_bytes: int, part: bool,
            known: frozenset[str] = frozenset(), stop: Stop | None = None) -> Mark:
    """The mark of the Change List or Change List Index at ``url`` read from ``copy``.

    :param part: the document is a list named by an index, so not an index itself (7).
    :param known: the lists whose marks the last poll kept: kept in the index's mark even when
        it names them closed now.
    :param stop: checked at each entry.
    :raises asyncio.CancelledError: ``stop`` was asked.
    :raises DocumentError: it is neither a Change List nor its index, or an index where
        ``part`` says a list.
    """
    digest = hashlib.sha256()
    lists: list[ChangeListRef] = []
    with DocumentReader(copy, url=url, max_bytes=max_bytes) as reader:
        head = reader.head
        digest.update(repr(head.md).encode())
        is_index: bool | None = None
        for entry in reader:
            if stop is not None:
                stop.check()
            if is_index is None:
                is_index = is_index_of(url, head, entry, Capability.CHANGE_LIST)
                if is_index and part:
                    raise nested_index(url)
            if is_index:
                ref = child_ref(entry)
                if not ref.is_closed or ref.url in known:
                    lists.append(ref)
            digest.update(b"\n" + repr(replace(entry, line=None)).encode())
        if is_index is None:  # no entries: still a Change List or its index
            is_index_of(url, head, None, Capability.CHANGE_LIST)
    closed = head.md is not None and head.md.until is not None
    return Mark(digest.digest(), closed, tuple(lists))


class ChangeListMarks:
    """The marks of a Change List, or of an index and its open lists, kept between polls.

    :param url: the Change List or the Change List Index watched.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self._marks: dict[str, Mark] | None = None

    def to_json(self) -> dict[str, Any] | None:
        """What the last poll saw (None before the first), as JSON to keep across a restart."""
        if self._marks is None:
            return None
        return {"url": self.url,
                "marks": {url: mark.to_json() for url, mark in self._marks.items()}}

    @classmethod
    def from_json(cls, url: str, saved: object) -> ChangeListMarks:
        """The marks of ``url`` as :meth:`to_json` gave them, where ``saved`` is of ``url``
        (the next poll compares with them); else none (the next poll only records).

        :raises ValueError: ``saved`` is of ``url`` but not what :meth:`to_json` gave.
        """
        marks = cls(url)
        if isinstance(saved, dict) and saved.get("url") == url:
            try:
                marks._marks = {str(listed): Mark.from_json(mark)
                                for listed, mark in saved["marks"].items()}
            except (KeyError, TypeError, ValueError, AttributeError) as error:
                raise ValueError(f"the marks kept for {url} are not readable: {error!r}") from None
        return marks

    async def poll(self, client: AsyncResourceSyncClient) -> list[str] | None:
        """Read the documents again: the URLs of those whose mark changed (a list now named or
        no longer named by the index counts as changed), in order; None at the first poll,
        which only records.

        :raises ResourceSyncError: a document could not be fetched or read.
        """
        before = self._marks or {}
        root = await self._read(client, self.url, before, part=False)
        now = {self.url: root}
        for listed in root.lists:
            known = before.get(listed.url)
            if known is not None and (known.closed or listed.is_closed):
                now[listed.url] = known  # closed: never updated again (7)
            elif not listed.is_closed:
                now[listed.url] = await self._read(client, listed.url, before, part=True)
        first, self._marks = self._marks is None, now
        if first:
            return None
        return [url for url in dict.fromkeys([*now, *before])
                if _digest(now, url) != _digest(before, url)]

    async def _read(self, client: AsyncResourceSyncClient, url: str, before: dict[str, Mark],
                    *, part: bool) -> Mark:
        fetched = await client.fetch_document(url)
        known = before.get(url)
        if fetched.not_modified and known is not None:
            return known
        return await in_thread(lambda stop: mark_of(
            fetched.path, url=fetched.url, max_bytes=client.policy.max_document_bytes, part=part,
            known=frozenset(before), stop=stop), f"{READER_THREAD} {url}")


def _digest(marks: dict[str, Mark], url: str) -> bytes | None:
    mark = marks.get(url)
    return mark.digest if mark is not None else None
