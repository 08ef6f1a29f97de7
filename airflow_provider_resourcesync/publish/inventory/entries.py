"""An object as one line of text, the form a large inventory is sorted and diffed in: building
an :class:`InventoryObject` per row costs more than reading the row, so only the objects that
changed are built.

An entry is ``key NUL size NUL etag NUL last_modified NUL version NUL marker NUL encryption``:
the size in decimal, the time as ISO 8601 text in UTC (:data:`.rows.Row`'s form), ``""`` for
no version, the marker ``true`` or ``false``, ``""`` for no encryption status. A key holds no
control character (:func:`.objects.unpublishable`), so entries sort as their keys do (NUL sorts
before every character a key can hold), and a file of them is one entry a line.
"""

from __future__ import annotations

from datetime import datetime

from .objects import InventoryObject

__all__ = ["SEPARATOR", "entry_of", "fields_object", "object_of"]

SEPARATOR = "\x00"


def entry_of(item: InventoryObject) -> str:
    """``item`` as an entry (its ``is_latest`` flag is not kept)."""
    return SEPARATOR.join((item.key, str(item.size), item.etag, item.last_modified.isoformat(),
                           item.version_id or "", "true" if item.is_delete_marker else "false",
                           item.encryption or ""))


def object_of(entry: str) -> InventoryObject:
    """The latest object (or delete marker) ``entry`` describes."""
    return fields_object(entry.split(SEPARATOR))


def fields_object(fields: list[str]) -> InventoryObject:
    """:func:`object_of` for an entry already split at :data:`SEPARATOR`."""
    key, size, etag, modified, version, marker, encryption = fields
    return InventoryObject(key, int(size), etag, datetime.fromisoformat(modified), version or None,
                           True, marker == "true", encryption or None)

