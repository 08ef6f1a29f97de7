"""A report's rows as :class:`InventoryObject`: CSV rows (text fields, keys URL-encoded) and
the typed rows of ORC and Parquet, under the same checks.

S3 writes a CSV report's keys URL-encoded as an HTML form would be: a space as ``+``, every other
byte outside ``A-Z a-z 0-9 . - _ *`` as ``%XX`` of its UTF-8 encoding. ORC and Parquet keys are
plain. Delete markers have no size and no ETag; every other row must have both.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote_to_bytes

from ...errors import InvalidValueError, InventoryError
from ...protocol.datetimes import parse_datetime
from ...storage.base import shown_key
from .manifest import column_name
from .objects import InventoryObject, checked_key, in_scope

__all__ = ["Fields", "Scope"]

_BOOLEANS = {"true": True, "false": False}


class Scope:
    """Which keys are kept: under ``prefix``, not under ``exclude_prefix``."""

    def __init__(self, prefix: str = "", exclude_prefix: str | None = None) -> None:
        self.prefix = prefix
        self.exclude_prefix = exclude_prefix

    def __contains__(self, key: str) -> bool:
        return in_scope(key, self.prefix, self.exclude_prefix)


class Fields:
    """Where the fields used are in a row of ``columns`` (names as :func:`column_name` makes
    them); VersionId, IsLatest and IsDeleteMarker may be absent."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.width = len(columns)
        index = {name: position for position, name in enumerate(columns)}
        self.key = index["key"]
        self.size = index["size"]
        self.modified = index["lastmodifieddate"]
        self.etag = index["etag"]
        self.version = index.get(column_name("VersionId"))
        self.latest = index.get(column_name("IsLatest"))
        self.marker = index.get(column_name("IsDeleteMarker"))

    def csv_objects(self, rows: Iterator[list[str]], where: str,
                    scope: Scope) -> Iterator[InventoryObject]:
        """The objects of CSV ``rows`` in ``scope``.

        :raises InventoryError: a row breaks the schema (its number and what is wrong named).
        """
        for number, row in enumerate(rows, 1):
            if len(row) != self.width:
                raise _row_error(where, number, f"has {len(row)} fields, the fileSchema "
                                                f"names {self.width}")
            key = _decoded(row[self.key], where, number)
            if key not in scope:
                continue
            marker = self.marker is not None and _flag(row[self.marker], where, number)
            latest = self.latest is None or _flag(row[self.latest], where, number)
            size = _size(row[self.size], where, number, marker)
            try:
                modified = parse_datetime(row[self.modified])
            except InvalidValueError as exc:
                raise _row_error(where, number, f"has a bad LastModifiedDate: {exc}") from exc
            etag = row[self.etag].strip('"')
            if not etag and not marker:
                raise _row_error(where, number, "has no ETag")
            version = row[self.version] if self.version is not None else None
            yield InventoryObject(checked_key(key, f"{where}, row {number}"), size, etag,
                                  modified, version or None, latest, marker)

    def typed_objects(self, rows: Iterator[tuple[Any, ...]], where: str,
                      scope: Scope) -> Iterator[InventoryObject]:
        """The objects of typed rows (ORC, Parquet: ``None`` for a null) in ``scope``."""
        for number, row in enumerate(rows, 1):
            key = row[self.key]
            if not isinstance(key, str):
                raise _row_error(where, number, "has no key")
            if key not in scope:
                continue
            marker = bool(self.marker is not None and row[self.marker])
            latest = self.latest is None or row[self.latest] is not False
            size, modified, etag = row[self.size], row[self.modified], row[self.etag]
            if marker:
                size, etag = size or 0, etag or ""
            if type(size) is not int or size < 0:
                raise _row_error(where, number, f"has a bad size: {size!r}")
            if not isinstance(modified, datetime):
                raise _row_error(where, number, f"has a bad LastModifiedDate: {modified!r}")
            if not isinstance(etag, str) or not (etag or marker):
                raise _row_error(where, number, "has no ETag")
            version = row[self.version] if self.version is not None else None
            yield InventoryObject(
                checked_key(key, f"{where}, row {number}"), size, etag.strip('"'),
                modified.replace(tzinfo=UTC) if modified.tzinfo is None
                else modified.astimezone(UTC),
                version if isinstance(version, str) and version else None, latest, marker)


def _decoded(text: str, where: str, number: int) -> str:
    try:
        return unquote_to_bytes(text.replace("+", " ")).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InventoryError(
            f"{where}, row {number}: key {shown_key(text)} is not valid UTF-8 once URL-decoded, "
            "so it cannot be published as a URL; rename the object, or move it out of the "
            "published prefix") from exc


def _flag(text: str, where: str, number: int) -> bool:
    try:
        return _BOOLEANS[text.strip().lower()]
    except KeyError:
        raise _row_error(where, number, f"has {text[:20]!r} where true or false goes") from None


def _size(text: str, where: str, number: int, marker: bool) -> int:
    if marker and not text:
        return 0
    if not (text.isascii() and text.isdigit()):
        raise _row_error(where, number, f"has a bad size: {text[:30]!r}")
    return int(text)


def _row_error(where: str, number: int, what: str) -> InventoryError:
    return InventoryError(f"{where}, row {number} {what}; the data file breaks its manifest's "
                          "fileSchema: publish from a report S3 wrote")
