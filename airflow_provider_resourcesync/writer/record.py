"""What the Source writer holds for a URI, and its compact JSON form in the shard index.

A record's row is a JSON array, ``[uri, key, length, hashes, lastmod, type]``: the hash attribute
as written (spec section 7, parsed back with :meth:`Hashes.parse`), ``lastmod`` as a W3C Datetime
in UTC or null, ``type`` a media type or null. A removal (a tombstone in the delta layer) is the
one-element row ``[uri]``. Arrays rather than objects: no field names repeated per record, and
fewer objects to build when a shard is parsed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import InvalidValueError, shown
from ..protocol.datetimes import format_datetime, parse_datetime
from ..protocol.hashes import Hashes
from ..storage.base import ObjectInfo

__all__ = ["ObjectRecord", "record_from_row", "row_of"]


@dataclass(frozen=True, slots=True)
class ObjectRecord:
    """An object the collection holds: its URI (the origin's, for the mirror), the key it is
    stored under, and its description: length, hashes, lastmod and type.

    :param uri: the URI in its normal form (callers normalize with ``storage.keys.normalized``:
        the index shards and compares URIs as given).
    """

    uri: str
    key: str
    length: int
    hashes: Hashes
    lastmod: datetime | None = None
    type: str | None = None

    @classmethod
    def of(cls, key: str, info: ObjectInfo) -> ObjectRecord:
        return cls(info.uri, key, info.length, info.hashes, info.lastmod, info.type)

    @property
    def info(self) -> ObjectInfo:
        return ObjectInfo(self.uri, self.length, self.hashes, self.lastmod, self.type)


def row_of(uri: str, held: ObjectRecord | None) -> list[Any]:
    """The JSON row of ``held`` at ``uri``; ``[uri]`` for a removal (``held`` None)."""
    if held is None:
        return [uri]
    lastmod = format_datetime(held.lastmod) if held.lastmod is not None else None
    return [held.uri, held.key, held.length, str(held.hashes), lastmod, held.type]


def record_from_row(row: Any) -> tuple[str, ObjectRecord | None]:
    """``(uri, record)`` from a JSON row; the record is None for a removal.

    :raises InvalidValueError: the row is not one :func:`row_of` writes (what is wrong is said).
    """
    if isinstance(row, list) and len(row) == 1 and isinstance(row[0], str):
        return row[0], None
    if not (isinstance(row, list) and len(row) == 6):
        raise InvalidValueError(f"a record is not a row of 1 or 6 fields: {shown(str(row))}")
    uri, key, length, hashes, lastmod, kind = row
    if not (isinstance(uri, str) and isinstance(key, str) and isinstance(hashes, str)
            and type(length) is int and length >= 0
            and isinstance(lastmod, str | None) and isinstance(kind, str | None)):
        raise InvalidValueError(f"the record of {shown(str(uri))} has a field of the wrong type")
    return uri, ObjectRecord(uri, key, length, Hashes.parse(hashes),
                     parse_datetime(lastmod) if lastmod is not None else None, kind)
