"""Watching a Change List (12.1) or a Change List Index (12.2): new changes after a position, and
the closing of the list a position is in.

The logic is written once, without I/O, as *plans*: generators that yield the URL of a document
they need, are sent back a :class:`StreamedDocument` over the copy fetched, and return their
result. A plan is done with each document before it asks for the next: it reads a list's entries
in one streaming pass (and a first one where :func:`~..protocol.position.reading` must check the
list) and keeps only what its result says, so a poll of a long open list holds none of it whole.

:func:`drive` runs a plan with the sync client (sensors), :func:`adrive` with the async client
(triggers). Both clients keep documents on disk with their validators, so a document that did
not change costs one request answered 304. A trigger's plan reads in a thread of its own
(:func:`in_thread`), which a cancelled trigger stops at the next entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from ..protocol.datetimes import format_datetime
from ..protocol.gap import check_no_gap
from ..protocol.model import Capability, Entry, Head
from ..protocol.position import (
    ChangeListRef,
    ChangePosition,
    lists_to_read,
    may_hold_changes_after,
    reading,
)
from ..protocol.position import changes_after as changes_in_list
from ..protocol.reader import DEFAULT_MAX_BYTES, DocumentReader
from .async_client import AsyncResourceSyncClient
from .navigate import child_ref, is_index_of, nested_index, own_ref
from .sinks import FetchedDocument
from .sync_client import ResourceSyncClient

__all__ = ["MAX_SAMPLES", "READER_THREAD", "ChangeListStatus", "NewChanges", "Plan", "Polled",
           "Sighting", "Stop", "StreamedDocument", "adrive", "change_list_status", "drive",
           "in_thread", "new_changes"]

#: How many changes :class:`NewChanges` names.
MAX_SAMPLES = 10
#: The name of the threads :func:`in_thread` reads in, followed by the document's URL.
READER_THREAD = "resourcesync-watch-reader"

T = TypeVar("T")


class Stop:
    """Asked of a reading in a worker thread once the task awaiting it is cancelled: the reading
    checks it at each entry (:meth:`check`), and ends there."""

    def __init__(self) -> None:
        self._asked = threading.Event()

    def ask(self) -> None:
        self._asked.set()

    def check(self) -> None:
        """:raises asyncio.CancelledError: the stop was asked."""
        if self._asked.is_set():
            raise asyncio.CancelledError("the watch was cancelled")


async def in_thread(read: Callable[[Stop], T], name: str) -> T:
    """``read(stop)`` in a thread of its own named ``name``, the event loop free meanwhile.
    Cancelled, it asks ``stop``, waits for the thread to end (``read`` checks ``stop`` at each
    entry: a long document is not read on for a minute after its watch is gone), and is
    cancelled."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    stop, context = Stop(), contextvars.copy_context()

    def work() -> None:
        try:
            outcome: tuple[T | None, BaseException | None] = (context.run(read, stop), None)
        except BaseException as error:  # handed to the awaiting task, whatever it is
            outcome = (None, error)
        with contextlib.suppress(RuntimeError):  # the loop closed: no one awaits it
            loop.call_soon_threadsafe(_settle, done, *outcome)

    threading.Thread(target=work, name=name, daemon=True).start()
    try:
        return await asyncio.shield(done)
    except asyncio.CancelledError:
        stop.ask()
        await asyncio.wait([done])
        raise


def _settle(done: asyncio.Future[T], result: T | None, error: BaseException | None) -> None:
    if isinstance(error, asyncio.CancelledError):
        done.cancel()
    elif error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)  # type: ignore[arg-type]  # None only with an error


@dataclass(frozen=True, slots=True)
class StreamedDocument:
    """A document whose whole copy is at hand (a file, or bytes), read as a stream: its head and
    first entry now, its entries from the copy again at each :meth:`entries`."""

    url: str
    head: Head
    first: Entry | None
    copy: bytes | Path
    max_bytes: int = DEFAULT_MAX_BYTES
    stop: Stop = field(default_factory=Stop, compare=False, repr=False)

    @classmethod
    def open(cls, copy: bytes | Path, *, url: str, max_bytes: int = DEFAULT_MAX_BYTES,
             stop: Stop | None = None) -> StreamedDocument:
        """Read the head and the first entry of the document at ``url`` from ``copy``; its
        entries are read until ``stop`` is asked."""
        with DocumentReader(copy, url=url, max_bytes=max_bytes) as reader:
            return cls(url, reader.head, next(iter(reader), None), copy, max_bytes,
                       stop or Stop())

    def entries(self) -> Iterator[Entry]:
        """The document's entries, one at a time, read from the copy.

        :raises asyncio.CancelledError: :attr:`stop` was asked.
        """
        with DocumentReader(self.copy, url=self.url, max_bytes=self.max_bytes) as reader:
            for entry in reader:
                self.stop.check()
                yield entry


#: A plan: yields the URLs of the documents it needs, is sent each one streamed, returns a result.
Plan = Generator[str, StreamedDocument, T]


class Sighting(Protocol):
    """What a plan returns: whether the condition watched for holds, and a JSON form of it."""

    @property
    def is_done(self) -> bool: ...

    def to_json(self) -> dict[str, Any]: ...


def _time(value: datetime | None) -> str | None:
    return format_datetime(value) if value is not None else None


# -- the documents -------------------------------------------------------------------------------

def _is_index(url: str, document: StreamedDocument) -> bool:
    """Whether ``document`` is a Change List Index; it must be a Change List or its index (12.1,
    12.2)."""
    return is_index_of(url, document.head, document.first, Capability.CHANGE_LIST)


