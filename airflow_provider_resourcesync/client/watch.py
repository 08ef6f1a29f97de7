"""Watching a Change List (12.1) or a Change List Index (12.2): new changes after a position, and
the closing of the list a position is in.

The logic is written once, without I/O, as *plans*: generators that yield the URL of a document
they need, are sent back the parsed :class:`~..protocol.model.Document`, and return their result.
:func:`drive` runs a plan with the sync client (sensors), :func:`adrive` with the async client
(triggers). Both clients keep documents with their validators, so a document that did not change
costs one request answered 304.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from ..errors import DocumentError
from ..protocol.datetimes import format_datetime
from ..protocol.gap import check_no_gap
from ..protocol.model import Capability, Document, Entry
from ..protocol.position import (
    ChangeListRef,
    ChangePosition,
    lists_to_read,
    reading,
)
from ..protocol.position import changes_after as changes_in_list
from ..protocol.reader import read_document
from .async_client import AsyncResourceSyncClient
from .navigate import child_ref, is_index_of, nested_index, own_ref
from .sync_client import ResourceSyncClient

__all__ = ["MAX_SAMPLES", "ChangeListStatus", "NewChanges", "Plan", "Polled", "Sighting",
           "adrive", "change_list_status", "drive", "new_changes"]

#: How many changes :class:`NewChanges` names.
MAX_SAMPLES = 10

T = TypeVar("T")
#: A plan: yields the URLs of the documents it needs, is sent each one parsed, returns a result.
Plan = Generator[str, Document, T]


class Sighting(Protocol):
    """What a plan returns: whether the condition watched for holds, and a JSON form of it."""

    @property
    def is_done(self) -> bool: ...

    def to_json(self) -> dict[str, Any]: ...


def _time(value: datetime | None) -> str | None:
    return format_datetime(value) if value is not None else None


# -- the documents -------------------------------------------------------------------------------

def _is_index(url: str, document: Document) -> bool:
    """Whether ``document`` is a Change List Index; it must be a Change List or its index (12.1,
    12.2)."""
    first = document.entries[0] if document.entries else None
    return is_index_of(url, document.head, first, Capability.CHANGE_LIST)


def _part(url: str) -> Plan[Document]:
    """A Change List listed by an index: a list, not another index (indexes do not nest, 7)."""
    document = yield url
    if _is_index(url, document):
        raise nested_index(url)
    return document


# -- new changes after a position ----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class NewChanges:
    """The changes after a position (12.1): how many, their first and last change times, the
    lists they are in (in order), and the first :data:`MAX_SAMPLES` as ``(uri, change)``."""

    count: int
    first_time: datetime | None
    last_time: datetime | None
    list_urls: tuple[str, ...]
    samples: tuple[tuple[str, str | None], ...]

    @property
    def is_done(self) -> bool:
        """Whether there is any change."""
        return self.count > 0

    @classmethod
    def of(cls, found: Iterable[tuple[str, Entry]]) -> NewChanges:
        """From ``(list URL, entry)`` pairs in forward chronological order."""
        pairs = list(found)
        times = [entry.change_time for _, entry in pairs if entry.change_time is not None]
        return cls(
            count=len(pairs),
            first_time=min(times, default=None),
            last_time=max(times, default=None),
            list_urls=tuple(dict.fromkeys(url for url, _ in pairs)),
            samples=tuple((entry.loc, entry.md.change if entry.md else None)
                          for _, entry in pairs[:MAX_SAMPLES]),
        )

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "first_time": _time(self.first_time),
                "last_time": _time(self.last_time), "list_urls": list(self.list_urls),
                "samples": [list(sample) for sample in self.samples]}


def new_changes(change_list_url: str, position: ChangePosition) -> Plan[NewChanges]:
    """The changes after ``position`` in a Change List or across a Change List Index (12.1,
    12.2), chosen as :func:`~.navigate.changes_after` chooses them: closed lists ending before the
    position are never asked for; an index child's ``from``/``until`` come from the index, where
    the list's own head does not say them.

    :raises ChangeGapError: the Source no longer offers every change after ``position``
        (:mod:`~..protocol.gap`).
    """
    document = yield change_list_url
    if not _is_index(change_list_url, document):
        ref = ChangeListRef.of(change_list_url, document.head)
        check_no_gap(change_list_url, [ref], position)
        return NewChanges.of(_after(ref, document.entries, position))
    lists = [child_ref(entry) for entry in document.entries]
    check_no_gap(change_list_url, lists, position)
    found: list[tuple[str, Entry]] = []
    for listed in lists_to_read(lists, position):
        part = yield from _part(listed.url)
        found += _after(own_ref(listed, part.head), part.entries, position)
    return NewChanges.of(found)


def _after(ref: ChangeListRef, entries: list[Entry], position: ChangePosition
           ) -> Iterator[tuple[str, Entry]]:
    """The list's changes after ``position``, as the engine reads them: all of them where the
    list's times cannot say which are older (no ``from``, out of order)."""
    how = reading(ref, position, lambda: entries)
    for _, entry in changes_in_list(ref, entries, position, how):
        yield ref.url, entry


