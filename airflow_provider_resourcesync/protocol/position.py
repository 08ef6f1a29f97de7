"""Where a Destination stands in a Source's changes, and which changes come after it.

A datetime alone is not enough (DESIGN.md, "Checkpoints"): several changes can share one
``datetime``, 1.0 Change Lists carry the time in ``lastmod`` only, and some entries have no time at
all (spec 12.1, Example 19). A :class:`ChangePosition` therefore keeps the time of the last change
consumed and the Change List it came from with how many of its entries were consumed. Within that
same list (an open list only grows, 12.1; it keeps its ``from`` when it is closed and moved into an
index) the count is exact, whatever the times.

In any other list, a change is older than the position only where the list's times can say so: the
list has a ``from`` before the position's time and its changes are in order (12.1), so those dated
before the position come first and were in the snapshot or the lists read before. Real Sources
break both (resync 2.0.1 writes Change Lists with no ``from``, each deletion dated by the file's
old ``lastmod``): where the times cannot be trusted, every change of the list comes after the
position — re-applying an update is harmless, and the engine checks a doubtful deletion against
the mirror's copy — and :func:`doubt` says why, for the warning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from .datetimes import format_datetime, parse_datetime
from .model import Entry, Head

__all__ = [
    "ChangeListRef",
    "ChangePosition",
    "changes_after",
    "doubt",
    "in_order",
    "is_before",
    "lists_to_read",
    "straddles",
    "time_rule",
]


@dataclass(frozen=True, slots=True)
class ChangeListRef:
    """A Change List as an index lists it (12.2), or as its own head describes it (12.1)."""

    url: str
    from_: datetime | None = None
    until: datetime | None = None

    @property
    def is_closed(self) -> bool:
        return self.until is not None

    @classmethod
    def of(cls, url: str, head: Head) -> ChangeListRef:
        md = head.md
        return cls(url, md.from_ if md else None, md.until if md else None)


@dataclass(frozen=True, slots=True)
class ChangePosition:
    """The point after the last change a Destination has consumed.

    :param time: change time (``datetime``, else ``lastmod``) of the last timed change consumed;
        a baseline starts here from the Resource List's ``at``.
    :param list_url: the Change List the last change came from.
    :param list_from: that list's ``from``: the list's identity, which survives a move into an
        index and tells a new list at the same URL apart.
    :param consumed: how many entries of that list were consumed.
    """

    time: datetime | None = None
    list_url: str | None = None
    list_from: datetime | None = None
    consumed: int = 0

    @classmethod
    def at(cls, time: datetime) -> ChangePosition:
        """The position of a snapshot taken at ``time`` (a Resource List's ``at``, 10.1).

        Changes at exactly ``time`` may or may not be in the snapshot, so they count as after it.
        """
        return cls(time=time)

    def is_same_list(self, ref: ChangeListRef) -> bool:
        """Whether ``ref`` is the list the position is in: same ``from``, and the same URL unless
        that ``from`` is known (a closed list moved into an index keeps it)."""
        if self.list_url is None or self.list_from != ref.from_:
            return False
        return self.list_from is not None or self.list_url == ref.url

    def advance(self, ref: ChangeListRef, index: int, entry: Entry) -> ChangePosition:
        """The position once ``entry``, the ``index``-th (from 0) of list ``ref``, is consumed."""
        when = entry.change_time
        return ChangePosition(self.time if when is None else when, ref.url, ref.from_, index + 1)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as W3C strings), for checkpoints."""
        data = asdict(self)
        for key in ("time", "list_from"):
            if data[key] is not None:
                data[key] = format_datetime(data[key])
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChangePosition:
        values = dict(data)
        for key in ("time", "list_from"):
            if values.get(key) is not None:
                values[key] = parse_datetime(values[key])
        return cls(**values)


def lists_to_read(lists: Iterable[ChangeListRef], position: ChangePosition
                  ) -> list[ChangeListRef]:
    """The Change Lists of an index that may hold changes after ``position`` (12.2).

    Closed lists that end before the position are skipped; the list the position is in, and every
    list after it, is kept. A list ending exactly at the position's time is kept: a change at that
    very time may still be unread.
    """
    if position.time is None:
        return list(lists)
    return [ref for ref in lists
            if not (ref.until is not None and ref.until < position.time)
            or position.is_same_list(ref)]


def straddles(ref: ChangeListRef, position: ChangePosition) -> bool:
    """Whether list ``ref`` (not the position's own) begins before the position's time: then its
    times tell its old changes from its new ones, if they are in order (:func:`in_order`)."""
    return (position.time is not None and ref.from_ is not None and ref.from_ < position.time
            and not position.is_same_list(ref))


def in_order(entries: Iterable[Entry]) -> bool:
    """Whether the changes' times never go back (12.1: forward chronological order); untimed
    changes have no time to be out of order with."""
    last: datetime | None = None
    for entry in entries:
        when = entry.change_time
        if when is not None:
            if last is not None and when < last:
                return False
            last = when
    return True


def doubt(ref: ChangeListRef, position: ChangePosition, *, ordered: bool = True) -> str | None:
    """Why the times of list ``ref`` cannot say which of its changes come after ``position``;
    None where they can, or need not (the position's own list, counted; no position time).

    :param ordered: whether the list's changes are in order (:func:`in_order`); only asked of a
        list that :func:`straddles` the position.
    """
    if position.time is None or position.is_same_list(ref):
        return None
    if ref.from_ is None:
        return "has no from (12.1), so its times cannot tell old changes from new ones"
    if ref.from_ >= position.time:
        return None  # every change of a list that begins after the position is after it
    if not ordered:
        return "lists its changes out of order (12.1), so its times cannot tell old from new"
    return None


def time_rule(ref: ChangeListRef, position: ChangePosition,
              again: Callable[[], Iterable[Entry]]) -> tuple[bool, str | None]:
    """How to read list ``ref`` after ``position``: whether by time (``by_time`` of
    :func:`changes_after`), and why its times cannot be trusted (:func:`doubt`) if they cannot.
    The order of its changes is checked, by ``again`` (another pass over them), only where it
    matters: in a list that :func:`straddles` the position."""
    straddling = straddles(ref, position)
    ordered = not straddling or in_order(again())
    return straddling and ordered, doubt(ref, position, ordered=ordered)


def is_before(entry: Entry, position: ChangePosition) -> bool:
    """Whether the change is dated before the position's time (doubtful where :func:`doubt`)."""
    when = entry.change_time
    return when is not None and position.time is not None and when < position.time


def changes_after(ref: ChangeListRef, entries: Iterable[Entry], position: ChangePosition,
                  *, by_time: bool | None = None) -> Iterator[tuple[int, Entry]]:
    """The entries of list ``ref`` after ``position``, with their index in the list.

    In the list the position came from, the first ``consumed`` entries are skipped, whatever their
    times (an open list only grows). In another list, entries dated before the position are
    skipped ``by_time`` only: where the list :func:`straddles` the position and its changes are
    in order (None: :func:`straddles`, the order taken on trust). Every other entry comes after
    the position: those of a list beginning after it, of a list with no ``from`` or out of order
    (:func:`doubt`), and entries with no time (their place in the list is their only order).
    """
    same_list = position.is_same_list(ref)
    if by_time is None:
        by_time = straddles(ref, position)
    for index, entry in enumerate(entries):
        if same_list:
            if index >= position.consumed:
                yield index, entry
        elif not (by_time and is_before(entry, position)):
            yield index, entry
