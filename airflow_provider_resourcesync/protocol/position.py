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
the mirror's copy — and :class:`Reading` says why, for the warning. resync also writes each new
list over the last one at the same URL: a list with no ``from`` is the position's own only while
the entry it last consumed is still where it was.

The position also keeps the window of its list as read (its ``until``, and whether the position
stands at its end), so that a list rotated out of an index can be told apart: one read whole
left nothing unread; one that was not, did (see :mod:`.gap`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from .datetimes import format_datetime, parse_datetime
from .model import Entry, Head

__all__ = [
    "ChangeListRef",
    "ChangePosition",
    "Reading",
    "changes_after",
    "in_order",
    "is_before",
    "lists_to_read",
    "may_hold_changes_after",
    "reading",
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
    :param last: the ``loc`` of the last entry consumed, which tells a list with no ``from``
        rewritten at the same URL apart (None in checkpoints written before it was kept).
    :param list_until: that list's ``until`` when it was read (None: open, or not known).
    :param at_end: the position stands after the last entry its list held when read (False:
        not, or not known).
    """

    time: datetime | None = None
    list_url: str | None = None
    list_from: datetime | None = None
    consumed: int = 0
    last: str | None = None
    list_until: datetime | None = None
    at_end: bool = False

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
        return ChangePosition(self.time if when is None else when, ref.url, ref.from_, index + 1,
                              entry.loc, ref.until)

    def ended(self, ref: ChangeListRef, length: int) -> ChangePosition:
        """The position once list ``ref``, of ``length`` entries, was read to its end: marked at
        its end (with the list's ``until`` as read now) if it stands after its last entry."""
        if not (self.is_same_list(ref) and self.consumed == length):
            return self
        return replace(self, list_until=ref.until, at_end=True)

    @property
    def read_whole(self) -> bool:
        """Whether the position's list was closed when read and read to its end: nothing of it
        is left unread (a closed list does not change, 12.1)."""
        return self.at_end and self.list_until is not None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as W3C strings), for checkpoints."""
        data = asdict(self)
        for key in _TIMES:
            if data[key] is not None:
                data[key] = format_datetime(data[key])
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChangePosition:
        values = dict(data)
        for key in _TIMES:
            if values.get(key) is not None:
                values[key] = parse_datetime(values[key])
        return cls(**values)


_TIMES = ("time", "list_from", "list_until")


def lists_to_read(lists: Iterable[ChangeListRef], position: ChangePosition
                  ) -> list[ChangeListRef]:
    """The Change Lists of an index that may hold changes after ``position`` (12.2).

    Closed lists that end before the position are skipped; the list the position is in, and every
    list after it, is kept. A list ending exactly at the position's time is kept: a change at that
    very time may still be unread.
    """
    return [ref for ref in lists if may_hold_changes_after(ref, position)]


def may_hold_changes_after(ref: ChangeListRef, position: ChangePosition) -> bool:
    """Whether the Change List ``ref`` may hold changes after ``position``: see
    :func:`lists_to_read`."""
    return (position.time is None or ref.until is None or ref.until >= position.time
            or position.is_same_list(ref))


@dataclass(frozen=True, slots=True)
class Reading:
    """How one list is read after a position: as the position's ``own`` list (its first
    ``consumed`` entries skipped, whatever their times), ``by_time`` (entries dated before the
    position skipped), or whole. ``doubt``: why whole, where the list's times cannot say which
    of its changes are older."""

    own: bool = False
    by_time: bool = False
    doubt: str | None = None


_NO_FROM = "has no from (12.1), so its times cannot tell old changes from new ones"
_OUT_OF_ORDER = "lists its changes out of order (12.1), so its times cannot tell old from new"


def reading(ref: ChangeListRef, position: ChangePosition,
            again: Callable[[], Iterable[Entry]]) -> Reading:
    """How to read list ``ref`` after ``position``; ``again`` gives its entries once more, for
    the checks that need a pass of their own (read only where they matter)."""
    if position.is_same_list(ref) and (ref.from_ is not None or _still_there(again(), position)):
        return Reading(own=True)
    if position.time is None:
        return Reading()
    if ref.from_ is None:
        return Reading(doubt=_NO_FROM)
    if ref.from_ >= position.time:
        return Reading()  # every change of a list that begins after the position is after it
    if not in_order(again()):
        return Reading(doubt=_OUT_OF_ORDER)
    return Reading(by_time=True)


def _still_there(entries: Iterable[Entry], position: ChangePosition) -> bool:
    """Whether the entry the position last consumed is still where it was (a list only grows,
    12.1; one rewritten at its URL does not keep it)."""
    if position.last is None or position.consumed == 0:
        return True
    for index, entry in enumerate(entries):
        if index == position.consumed - 1:
            when = entry.change_time
            return entry.loc == position.last and (when is None or when == position.time)
    return False


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


def is_before(entry: Entry, position: ChangePosition) -> bool:
    """Whether the change is dated before the position's time (doubtful where :func:`doubt`)."""
    when = entry.change_time
    return when is not None and position.time is not None and when < position.time


def changes_after(ref: ChangeListRef, entries: Iterable[Entry], position: ChangePosition,
                  how: Reading) -> Iterator[tuple[int, Entry]]:
    """The entries of list ``ref`` after ``position``, with their index in the list, read
    ``how`` :func:`reading` says."""
    for index, entry in enumerate(entries):
        if how.own:
            if index >= position.consumed:
                yield index, entry
        elif not (how.by_time and is_before(entry, position)):
            yield index, entry
