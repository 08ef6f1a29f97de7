"""The changes since the last publication: the previous snapshot and the new inventory, two
streams in key order, merged in bounded memory (one object of each in hand).

A snapshot diff sees one net change per object between two runs: an object written three times
is one update, one created and deleted in between is nothing, and intermediate versions are never
seen. Created and updated objects are dated by their LastModified, deleted ones by their latest
delete marker where the inventory lists versions, else by the inventory's time; every time is
kept inside the run's window ``(since, until]``, so no change is dated into a window a
Destination has already read (spec 12.1: a Change List covers ``from`` to ``until``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from ..errors import ConfigurationError
from .inventory.objects import InventoryObject
from .inventory.order import in_key_order

__all__ = ["Change", "ChangeKind", "changes"]

_TICK = timedelta(microseconds=1)


class ChangeKind(Enum):
    """What happened to an object (the ``rs:md change`` values, spec 12.1)."""

    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class Change:
    """One object's net change.

    :param time: when it happened, inside the run's window.
    :param current: the object as the inventory lists it (None when deleted).
    :param previous: the object as the previous snapshot held it (None when created).
    """

    kind: ChangeKind
    key: str
    time: datetime
    current: InventoryObject | None
    previous: InventoryObject | None


def changes(previous: Iterable[InventoryObject], current: Iterable[InventoryObject], *,
            since: datetime | None, until: datetime) -> Iterator[Change]:
    """The changes from ``previous`` to ``current``, in key order (not time order).

    :param previous: the previous snapshot's objects, in strictly increasing key order.
    :param current: the new inventory, in strictly increasing key order (a report's
        :meth:`~.inventory.report.InventoryReport.ordered`, a listing, a directory walk).
        Versions that are not the latest are skipped; a latest delete marker means the object
        is deleted.
    :param since: the previous snapshot's time (None for the first publication).
    :param until: this inventory's time: a report's creation, a listing's start.
    :raises InventoryError: a stream is out of key order (both keys named).
    :raises ConfigurationError: ``until`` is not after ``since``.
    """
    if since is not None and until <= since:
        raise ConfigurationError(f"the inventory's time {until.isoformat()} is not after the "
                                 f"previous snapshot's {since.isoformat()}; publish from a newer "
                                 "inventory")
    old = iter(in_key_order(previous, "the previous snapshot",
                            "the snapshot is corrupt: publish it again from scratch"))
    new = iter(in_key_order((item for item in current if item.is_latest), "the inventory",
                            "order it first (InventoryReport.ordered sorts a report)"))
    before, after = next(old, None), next(new, None)
    while before is not None or after is not None:
        if after is None or (before is not None and before.key < after.key):
            assert before is not None
            yield Change(ChangeKind.DELETED, before.key, until, None, before)
            before = next(old, None)
            continue
        if before is None or after.key < before.key:
            if not after.is_delete_marker:
                yield Change(ChangeKind.CREATED, after.key,
                             _within(after.last_modified, since, until), after, None)
        elif after.is_delete_marker:
            yield Change(ChangeKind.DELETED, after.key,
                         _within(after.last_modified, since, until), None, before)
        elif after.size != before.size or after.etag != before.etag:
            yield Change(ChangeKind.UPDATED, after.key,
                         _within(after.last_modified, since, until), after, before)
        if before is not None and before.key == after.key:
            before = next(old, None)
        after = next(new, None)


def _within(when: datetime, since: datetime | None, until: datetime) -> datetime:
    """``when`` kept inside ``(since, until]``: the first microsecond after ``since`` at the
    earliest, ``until`` at the latest."""
    if since is not None and when <= since:
        return since + _TICK
    return min(when, until)
