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

import gzip
import io
import json
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from ..errors import DocumentError
from ..protocol.datetimes import format_datetime, parse_datetime
from ..protocol.hashes import Hashes
from ..protocol.model import Change
from ..storage.base import Destination, ObjectInfo
from ..storage.scratch import scratch_database
from ..storage.source.records import micros
from .packages import Planned

__all__ = ["Plan", "dated_apart", "read_plan", "write_plan"]

_TICK = timedelta(microseconds=1)
_SCHEMA = "CREATE TABLE changes (time INTEGER, key TEXT, row TEXT);"
_VERSION = 1


@dataclass(frozen=True, slots=True)
class Plan:
    """A run's window ``(start, end]`` and the inventory time it was planned from."""

    start: datetime | None
    end: datetime
    inventory_time: datetime


def dated_apart(changes: Iterable[Planned]) -> Iterator[Planned]:
    """``changes`` by time then key, each later than the one before (see the module)."""
    with closing(scratch_database(_SCHEMA)) as database:
        database.execute("BEGIN")
        database.executemany("INSERT INTO changes VALUES (?, ?, ?)", (
            (micros(change.when, "a change time"), change.key, json.dumps(_row(change)))
            for change in changes))
        database.execute("COMMIT")
        before: datetime | None = None
        for (row,) in database.execute("SELECT row FROM changes ORDER BY time, key"):
            change = _planned(json.loads(row))
            if before is not None and change.when <= before:
                change = replace(change, when=before + _TICK)
            before = change.when
            yield change


def write_plan(destination: Destination, key: str, plan: Plan, changes: Iterable[Planned]
               ) -> int:
    """Write ``plan`` and its ``changes`` (in order) at ``key``; how many changes."""
    count = 0
    with destination.stage(key) as staged:
        with gzip.GzipFile(fileobj=staged.file, mode="wb", mtime=0) as packed:
            text = io.TextIOWrapper(packed, encoding="utf-8", newline="\n")
            text.write(json.dumps({"version": _VERSION, "start": _time(plan.start),
                                   "end": _time(plan.end),
                                   "inventory_time": _time(plan.inventory_time)}) + "\n")
            for change in changes:
                text.write(json.dumps(_row(change)) + "\n")
                count += 1
            text.flush()
            text.detach()
        staged.commit(ObjectInfo(destination.object_url(key), 0, Hashes(()),
                                 type="application/gzip"))
    return count


def read_plan(destination: Destination, key: str) -> tuple[Plan, Iterator[Planned]]:
    """The plan at ``key`` and its changes, streamed.

    :raises DocumentError: it is not a plan this version wrote (named, with the line).
    """
    url = destination.object_url(key)
    stream = destination.open(key)
    lines = io.TextIOWrapper(gzip.GzipFile(fileobj=stream), encoding="utf-8")
    try:
        head = json.loads(lines.readline())
        plan = Plan(_parsed(head["start"]), _parsed(head["end"]),
                    _parsed(head["inventory_time"]))
        if head.get("version") != _VERSION or plan.end is None:
            raise ValueError(f"version {head.get('version')!r}")
    except (ValueError, KeyError, TypeError, OSError, EOFError) as exc:
        lines.close()
        raise DocumentError(f"not a publication plan ({exc}): delete it and publish again",
                            url=url, line=1) from exc

    def changes() -> Iterator[Planned]:
        with lines:
            for number, line in enumerate(lines, start=2):
                try:
                    yield _planned(json.loads(line))
                except (ValueError, KeyError, TypeError, OSError, EOFError) as exc:
                    raise DocumentError(f"a change of the plan cannot be read ({exc}): delete "
                                        "it and publish again", url=url, line=number) from exc

    return plan, changes()


def _row(change: Planned) -> list[object]:
    return [change.key, change.uri, str(change.change), format_datetime(change.when),
            change.size, change.etag, change.version_id]


def _planned(row: list[object]) -> Planned:
    key, uri, change, when, size, etag, version_id = row
    if not (isinstance(key, str) and isinstance(uri, str) and isinstance(when, str)
            and type(size) is int and isinstance(etag, str)
            and isinstance(version_id, str | None)):
        raise TypeError("a field of the wrong type")
    return Planned(key, uri, Change(change), parse_datetime(when), size, etag, version_id)


def _time(value: datetime | None) -> str | None:
    return format_datetime(value) if value is not None else None


def _parsed(value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError("a time that is not a string")
    return parse_datetime(value)