# -- the list a position is in, closed -----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ChangeListStatus:
    """The Change List a position is in: its URL, its ``until`` once closed (12.1), and the
    list after it in the index, once there is one (12.2)."""

    list_url: str
    until: datetime | None
    newer_list_url: str | None

    @property
    def is_done(self) -> bool:
        """Whether the list is closed: it has ``until``, or a newer list follows it."""
        return self.until is not None or self.newer_list_url is not None

    def to_json(self) -> dict[str, Any]:
        return {"list_url": self.list_url, "until": _time(self.until),
                "newer_list_url": self.newer_list_url}


def _current(lists: list[ChangeListRef], position: ChangePosition) -> int:
    """Where in ``lists`` the position is: its own list, else the first that may hold changes
    after it, else the last."""
    for number, ref in enumerate(lists):
        if position.is_same_list(ref):
            return number
    following = lists_to_read(lists, position)
    return lists.index(following[0]) if following else len(lists) - 1


def change_list_status(change_list_url: str, position: ChangePosition
                       ) -> Plan[ChangeListStatus]:
    """Whether the Change List ``position`` is in has closed (12.1, 12.2).

    In a single list, that list; in an index, the list the position names (same ``from``, see
    :meth:`~..protocol.position.ChangePosition.is_same_list`), else the first list that may hold
    changes after it, that is the list its time falls in. The list is asked for only when the
    index neither gives its ``until`` nor lists a newer list: its own head may say ``until``.

    :raises ChangeGapError: the Source no longer offers every change after ``position``.
    """
    document = yield change_list_url
    if not _is_index(change_list_url, document):
        ref = ChangeListRef.of(change_list_url, document.head)
        check_no_gap(change_list_url, [ref], position)
        return ChangeListStatus(ref.url, ref.until, None)
    lists = [child_ref(entry) for entry in document.entries]
    if not lists:
        raise DocumentError("a Change List Index that lists no Change List", url=change_list_url,
                            section="12.2")
    check_no_gap(change_list_url, lists, position)
    number = _current(lists, position)
    current, newer = lists[number], lists[number + 1:]
    if current.until is None and not newer:
        part = yield from _part(current.url)
        current = own_ref(current, part.head)
    return ChangeListStatus(current.url, current.until, newer[0].url if newer else None)


# -- drivers -------------------------------------------------------------------------------------

def drive(client: ResourceSyncClient, plan: Plan[T]) -> T:
    """Run ``plan``, reading each document it asks for with ``client``."""
    try:
        url = next(plan)
        while True:
            url = plan.send(client.read_document(url))
    except StopIteration as stop:
        return stop.value


@dataclass(frozen=True, slots=True)
class Polled(Generic[T]):
    """A plan's result, and whether any document it read changed (answered 200, not 304)."""

    result: T
    changed: bool


async def adrive(client: AsyncResourceSyncClient, plan: Plan[T]) -> Polled[T]:
    """Run ``plan``, fetching each document it asks for with ``client``; documents are parsed in
    a worker thread, so that a long list does not hold the event loop."""
    changed = False
    try:
        url = next(plan)
        while True:
            fetched = await client.fetch_document(url)
            changed = changed or not fetched.not_modified
            url = plan.send(await asyncio.to_thread(
                read_document, fetched.path, url=fetched.url,
                max_bytes=client.policy.max_document_bytes))
    except StopIteration as stop:
        return Polled(stop.value, changed)
