"""A run's plan: the changes it publishes, in forward chronological order, each at a time of its
own, kept at the destination before anything is published.

Ordering: the changes come from the diff in key order; they are ordered by time, then key, in
a scratch SQLite database (its sorter spills to disk, so memory stays flat).

Dating apart: S3 gives LastModified to the second, so a bulk upload shares one time among
thousands of objects, and deletions with no delete marker all share the inventory's. A package
holds every change of its window (13.2) and lists at most 50,000, so such a crowd could not be
packaged. Each change that would not be later than the one before is moved to one microsecond
after it: times stay in the order of the changes, and move by at most a microsecond per change
(a tenth of a second for 100,000 changes of one second).

Kept: the plan is written (gzip'd JSON lines, one change a line, after a first line saying the
run's window) before the run's first package. A run killed at any point finds its plan on the
next run and publishes it again, the same changes at the same times in the same packages,
before it looks at a newer inventory: every change is published once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from ..protocol.closing import ClosedOnExit
from ..protocol.datetimes import format_datetime, micros, parse_datetime
from ..protocol.model import Change
from ..storage.base import Destination
from ..storage.scratch import scratch_database
from .lines import read_lines, write_lines
from .packages import Planned

__all__ = ["DatedApart", "Plan", "read_plan", "write_plan"]

_TICK = timedelta(microseconds=1)
_SCHEMA = "CREATE TABLE changes (time INTEGER, key TEXT, row TEXT);"
_VERSION = 1


@dataclass(frozen=True, slots=True)
class Plan:
    """A run's window ``(start, end]``, the inventory time it was planned from, and the key
    of the objects as published once it is carried out (:mod:`.published`)."""

    start: datetime | None
    end: datetime
    inventory_time: datetime
    objects: str


class DatedApart(ClosedOnExit):
    """Changes by time then key, each later than the one before (see the module): all taken
    in when made, held in a scratch database until :meth:`close`; :attr:`last` is the last
    one's time, and iterating gives them (as often as asked)."""

    def __init__(self, changes: Iterable[Planned]) -> None:
        self._database = scratch_database(_SCHEMA)
        self.last: datetime | None = None
        try:
            self._database.execute("BEGIN")
            self._database.executemany("INSERT INTO changes VALUES (?, ?, ?)", (
                (micros(change.when, "a change time"), change.key, json.dumps(_row(change)))
                for change in changes))
            self._database.execute("COMMIT")
            for change in self:
                self.last = change.when
        except BaseException:
            self.close()
            raise

    def __iter__(self) -> Iterator[Planned]:
        before: datetime | None = None
        for (row,) in self._database.execute("SELECT row FROM changes ORDER BY time, key"):
            change = _planned(json.loads(row))
            if before is not None and change.when <= before:
                change = replace(change, when=before + _TICK)
            before = change.when
            yield change

    def close(self) -> None:
        self._database.close()


def write_plan(destination: Destination, key: str, plan: Plan, changes: Iterable[Planned]
               ) -> int:
    """Write ``plan`` and its ``changes`` (in order) at ``key``; how many changes."""
    return write_lines(destination, key, {
        "version": _VERSION, "start": _time(plan.start), "end": _time(plan.end),
        "inventory_time": _time(plan.inventory_time), "objects": plan.objects},
        (_row(change) for change in changes))


def read_plan(destination: Destination, key: str) -> tuple[Plan, Iterator[Planned]]:
    """The plan at ``key`` and its changes, streamed.

    :raises DocumentError: it is not a plan this version wrote (named, with the line).
    """
    return read_lines(destination, key, "a publication plan", _plan, _planned)


def _plan(head: dict[str, Any]) -> Plan:
    end, inventory_time = _parsed(head["end"]), _parsed(head["inventory_time"])
    objects = head["objects"]
    if head.get("version") != _VERSION or end is None or inventory_time is None or (
            not isinstance(objects, str)):
        raise ValueError(f"version {head.get('version')!r}")
    return Plan(_parsed(head["start"]), end, inventory_time, objects)


def _row(change: Planned) -> list[object]:
    """A change as a row; the seventh field, the version reads were once pinned to, is None."""
    return [change.key, change.uri, str(change.change), format_datetime(change.when),
            change.size, change.etag, None, _time(change.modified), change.md5]


def _planned(row: Any) -> Planned:
    """A change as :func:`_row` wrote it (a plan written before the LastModified was kept has
    none: its changes are dated as ``when``, as they were; one written when reads were pinned
    has the version in its seventh field, no longer read; one written before the MD5 was kept
    has none: its objects are listed with no MD5)."""
    key, uri, change, when, size, etag, _, *rest = row
    modified, md5 = (*rest, None, None)[:2]
    if not (isinstance(key, str) and isinstance(uri, str) and isinstance(when, str)
            and type(size) is int and isinstance(etag, str) and isinstance(md5, str | None)
            and len(rest) <= 2):
        raise TypeError("a field of the wrong type")
    return Planned(key, uri, Change(change), parse_datetime(when), size, etag,
                   _parsed(modified), md5)


def _time(value: datetime | None) -> str | None:
    return format_datetime(value) if value is not None else None


def _parsed(value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError("a time that is not a string")
    return parse_datetime(value)
