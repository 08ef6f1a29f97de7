"""Key order: checked on a stream, or made on disk for an inventory report, whose rows come in
no particular order.

Keys are compared as Python strings: code point order, which is the order of their UTF-8 bytes
(the order S3 lists in) for the valid keys :func:`.objects.checked_key` lets through. On disk,
SQLite compares TEXT by the bytes of its UTF-8 encoding: the same order.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta

from ...errors import InventoryError
from ...storage.base import shown_key
from ...storage.scratch import scratch_database
from .objects import InventoryObject

__all__ = ["in_key_order", "ordered"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_BATCH = 10_000
_DELETE_MARKER = 1
_SCHEMA = """CREATE TABLE objects (key TEXT NOT NULL, size INTEGER NOT NULL,
    etag TEXT NOT NULL, modified INTEGER NOT NULL, version TEXT, flags INTEGER NOT NULL)"""


def in_key_order(objects: Iterable[InventoryObject], where: str,
                 fix: str = "the store does not list in key order: publish from an S3 "
                            "Inventory report of the bucket instead") -> Iterator[InventoryObject]:
    """``objects``, checked to come in strictly increasing key order.

    :param where: the stream, for the message.
    :param fix: what to change when they do not.
    :raises InventoryError: a key comes again, or before the one ahead of it (both named).
    """
    last: str | None = None
    for item in objects:
        if last is not None and item.key <= last:
            how = "comes twice" if item.key == last else \
                f"comes after {shown_key(last)}, out of key order"
            raise InventoryError(f"{where}: key {shown_key(item.key)} {how}; {fix}")
        last = item.key
        yield item


def ordered(objects: Iterable[InventoryObject], where: str) -> Iterator[InventoryObject]:
    """The latest version of each of ``objects`` (``is_latest``; a delete marker too), in key
    order, sorted in a scratch SQLite database: memory stays flat, whatever the count. Every
    object is read before the first comes out, so a report that fails to read yields nothing.

    :param where: the inventory, for the message.
    :raises InventoryError: a key has two latest versions (the report is corrupt).
    """
    database = scratch_database(_SCHEMA)
    try:
        rows = ((item.key, item.size, item.etag, _micros(item.last_modified), item.version_id,
                 _DELETE_MARKER if item.is_delete_marker else 0)
                for item in objects if item.is_latest)
        database.execute("BEGIN")
        while batch := list(itertools.islice(rows, _BATCH)):
            database.executemany("INSERT INTO objects VALUES (?, ?, ?, ?, ?, ?)", batch)
        database.execute("COMMIT")
        cursor = database.execute(
            "SELECT key, size, etag, modified, version, flags FROM objects ORDER BY key")
        sorted_objects = (
            InventoryObject(key, size, etag, _EPOCH + timedelta(microseconds=modified), version,
                            True, bool(flags & _DELETE_MARKER))
            for key, size, etag, modified, version, flags in cursor)
        yield from in_key_order(sorted_objects, where,
                                "the report lists two latest versions of one key: it is corrupt, "
                                "publish from the next report")
    finally:
        database.close()


def _micros(when: datetime) -> int:
    return (when - _EPOCH) // timedelta(microseconds=1)
