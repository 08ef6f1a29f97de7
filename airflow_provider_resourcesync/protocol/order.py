"""Forward chronological order (spec 12.1, 12.2, 13.1, 13.2): one rule for the validator, the
writers and the split, so that nothing is written that the validator would reject.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ..errors import InvalidValueError
from .datetimes import format_datetime
from .model import DocumentKind, Entry

__all__ = [
    "CHANGE_DOCUMENTS",
    "CHANGE_INDEXES",
    "ChangeOrder",
    "ForwardOrder",
    "child_from",
    "package_start",
    "required_order",
]

#: Documents whose entries are changes, listed in forward chronological order (12.1, 13.2).
CHANGE_DOCUMENTS = frozenset({DocumentKind.CHANGE_LIST, DocumentKind.CHANGE_DUMP_MANIFEST})
#: Indexes of Change Lists and Change Dumps, whose children go in forward chronological order
#: of their ``from`` (12.2; 13.1 "in a manner similar to 12.2").
CHANGE_INDEXES = frozenset({DocumentKind.CHANGE_LIST_INDEX, DocumentKind.CHANGE_DUMP_INDEX})

TimeOf = Callable[[Entry], datetime | None]


class ForwardOrder:
    """Follows entries one by one: is each timed entry not earlier than the previous timed one?

    Entries without a time are not ordered. :meth:`backwards` and :meth:`require` look at the
    next entry without taking it; :meth:`advance` takes it.

    :param time_of: the time an entry is ordered by, or None where it has none.
    :param section: the spec section the order comes from, for messages.
    """

    def __init__(self, time_of: TimeOf, section: str) -> None:
        self._time_of = time_of
        self.section = section
        #: The time of the last timed entry taken.
        self.previous: datetime | None = None

    def time_of(self, entry: Entry) -> datetime | None:
        """The time ``entry`` is ordered by, coming next."""
        return self._time_of(entry)

    def backwards(self, entry: Entry) -> tuple[datetime, datetime] | None:
        """If ``entry``, coming next, is earlier than the previous timed entry: both times."""
        when = self.time_of(entry)
        if when is None or self.previous is None or when >= self.previous:
            return None
        return when, self.previous

    def require(self, entry: Entry) -> None:
        """Refuse ``entry``, coming next, if it is earlier than the previous timed entry.

        :raises InvalidValueError: naming the entry's ``loc`` and both times.
        """
        found = self.backwards(entry)
        if found is not None:
            when, previous = found
            raise InvalidValueError(
                f"{entry.loc} : {format_datetime(when)} is earlier than the previous entry's "
                f"{format_datetime(previous)}; entries go in forward chronological order "
                f"(section {self.section})")

    def advance(self, entry: Entry) -> datetime | None:
        """Take ``entry`` as the next one; its time."""
        when = self.time_of(entry)
        if when is not None:
            self.previous = when
        return when


class ChangeOrder(ForwardOrder):
    """The order of changes in a Change List or a Change Dump Manifest (12.1, 13.2).

    The time of a change is its ``datetime``; until the document shows a ``datetime``, an entry's
    ``lastmod`` stands for it (1.0 style), and after that ``lastmod`` is only the resource's
    (section 7 lets it fall anywhere).
    """

    def __init__(self, section: str) -> None:
        super().__init__(self._change_time, section)
        self._seen_datetime = False

    def _change_time(self, entry: Entry) -> datetime | None:
        when = entry.md.datetime if entry.md is not None else None
        if when is not None:
            return when
        return None if self._seen_datetime else entry.lastmod

    def advance(self, entry: Entry) -> datetime | None:
        if entry.md is not None and entry.md.datetime is not None:
            self._seen_datetime = True
        return super().advance(entry)


def child_from(entry: Entry) -> datetime | None:
    """Where a child of an index of changes starts (12.2): its ``from``."""
    return entry.md.from_ if entry.md is not None else None


def package_start(entry: Entry) -> datetime | None:
    """Where a Change Dump's package starts (13.1): its ``from``, else its ``lastmod``."""
    when = entry.md.from_ if entry.md is not None else None
    return entry.lastmod if when is None else when


def required_order(kind: DocumentKind | None) -> ForwardOrder | None:
    """The order a document's entries must follow, where breaking it is an error: changes
    (12.1, 13.2) and the children of an index of changes (12.2, 13.1). None for other kinds."""
    if kind is None:
        return None
    if kind in CHANGE_DOCUMENTS:
        return ChangeOrder(kind.section)
    if kind in CHANGE_INDEXES:
        return ForwardOrder(child_from, kind.section)
    return None
