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
from operator import methodcaller

from ..errors import ConfigurationError
from .inventory.entries import SEPARATOR, entry_of, fields_object
from .inventory.objects import InventoryObject
from .inventory.order import Ordered, order_error

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

    Objects are compared as entries (:mod:`.inventory.entries`): an :class:`~.inventory.order.
    Ordered` stream (a report's) gives its own, and only objects that changed are built.

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
    old, old_where, old_fix = _entries(previous, "the previous snapshot",
                                       "the snapshot is corrupt: publish it again from scratch")
    new, new_where, new_fix = _entries(current, "the inventory",
                                       "order it first (InventoryReport.ordered sorts a report)",
                                       latest=True)
    # One loop, every step inline: it runs once per object of the bucket.
    before, after = next(old, None), next(new, None)
    old_last = before[0] if before is not None else ""
    new_last = after[0] if after is not None else ""
    while before is not None or after is not None:
        if before is not None and (after is None or before[0] < after[0]):
            yield Change(ChangeKind.DELETED, before[0], until, None, fields_object(before))
            old_step = True
        else:
            assert after is not None  # else ``before`` alone is left, and went above
            if before is None or after[0] < before[0]:
                if after[5] == "false":
                    created = fields_object(after)
                    yield Change(ChangeKind.CREATED, created.key,
                                 _within(created.last_modified, since, until), created, None)
            elif after[5] == "true":
                marker = fields_object(after)
                yield Change(ChangeKind.DELETED, marker.key,
                             _within(marker.last_modified, since, until), None,
                             fields_object(before))
            elif after[1] != before[1] or after[2] != before[2]:
                updated = fields_object(after)
                yield Change(ChangeKind.UPDATED, updated.key,
                             _within(updated.last_modified, since, until), updated,
                             fields_object(before))
            old_step = before is not None and before[0] == after[0]
            after = next(new, None)
            if after is not None:
                if after[0] <= new_last:
                    raise order_error(after[0], new_last, new_where, new_fix)
                new_last = after[0]
        if old_step:
            before = next(old, None)
            if before is not None:
                if before[0] <= old_last:
                    raise order_error(before[0], old_last, old_where, old_fix)
                old_last = before[0]


def _entries(stream: Iterable[InventoryObject], where: str, fix: str, *,
             latest: bool = False) -> tuple[Iterator[list[str]], str, str]:
    """The entries of ``stream``, split into their fields, with where they come from and what
    to change when they are out of order.

    :param latest: leave out versions that are not the latest.
    """
    if isinstance(stream, Ordered):
        return map(_split, stream.entries), stream.where, stream.fix
    objects = (item for item in stream if item.is_latest) if latest else iter(stream)
    return map(_split, map(entry_of, objects)), where, fix


_split = methodcaller("split", SEPARATOR)


def _within(when: datetime, since: datetime | None, until: datetime) -> datetime:
    """``when`` kept inside ``(since, until]``: the first microsecond after ``since`` at the
    earliest, ``until`` at the latest."""
    if since is not None and when <= since:
        return since + _TICK
    return min(when, until)
