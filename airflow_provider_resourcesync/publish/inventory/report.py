"""An S3 Inventory report as S3 delivers it: ``manifest.json`` (checked against
``manifest.checksum``), then its data files in CSV gzip, ORC or Parquet, each checked against the
size and MD5 the manifest gives.

A CSV file is parsed as it streams, in bounded memory (:mod:`.bounded`), and checked at its
end; an ORC or Parquet one is copied to a temporary file, checked, then read (those formats
need to seek). A report's rows come in no particular order: :meth:`InventoryReport.ordered`
sorts them on disk, so every data file is read and checked before the first object comes out.
"""

from __future__ import annotations

import csv
import gzip
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any, TypeVar

from ...errors import InventoryError
from .bounded import CsvRows
from .columnar import columnar_rows
from .manifest import Manifest, read_manifest
from .objects import InventoryObject
from .order import Ordered, ordered_entries
from .readers import ReportReader
from .rows import BATCH, Fields, Scope, entries
from .skipped import Skipped
from .verified import Verified

__all__ = ["InventoryReport", "read_report"]

_COPY = 1 << 20
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class InventoryReport:
    """A report of ``bucket`` whose manifest was read and checked; its objects are read on
    demand."""

    reader: ReportReader
    manifest: Manifest
    scope: Scope
    bucket: str

    @property
    def created(self) -> datetime:
        """The report's time: when S3 began scanning the bucket (UTC)."""
        return self.manifest.created

    def objects(self) -> Iterator[InventoryObject]:
        """Every row in scope, every version, in the order of the data files.

        :raises InventoryError: a data file is missing, truncated or corrupt, or a row breaks
            the schema or is of another bucket (the data file's key and the row are named).
        """
        return self.scope.skipped.counted((
            InventoryObject(key, size, etag, datetime.fromisoformat(modified), version, latest,
                            marker, encryption)
            for key, size, etag, modified, version, latest, marker, encryption
            in self._read(Fields.csv_rows, Fields.typed_rows)), self.manifest.where)

    def ordered(self) -> Ordered:
        """The latest version of each object in scope (a latest delete marker included), in
        key order, sorted on disk."""
        where = self.manifest.where
        return ordered_entries(self.scope.skipped.counted_batches(
            self._read(Fields.csv_entries, _typed_entries), where), where)

    def _read(self, csv_read: Callable[[Fields, CsvRows, str, Scope], Iterator[T]],
              typed_read: Callable[[Fields, Iterator[tuple[Any, ...]], str, Scope], Iterator[T]]
              ) -> Iterator[T]:
        """What ``csv_read`` or ``typed_read`` makes of each data file's rows, in turn."""
        fields = Fields(self.manifest.columns, self.bucket)
        for data_file in self.manifest.files:
            where = self.reader.where(data_file.key)
            with Verified(self.reader.open(data_file.key), where, data_file.size,
                          data_file.md5) as verified:
                if self.manifest.file_format == "CSV":
                    yield from _read_csv(verified, where, lambda rows, at: csv_read(
                        fields, rows, at, self.scope))
                    continue
                with tempfile.TemporaryFile() as copy:
                    shutil.copyfileobj(verified, copy, _COPY)
                    verified.check()
                    copy.seek(0)
                    rows = columnar_rows(copy, self.manifest.file_format,
                                         self.manifest.columns, where)
                    yield from typed_read(fields, rows, where, self.scope)


def _typed_entries(fields: Fields, rows: Iterator[tuple[Any, ...]], where: str,
                   scope: Scope) -> Iterator[list[str]]:
    checked = fields.typed_rows(rows, where, scope)
    while batch := entries(islice(checked, BATCH)):
        yield batch


def _read_csv(verified: Verified, where: str,
              read: Callable[[CsvRows, str], Iterator[T]]) -> Iterator[T]:
    """What ``read`` makes of the rows of ``verified`` (at ``where``, which it is given)."""
    try:
        yield from read(CsvRows(verified, where), where)
    except InventoryError as exc:
        if not exc.rerun_helps:  # a row's error: a truncated or replaced file says so first
            verified.check()
        raise
    except (EOFError, gzip.BadGzipFile, zlib.error, UnicodeDecodeError, csv.Error) as exc:
        verified.check()  # a truncated or replaced file says so first
        raise InventoryError(f"{where}: not a whole CSV gzip file ({exc}); publish from a "
                             "report S3 wrote") from exc
    verified.check()


def read_report(reader: ReportReader, manifest_key: str, prefix: str = "", *, bucket: str,
                exclude_prefix: str | None = None,
                skipped: Skipped | None = None) -> InventoryReport:
    """The report of ``bucket`` whose ``manifest.json`` is at ``manifest_key``.

    :param reader: where the report is (the inventory's destination bucket, or a directory).
    :param prefix: only keys under it are inventoried.
    :param bucket: the bucket published: the manifest's ``sourceBucket`` and each row's Bucket
        must be it.
    :param exclude_prefix: keys under it are left out (where the publication is written).
    :param skipped: counts the keys no URL can carry, which are left out (None: a new
        :class:`.Skipped`, with the default share); too many fail the report's reading.
    :raises InventoryError: the manifest is missing, fails its checksum, is not one S3 writes
        (unknown format, no Key, Size, LastModifiedDate or ETag column), or is another
        bucket's.
    """
    manifest = read_manifest(reader, manifest_key)
    if manifest.source_bucket != bucket:
        raise InventoryError(
            f"{manifest.where}: the report is of bucket {manifest.source_bucket[:70]!r} (its "
            f"sourceBucket), not {bucket!r}, the bucket published; give the manifest.json of "
            f"a report of {bucket!r}")
    return InventoryReport(reader, manifest, Scope(prefix, exclude_prefix, skipped), bucket)
