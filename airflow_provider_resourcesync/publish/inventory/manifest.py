"""An S3 Inventory report's ``manifest.json``, read and checked.

S3 writes ``manifest.json`` and beside it ``manifest.checksum``, the MD5 of its bytes in hex;
the manifest names the ``sourceBucket`` (the bucket inventoried), the ``fileFormat`` (CSV, ORC
or Parquet), the ``fileSchema`` (the columns),
``creationTimestamp`` (milliseconds since the epoch: when S3 began scanning the bucket) and the
data ``files``, each with its ``key`` in the destination bucket, ``size`` and ``MD5checksum``.
Column names are compared without case and underscores: CSV's ``LastModifiedDate`` is ORC's and
Parquet's ``last_modified_date``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ...errors import InventoryError
from .readers import ReportReader

__all__ = ["FORMATS", "REQUIRED", "DataFile", "Manifest", "column_name", "read_manifest"]

#: The formats S3 writes, by the lower-case ``fileFormat``.
FORMATS = {"csv": "CSV", "orc": "ORC", "parquet": "Parquet"}
#: The columns a report must have to be published from: what identifies an object, and what
#: tells a change (size, ETag) and when it happened.
REQUIRED = ("Key", "Size", "LastModifiedDate", "ETag")
#: A manifest is small (one entry per data file); a larger one is not one S3 wrote.
MAX_MANIFEST = 64 * 1024 * 1024
_HEX32 = re.compile(r"[0-9a-fA-F]{32}")
#: Field names in a Parquet ``message`` (``optional int64 size;``) or an ORC ``struct<...>``.
_PARQUET_FIELD = re.compile(r"\b(?:required|optional|repeated)\s+\w+\s+(\w+)")
_ORC_FIELD = re.compile(r"[<,]\s*(\w+)\s*:")


@dataclass(frozen=True, slots=True)
class DataFile:
    """A data file of the report: its key in the destination bucket, size and MD5 (hex)."""

    key: str
    size: int
    md5: str


@dataclass(frozen=True, slots=True)
class Manifest:
    """What ``manifest.json`` says, checked.

    :param columns: the ``fileSchema``'s column names, as :func:`column_name` makes them.
    :param created: the report's time (``creationTimestamp``), in UTC.
    :param source_bucket: the bucket inventoried (``sourceBucket``).
    """

    key: str
    where: str
    file_format: str
    columns: tuple[str, ...]
    files: tuple[DataFile, ...]
    created: datetime
    source_bucket: str


def column_name(name: str) -> str:
    """A column's name as compared: lower case, no underscores."""
    return name.replace("_", "").strip().lower()


def read_manifest(reader: ReportReader, key: str) -> Manifest:
    """The manifest at ``key``, its checksum verified against ``manifest.checksum`` beside it.

    :raises InventoryError: either file is missing or unreadable, the checksum does not match,
        or the manifest is not one S3 writes (the field at fault is named).
    """
    where = reader.where(key)
    data = _read(reader, key, MAX_MANIFEST)
    checksum_key = key.rpartition("/")[0] + "/manifest.checksum" if "/" in key \
        else "manifest.checksum"
    try:
        expected = _read(reader, checksum_key, 1024).decode("ascii").strip().lower()
    except UnicodeDecodeError:
        expected = "not hexadecimal"
    actual = hashlib.md5(data).hexdigest()
    if actual != expected:
        raise InventoryError(f"{where}: MD5 {actual} does not match manifest.checksum "
                             f"({expected[:40]}): the manifest is corrupt or was replaced; "
                             "publish from a report whose files are whole")
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise InventoryError(f"{where}: not JSON ({exc}); publish from a report S3 wrote") \
            from exc
    return _manifest(document, key, where)


def _read(reader: ReportReader, key: str, cap: int) -> bytes:
    with reader.open(key) as body:
        data = body.read(cap + 1)
    if len(data) > cap:
        raise InventoryError(f"{reader.where(key)}: larger than {cap} bytes; not a manifest")
    return data


def _manifest(document: Any, key: str, where: str) -> Manifest:
    def field(name: str, kind: type) -> Any:
        value = document.get(name) if isinstance(document, dict) else None
        if not isinstance(value, kind):
            raise InventoryError(f"{where}: {name!r} is missing or not a {kind.__name__}; "
                                 "publish from a report S3 wrote")
        return value

    file_format = FORMATS.get(field("fileFormat", str).strip().lower())
    if file_format is None:
        raise InventoryError(f"{where}: unknown fileFormat {document['fileFormat'][:40]!r} "
                             "(CSV, ORC and Parquet are read); set the inventory's format to "
                             "one of them")
    columns = _columns(field("fileSchema", str), file_format)
    missing = [name for name in REQUIRED if column_name(name) not in columns]
    if "Key" in missing:
        raise InventoryError(f"{where}: its fileSchema has no Key column; it is not an object "
                             "inventory S3 wrote")
    if missing:
        raise InventoryError(f"{where}: its fileSchema has no {', '.join(missing)}; add them to "
                             "the inventory configuration's optional fields, and publish from "
                             "its next report")
    try:
        created = datetime.fromtimestamp(int(field("creationTimestamp", str)) / 1000, UTC)
    except (ValueError, OverflowError, OSError) as exc:
        raise InventoryError(f"{where}: creationTimestamp is not milliseconds since the epoch "
                             f"({exc})") from exc
    files = tuple(_data_file(entry, where) for entry in field("files", list))
    return Manifest(key, where, file_format, columns, files, created,
                    field("sourceBucket", str))


def _columns(schema: str, file_format: str) -> tuple[str, ...]:
    if file_format == "CSV":
        names = schema.split(",")
    else:
        names = (_PARQUET_FIELD if file_format == "Parquet" else _ORC_FIELD).findall(schema)
    return tuple(column_name(name) for name in names)


def _data_file(entry: Any, where: str) -> DataFile:
    if not isinstance(entry, dict):
        raise InventoryError(f"{where}: an entry of 'files' is not an object")
    key, size, md5 = entry.get("key"), entry.get("size"), entry.get("MD5checksum")
    if not (isinstance(key, str) and key and type(size) is int and size >= 0
            and isinstance(md5, str) and _HEX32.fullmatch(md5)):
        raise InventoryError(f"{where}: the 'files' entry {str(entry)[:200]} lacks a key, a "
                             "size or an MD5checksum of 32 hex digits")
    return DataFile(key, size, md5.lower())
