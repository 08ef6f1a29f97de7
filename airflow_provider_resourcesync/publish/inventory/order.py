"""Key order: checked on a stream, or made on disk for an inventory report, whose rows come in
no particular order.

Keys are compared as Python strings: code point order, which is the order of their UTF-8 bytes
(the order S3 lists in) for the keys :func:`.objects.unpublishable` lets through. On disk,
entries (:mod:`.entries`) are sorted in runs (:mod:`.runs`): as their keys, the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

from ...errors import InventoryError
from ...storage.base import shown_key
from .entries import entry_of, object_of
from .objects import InventoryObject
from .runs import sorted_lines

__all__ = ["Ordered", "in_key_order", "order_error", "ordered", "ordered_entries"]

_BATCH = 10_000


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
            raise order_error(item.key, last, where, fix)
        last = item.key
        yield item


def order_error(key: str, last: str, where: str, fix: str) -> InventoryError:
    """``key`` of the stream ``where`` comes after ``last``, not before it."""
    how = "comes twice" if key == last else f"comes after {shown_key(last)}, out of key order"
    return InventoryError(f"{where}: key {shown_key(key)} {how}; {fix}")


class Ordered(Iterable[InventoryObject]):
    """Latest objects in key order, kept as entries (:mod:`.entries`): iterated, the objects
    (their order checked); to the diff (:func:`...diff.changes`), the entries themselves, so
    only the objects that changed are built. One pass only.

    :param entries: the entries, in key order (checked by whoever reads them).
    :param where: the stream, for messages.
    :param fix: what to change when a key comes twice or out of order.
    """

    def __init__(self, entries: Iterator[str], where: str, fix: str) -> None:
        self.entries = entries
        self.where = where
        self.fix = fix

    def __iter__(self) -> Iterator[InventoryObject]:
        return in_key_order(map(object_of, self.entries), self.where, self.fix)


def ordered(objects: Iterable[InventoryObject], where: str) -> Ordered:
    """The latest version of each of ``objects`` (``is_latest``; a delete marker too), in key
    order, sorted in runs on disk: memory stays flat, whatever the count. Every object is read
    before the first comes out, so a report that fails to read yields nothing.

    :param where: the inventory, for the message.
    :raises InventoryError: a key has two latest versions (the report is corrupt), once read.
    """
    latest = (item for item in objects if item.is_latest)
    return ordered_entries(iter(lambda: list(map(entry_of, islice(latest, _BATCH))), []), where)


def ordered_entries(batches: Iterable[list[str]], where: str) -> Ordered:
    """:func:`ordered` for batches of a report's entries (latest versions only)."""
    return Ordered(sorted_lines(batches), where,
                   "the report lists two latest versions of one key: it is corrupt, publish "
                   "from the next report")