def _children(document: StreamedDocument, position: ChangePosition) -> list[ChangeListRef]:
    """The Change Lists an index lists (12.2) that may hold changes after ``position``
    (:func:`~..protocol.position.lists_to_read`), and its last list: read as a stream, so that a
    watch of an index of many closed lists holds only those (issue 29: 1.5 M entries held whole
    took 428 MiB)."""
    kept: list[ChangeListRef] = []
    last = None
    for entry in document.entries():
        last = child_ref(entry)
        if may_hold_changes_after(last, position):
            kept.append(last)
    if last is not None and (not kept or kept[-1] is not last):
        kept.append(last)  # where the position is past every list: the last one stands
    return kept


def _part(url: str) -> Plan[StreamedDocument]:
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
        """From ``(list URL, entry)`` pairs in forward chronological order, in one pass that
        keeps none of them."""
        count = 0
        first: datetime | None = None
        last: datetime | None = None
        urls: dict[str, None] = {}
        samples: list[tuple[str, str | None]] = []
        for url, entry in found:
            count += 1
            urls[url] = None
            if len(samples) < MAX_SAMPLES:
                samples.append((entry.loc, entry.md.change if entry.md else None))
            when = entry.change_time
            if when is not None:
                first, last = _earliest(first, when), _latest(last, when)
        return cls(count, first, last, tuple(urls), tuple(samples))

    def then(self, later: NewChanges) -> NewChanges:
        """These changes followed by ``later``'s (those of the next list)."""
        return NewChanges(
            self.count + later.count,
            _earliest(self.first_time, later.first_time),
            _latest(self.last_time, later.last_time),
            tuple(dict.fromkeys(self.list_urls + later.list_urls)),
            (self.samples + later.samples)[:MAX_SAMPLES],
        )

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "first_time": _time(self.first_time),
                "last_time": _time(self.last_time), "list_urls": list(self.list_urls),
                "samples": [list(sample) for sample in self.samples]}


def _earliest(one: datetime | None, other: datetime | None) -> datetime | None:
    return other if one is None else one if other is None else min(one, other)


def _latest(one: datetime | None, other: datetime | None) -> datetime | None:
    return other if one is None else one if other is None else max(one, other)


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
        return NewChanges.of(_after(ref, document, position))
    lists = _children(document, position)
    check_no_gap(change_list_url, lists, position)
    found = NewChanges.of(())
    for listed in lists_to_read(lists, position):
        part = yield from _part(listed.url)
        found = found.then(NewChanges.of(_after(own_ref(listed, part.head), part, position)))
    return found


def _after(ref: ChangeListRef, document: StreamedDocument, position: ChangePosition
           ) -> Iterator[tuple[str, Entry]]:
    """The list's changes after ``position``, as the engine reads them: all of them where the
    list's times cannot say which are older (no ``from``, out of order)."""
    how = reading(ref, position, document.entries)
    for _, entry in changes_in_list(ref, document.entries(), position, how):
        yield ref.url, entry


# -- the list a position is in, closed -----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ChangeListStatus:
    """The Change List a position is in: its URL (the index's, while it lists none yet), its
    ``until`` once closed (12.1), and the list after it in the index, once there is one
    (12.2)."""

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
    lists = _children(document, position)
    if not lists:  # 12.2 allows none: a Source's first save lists none until its first change
        return ChangeListStatus(change_list_url, None, None)
    check_no_gap(change_list_url, lists, position)
    number = _current(lists, position)
    current, newer = lists[number], lists[number + 1:]
    if current.until is None and not newer:
        part = yield from _part(current.url)
        current = own_ref(current, part.head)
    return ChangeListStatus(current.url, current.until, newer[0].url if newer else None)


# -- drivers -------------------------------------------------------------------------------------

class _Run(Generic[T]):
    """A plan under way; :attr:`result` once it returned. A step sends it a document and runs it
    until it asks for the next, which is when it is done reading the one sent."""

    def __init__(self, plan: Plan[T]) -> None:
        self._plan = plan
        self.result: T

    def step(self, fetched: FetchedDocument | None, max_bytes: int, stop: Stop | None = None
             ) -> str | None:
        """Send the plan ``fetched``, streamed (None: start it), read until ``stop`` is asked;
        the URL it asks for next, or None once it returned."""
        try:
            if fetched is None:
                return next(self._plan)
            return self._plan.send(StreamedDocument.open(fetched.path, url=fetched.url,
                                                         max_bytes=max_bytes, stop=stop))
        except StopIteration as stop:
            self.result = stop.value
            return None


def drive(client: ResourceSyncClient, plan: Plan[T]) -> T:
    """Run ``plan``, fetching each document it asks for with ``client``."""
    run, max_bytes = _Run(plan), client.policy.max_document_bytes
    url = run.step(None, max_bytes)
    while url is not None:
        url = run.step(client.fetch_document(url), max_bytes)
    return run.result


@dataclass(frozen=True, slots=True)
class Polled(Generic[T]):
    """A plan's result, and whether any document it read changed (answered 200, not 304)."""

    result: T
    changed: bool


async def adrive(client: AsyncResourceSyncClient, plan: Plan[T]) -> Polled[T]:
    """Run ``plan``, fetching each document it asks for with ``client``. The plan reads what it
    is sent in a worker thread (:func:`in_thread`), one step at a time, so that a long list does
    not hold the event loop, and stops reading once the task running it is cancelled."""
    run, max_bytes = _Run(plan), client.policy.max_document_bytes
    changed = False
    url = run.step(None, max_bytes)
    while url is not None:
        fetched = await client.fetch_document(url)
        changed = changed or not fetched.not_modified
        url = await in_thread(partial(run.step, fetched, max_bytes),
                              f"{READER_THREAD} {fetched.url}")
    return Polled(run.result, changed)
