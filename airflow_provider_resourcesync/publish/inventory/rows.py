"""A report's rows, checked: CSV rows (text fields, keys URL-encoded) and the typed rows of ORC
and Parquet, as :data:`Row` tuples: the fields of :class:`InventoryObject`, in its order, but
the time as ISO 8601 text in UTC (what :meth:`datetime.fromisoformat` reads: S3's own CSV form
passes through as it is, so a row sorted on disk is parsed once, not formatted and parsed).

S3 writes a CSV report's keys URL-encoded as an HTML form would be: a space as ``+``, every other
byte outside ``A-Z a-z 0-9 . - _ *`` as ``%XX`` of its UTF-8 encoding. ORC and Parquet keys are
plain. Delete markers have no size and no ETag; every other row must have both. A row's Bucket,
where the report has the column, must be the bucket published. A row's EncryptionStatus, where
the report has the column, is kept: it says whether the ETag is an MD5
(:attr:`.objects.InventoryObject.md5`).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from itertools import compress
from operator import and_, itemgetter
from typing import Any
from urllib.parse import unquote_to_bytes

from ...errors import InvalidValueError, InventoryError
from ...protocol.datetimes import parse_datetime
from .bounded import CsvRows
from .entries import SEPARATOR
from .manifest import column_name
from .objects import CONTROL, fit, in_scope, unpublishable
from .skipped import Skipped

__all__ = ["Fields", "Row", "Scope", "entries"]

#: ``(key, size, etag, last_modified (ISO 8601 text, UTC), version_id, is_latest,
#: is_delete_marker, encryption)``.
Row = tuple[str, int, str, str, "str | None", bool, bool, "str | None"]
_BOOLEANS = {"true": True, "false": False}
_FLAGS = frozenset(_BOOLEANS)
#: Rows checked a batch at a time.
BATCH = 10_000
#: Sizes, one a line, as S3 writes them; times the same (S3's form, in UTC).
_SIZES = re.compile(r"(?:(?:0|[1-9][0-9]*)\n)*")
_TIMES = re.compile(
    r"(?:[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3}|\.[0-9]{6})?Z\n)*")


def entries(rows: Iterable[Row]) -> list[str]:
    """The latest of ``rows`` as entries (:mod:`.entries`)."""
    return [SEPARATOR.join((key, str(size), etag, modified, version or "",
                            "true" if marker else "false", encryption or ""))
            for key, size, etag, modified, version, latest, marker, encryption in rows
            if latest]


class Scope:
    """Which keys are kept: under ``prefix``, not under ``exclude_prefix``; of those, the keys
    no URL can carry are counted in ``skipped`` (None: a new :class:`.Skipped`) and left out."""

    def __init__(self, prefix: str = "", exclude_prefix: str | None = None,
                 skipped: Skipped | None = None) -> None:
        self.prefix = prefix
        self.exclude_prefix = exclude_prefix
        self.skipped = skipped if skipped is not None else Skipped()

    def __contains__(self, key: str) -> bool:
        return in_scope(key, self.prefix, self.exclude_prefix)


class Fields:
    """Where the fields used are in a row of ``columns`` (names as :func:`column_name` makes
    them), and the ``bucket`` a row must name; Bucket, VersionId, IsLatest, IsDeleteMarker and
    EncryptionStatus may be absent."""

    def __init__(self, columns: Sequence[str], bucket: str) -> None:
        self.width = len(columns)
        self.bucket = bucket
        index = {name: position for position, name in enumerate(columns)}
        self.bucket_at = index.get("bucket")
        self.key = index["key"]
        self.size = index["size"]
        self.modified = index["lastmodifieddate"]
        self.etag = index["etag"]
        self.version = index.get(column_name("VersionId"))
        self.latest = index.get(column_name("IsLatest"))
        self.marker = index.get(column_name("IsDeleteMarker"))
        self.encryption = index.get(column_name("EncryptionStatus"))

    def csv_entries(self, rows: CsvRows, where: str, scope: Scope) -> Iterator[list[str]]:
        """The latest rows in ``scope`` of a CSV file, checked, as batches of entries: a batch
        of rows as S3 writes them is checked a column at a time (:meth:`_batch_entries`), any
        other by :meth:`csv_rows`, row by row, which names what is wrong.

        :raises InventoryError: a row breaks the schema (its number and what is wrong named).
        """
        number = 1
        for batch in rows.batches(BATCH, self.width):
            found = self._batch_entries(batch, scope)
            yield found if found is not None else entries(
                self.csv_rows(iter(batch), where, scope, number))
            number += len(batch)

    def _batch_entries(self, batch: list[list[str]], scope: Scope) -> list[str] | None:
        """The latest entries in ``scope`` of ``batch``, if its every row passes the checks of
        :meth:`csv_rows` and has S3's own forms (no delete marker, a time in UTC with a
        ``Z``); else None."""
        if set(map(len, batch)) != {self.width} or (
                self.bucket_at is not None
                and set(map(itemgetter(self.bucket_at), batch)) != {self.bucket}):
            return None
        keys = _decoded_keys(list(map(itemgetter(self.key), batch)))
        sizes, times, etags = (list(map(itemgetter(at), batch))
                               for at in (self.size, self.modified, self.etag))
        versions, encryptions = (list(map(itemgetter(at), batch)) if at is not None
                                 else ("",) * len(batch)
                                 for at in (self.version, self.encryption))
        if (keys is None or _SIZES.fullmatch("\n".join(sizes) + "\n") is None
                or _TIMES.fullmatch("\n".join(times) + "\n") is None or not all(etags)
                or not (text := "".join(etags) + "".join(versions)
                        + "".join(encryptions)).isprintable()
                or '"' in text or (self.marker is not None
                                   and set(map(itemgetter(self.marker), batch)) != {"false"})):
            return None
        try:
            deque(map(datetime.fromisoformat, times), 0)
        except ValueError:
            return None
        chosen = None
        if self.latest is not None:
            flags = list(map(itemgetter(self.latest), batch))
            if not set(flags) <= _FLAGS:
                return None
            if "false" in flags:
                chosen = list(map("true".__eq__, flags))
        if scope.prefix or scope.exclude_prefix or "/\n" in "\n".join(keys) + "\n":
            kept = [key in scope for key in keys]
            chosen = kept if chosen is None else list(map(and_, chosen, kept))
        found = map(SEPARATOR.join, zip(keys, sizes, etags, times, versions,
                                        ("false",) * len(batch), encryptions, strict=True))
        return list(found if chosen is None else compress(found, chosen))

    def csv_rows(self, rows: Iterable[list[str]], where: str, scope: Scope,
                 first: int = 1) -> Iterator[Row]:
        """The rows in ``scope`` of a CSV file, checked (a loop of its own: it runs once per
        object of the bucket).

        :param first: the number of the first of ``rows`` in its file.
        :raises InventoryError: a row breaks the schema (its number and what is wrong named).
        """
        width, key_at, size_at, modified_at = self.width, self.key, self.size, self.modified
        etag_at, version_at, latest_at, marker_at, encryption_at = (
            self.etag, self.version, self.latest, self.marker, self.encryption)
        prefix, excluded = scope.prefix, scope.exclude_prefix or None
        for number, row in enumerate(rows, first):
            if len(row) != width:
                raise _row_error(where, number, f"has {len(row)} fields, the fileSchema "
                                                f"names {width}")
            self._check_bucket(row, where, number)
            key = _decoded(row[key_at])
            if not in_scope(key, prefix, excluded):
                continue
            marker = marker_at is not None and _flag(row[marker_at], where, number)
            latest = latest_at is None or _flag(row[latest_at], where, number)
            if unpublishable(key) is not None:
                if latest:  # a key's other versions are not counted again
                    scope.skipped.key(key)
                continue
            text = row[size_at]
            if text.isdigit() and text.isascii():
                size = int(text)
            elif marker and not text:
                size = 0
            else:
                raise _row_error(where, number, f"has a bad size: {text[:30]!r}")
            etag = row[etag_at].strip('"')
            if not etag and not marker:
                raise _row_error(where, number, "has no ETag")
            version = row[version_at] or None if version_at is not None else None
            encryption = row[encryption_at] or None if encryption_at is not None else None
            _check_tokens(where, number, etag, version, encryption)
            yield (key, size, etag, _modified_text(row[modified_at], where, number), version,
                   latest, marker, encryption)

    def typed_rows(self, rows: Iterator[tuple[Any, ...]], where: str,
                   scope: Scope) -> Iterator[Row]:
        """The rows in ``scope`` of an ORC or Parquet file (``None`` for a null), checked."""
        for number, row in enumerate(rows, 1):
            self._check_bucket(row, where, number)
            key = row[self.key]
            if not isinstance(key, str):
                raise _row_error(where, number, "has no key")
            if key not in scope:
                continue
            marker = bool(self.marker is not None and row[self.marker])
            latest = self.latest is None or row[self.latest] is not False
            if unpublishable(key) is not None:
                if latest:  # a key's other versions are not counted again
                    scope.skipped.key(key)
                continue
            size, modified, etag = row[self.size], row[self.modified], row[self.etag]
            if marker:
                size, etag = size or 0, etag or ""
            if type(size) is not int or size < 0:
                raise _row_error(where, number, f"has a bad size: {size!r}")
            if not isinstance(modified, datetime):
                raise _row_error(where, number, f"has a bad LastModifiedDate: {modified!r}")
            if not isinstance(etag, str) or not (etag or marker):
                raise _row_error(where, number, "has no ETag")
            version, encryption = (_text(row[at]) if at is not None else None
                                   for at in (self.version, self.encryption))
            _check_tokens(where, number, etag, version, encryption)
            yield (key, size, etag.strip('"'),
                   (modified.replace(tzinfo=UTC) if modified.tzinfo is None
                    else modified.astimezone(UTC)).isoformat(), version, latest, marker,
                   encryption)

    def _check_bucket(self, row: Sequence[Any], where: str, number: int) -> None:
        """:raises InventoryError: ``row`` names another bucket than the one published."""
        if self.bucket_at is not None and row[self.bucket_at] != self.bucket:
            raise InventoryError(
                f"{where}, row {number} is of bucket {str(row[self.bucket_at])[:70]!r}, not "
                f"{self.bucket!r}, the bucket published: the data file is another bucket's; "
                f"publish from a report of {self.bucket!r}")


def _decoded_keys(encoded: Sequence[str]) -> list[str] | None:
    """CSV keys decoded and checked a batch at once (as :func:`_decoded` and
    :func:`.objects.unpublishable` would each); None where one of them fails."""
    text = "\n".join(encoded)
    if "%" in text:
        text = text.replace("%2F", "/")
    if "%" not in text:
        text = text.replace("+", " ")
    else:
        try:
            text = unquote_to_bytes(text.replace("+", " ")).decode("utf-8")
        except UnicodeDecodeError:
            return None
    keys = text.split("\n")
    return keys if len(keys) == len(encoded) and all(keys) and fit(text) else None


def _text(value: Any) -> str | None:
    """A typed row's optional text field: None where it is null or empty."""
    return value if isinstance(value, str) and value else None


