"""The objects as last published: the inventory a run published from, in key order (its latest
versions, delete markers left out), kept at the destination for the next run's diff.

Written while the diff reads the inventory (:func:`keeping`), so the inventory is read once.
Objects a run left for the next one (gone since the inventory, :mod:`.bucket`) are read back
with no ETag, so the next diff finds them changed whatever its inventory says; objects it
published as read, written again since the inventory, are read back with the size and ETag
read, so the next diff compares its inventory with what was published.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from ..protocol.datetimes import as_datetime, format_datetime, micros, parse_datetime
from ..storage.base import Destination
from ..storage.scratch import scratch_database
from ..writer import ObjectRecord
from .inventory.entries import SEPARATOR
from .inventory.objects import InventoryObject
from .inventory.order import Ordered
from .lines import lines_writer, read_lines

__all__ = ["keeping", "read_published", "rebuilt"]

_VERSION = 1
_WHAT = "the objects as last published"
_SCHEMA = "CREATE TABLE objects (key TEXT, size INTEGER, modified INTEGER);"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def keeping(destination: Destination, key: str, inventory: Iterable[InventoryObject]
            ) -> Iterable[InventoryObject]:
    """``inventory`` passed through, its latest objects kept at ``key`` as they pass: committed
    once the inventory has been read to its end, and not at all if it is not. An
    :class:`~.inventory.order.Ordered` inventory passes as one, its entries kept as they are."""
    if isinstance(inventory, Ordered):
        return Ordered(_kept_entries(destination, key, inventory.entries), inventory.where,
                       inventory.fix)
    return _kept(destination, key, inventory)


def _kept(destination: Destination, key: str, inventory: Iterable[InventoryObject]
          ) -> Iterator[InventoryObject]:
    with lines_writer(destination, key, {"version": _VERSION}) as write:
        for item in inventory:
            if item.is_latest and not item.is_delete_marker:
                write([item.key, item.size, item.etag, format_datetime(item.last_modified),
                       item.version_id])
            yield item


def _kept_entries(destination: Destination, key: str, entries: Iterator[str]) -> Iterator[str]:
    """The entries passed through, each object's kept (its time as the entry has it: ISO 8601
    in UTC, which :func:`read_published` reads)."""
    with lines_writer(destination, key, {"version": _VERSION}) as write:
        for entry in entries:
            name, size, etag, modified, version, marker, _ = entry.split(SEPARATOR)
            if marker == "false":
                write([name, int(size), etag, modified, version or None])
            yield entry


def read_published(destination: Destination, key: str, unknown: Iterable[str] = (),
                   read: Mapping[str, tuple[int, str]] | None = None
                   ) -> Iterator[InventoryObject]:
    """The objects kept at ``key``, in key order; those of ``unknown`` keys with no ETag, those
    of ``read`` keys with the size and ETag given there.

    :raises DocumentError: the record cannot be read (its key and line named).
    """
    _, rows = read_lines(destination, key, _WHAT, _head, _object)
    blank = frozenset(unknown)
    published = read or {}
    for item in rows:
        if item.key in blank:
            yield replace(item, etag="")
        elif item.key in published:
            size, etag = published[item.key]
            yield replace(item, size=size, etag=etag)
        else:
            yield item


def rebuilt(records: Iterable[ObjectRecord]) -> Iterator[InventoryObject]:
    """The objects as a publication's own documents describe them (``records``, the Source
    writer's), in key order, with no ETag: for a run whose objects record is gone, which then
    finds every object still there changed, and publishes it again (no change is lost)."""
    with closing(scratch_database(_SCHEMA)) as database:
        database.execute("BEGIN")
        database.executemany("INSERT INTO objects VALUES (?, ?, ?)", (
            (record.key, record.length, micros(record.lastmod) or 0) for record in records))
        database.execute("COMMIT")
        for key, size, modified in database.execute(
                "SELECT key, size, modified FROM objects ORDER BY key"):
            yield InventoryObject(key, size, "", as_datetime(modified) or _EPOCH)


def _head(head: dict[str, Any]) -> None:
    if head.get("version") != _VERSION:
        raise ValueError(f"version {head.get('version')!r}")


def _object(row: Any) -> InventoryObject:
    key, size, etag, last_modified, version_id = row
    if not (isinstance(key, str) and type(size) is int and isinstance(etag, str)
            and isinstance(last_modified, str) and isinstance(version_id, str | None)):
        raise TypeError("a field of the wrong type")
    return InventoryObject(key, size, etag, parse_datetime(last_modified), version_id)
