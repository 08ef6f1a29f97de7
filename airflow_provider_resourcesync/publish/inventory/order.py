"""Key order: checked on a stream, or made on disk for an inventory report, whose rows come in
no particular order.

Keys are compared as Python strings: code point order, which is the order of their UTF-8 bytes
(the order S3 lists in) for the valid keys :func:`.objects.checked_key` lets through. On disk,
SQLite compares TEXT by the bytes of its UTF-8 encoding: the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from ...errors import InventoryError
from ...storage.base import shown_key
from ...storage.scratch import scratch_database
from .objects import InventoryObject
from .rows import Row

__all__ = ["in_key_order", "ordered", "ordered_rows"]

_SCHEMA = """CREATE TABLE objects (key TEXT NOT NULL, size INTEGER NOT NULL,
    etag TEXT NOT NULL, modified TEXT NOT NULL, version TEXT, marker INTEGER NOT NULL)"""


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
    return ordered_rows(((item.key, item.size, item.etag, item.last_modified.isoformat(),
                          item.version_id, item.is_latest, item.is_delete_marker)
                         for item in objects), where)


def ordered_rows(rows: Iterable[Row], where: str) -> Iterator[InventoryObject]:
    """:func:`ordered` for a report's rows (:data:`.rows.Row`), before any object is built."""
    database = scratch_database(_SCHEMA)
    try:
        latest = ((key, size, etag, modified, version, marker)
                  for key, size, etag, modified, version, is_latest, marker in rows
                  if is_latest)
        database.execute("BEGIN")
        database.executemany("INSERT INTO objects VALUES (?, ?, ?, ?, ?, ?)", latest)
        database.execute("COMMIT")
        cursor = database.execute(
            "SELECT key, size, etag, modified, version, marker FROM objects ORDER BY key")
        sorted_objects = (
            InventoryObject(key, size, etag, datetime.fromisoformat(modified), version, True,
                            bool(marker))
            for key, size, etag, modified, version, marker in cursor)
        yield from in_key_order(sorted_objects, where,
                                "the report lists two latest versions of one key: it is corrupt, "
                                "publish from the next report")
    finally:
        database.close()