def _check_tokens(where: str, number: int, *tokens: str | None) -> None:
    """An ETag, version or encryption status holding a control character is no S3 token (and
    breaks an entry)."""
    if any(token is not None and CONTROL.search(token) for token in tokens):
        raise _row_error(where, number, "has a control character in its ETag, VersionId or "
                                        "EncryptionStatus")


def _decoded(text: str) -> str:
    """A CSV key decoded (``%2F``, every ``/``, the fast way); bytes that are not UTF-8 become
    lone surrogates, which :func:`.objects.unpublishable` finds."""
    if "%" in text:
        text = text.replace("%2F", "/")
    if "%" not in text:
        return text.replace("+", " ")
    return unquote_to_bytes(text.replace("+", " ")).decode("utf-8", "surrogateescape")


def _modified_text(text: str, where: str, number: int) -> str:
    """S3's ``2026-11-24T12:00:00.000Z`` as it is (checked), any other W3C Datetime as ISO 8601
    in UTC."""
    try:
        if datetime.fromisoformat(text).tzinfo is UTC:
            return text
    except ValueError:
        pass
    try:
        return parse_datetime(text).isoformat()
    except InvalidValueError as exc:
        raise _row_error(where, number, f"has a bad LastModifiedDate: {exc}") from exc


def _flag(text: str, where: str, number: int) -> bool:
    flag = _BOOLEANS.get(text)
    if flag is None:
        flag = _BOOLEANS.get(text.strip().lower())
        if flag is None:
            raise _row_error(where, number, f"has {text[:20]!r} where true or false goes")
    return flag


def _row_error(where: str, number: int, what: str) -> InventoryError:
    return InventoryError(f"{where}, row {number} {what}; the data file breaks its manifest's "
                          "fileSchema: publish from a report S3 wrote")
