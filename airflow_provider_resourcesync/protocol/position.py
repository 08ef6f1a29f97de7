"""Where a Destination stands in a Source's changes, and which changes come after it.

A datetime alone is not enough (DESIGN.md, "Checkpoints"): several changes can share one
``datetime``, 1.0 Change Lists carry the time in ``lastmod`` only, and some entries have no time at
all (spec 12.1, Example 19). A :class:`ChangePosition` therefore keeps the time of the last change
consumed and the Change List it came from with how many of its entries were consumed. Within that
same list (an open list only grows, 12.1; it keeps its ``from`` when it is closed and moved into an
index) the count is exact, whatever the times; in any other list, every change at or after the
time comes after the position (lists of an index do not share changes, 12.2).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from .datetimes import format_datetime, parse_datetime
from .model import Entry, Head

__all__ = ["ChangeListRef", "ChangePosition", "changes_after", "lists_to_read"]


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


def changes_after(ref: ChangeListRef, entries: Iterable[Entry], position: ChangePosition
                  ) -> Iterator[tuple[int, Entry]]:
    """The entries of list ``ref`` after ``position``, with their index in the list.

    In the list the position came from, the first ``consumed`` entries are skipped, whatever their
    times (an open list only grows). In any other list, entries earlier than the position's time
    are skipped; entries at that time or later, and entries with no time (their place in the list
    is their only order), come after it.
    """
    same_list = position.is_same_list(ref)
    for index, entry in enumerate(entries):
        if same_list:
            if index >= position.consumed:
                yield index, entry
            continue
        when = entry.change_time
        if when is None or position.time is None or when >= position.time:
            yield index, entry
