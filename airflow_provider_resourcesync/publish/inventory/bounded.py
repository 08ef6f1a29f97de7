"""A CSV gzip data file read in bounded memory, whatever it inflates to.

A small gzip can inflate to one line of hundreds of millions of fields (a 0.3 MB file, one row
of 300 M commas: 1.9 GiB as the list :mod:`csv` would build). So the inflated bytes are checked
as they stream, a chunk at a time: a line longer than :data:`MAX_ROW` bytes is refused before
:mod:`csv` sees it (S3 writes rows of a few hundred bytes; the longest, with the optional object
ACL field, tens of KiB). Each field is bounded by :mod:`csv`'s own limit (128 KiB), and rows are
handed over in batches of at most ``size`` rows and :data:`BATCH_BYTES` of text, a row of the
wrong width ending its batch (the row-by-row check then names it).
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterator
from itertools import islice
from typing import TYPE_CHECKING

from ...errors import InventoryError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

__all__ = ["BATCH_BYTES", "MAX_ROW", "CsvRows"]

#: The longest line of a data file, in bytes, inflated.
MAX_ROW = 128 * 1024
#: The inflated text a batch of rows holds at most (about).
BATCH_BYTES = 16 * 1024 * 1024
#: Rows read at a time into a batch, between checks of its text and width.
_STEP = 16


class CsvRows:
    """The rows of the CSV gzip ``file`` (at ``where``, for messages): iterated one by one, or
    in :meth:`batches`.

    :raises InventoryError: a line is longer than :data:`MAX_ROW` bytes (its number named).
    """

    def __init__(self, file: io.RawIOBase, where: str) -> None:
        self._inflated = _LineLimited(gzip.GzipFile(fileobj=file, mode="rb"), where)
        self._rows = csv.reader(io.TextIOWrapper(io.BufferedReader(self._inflated),
                                                 encoding="utf-8", newline=""), strict=True)

    def __iter__(self) -> Iterator[list[str]]:
        return self._rows

    def batches(self, size: int, width: int) -> Iterator[list[list[str]]]:
        """The rows in batches of at most ``size`` rows and about :data:`BATCH_BYTES` of text;
        a row that has not ``width`` fields ends its batch."""
        while True:
            start = self._inflated.count
            batch: list[list[str]] = []
            while len(batch) < size and self._inflated.count - start < BATCH_BYTES:
                step = list(islice(self._rows, min(_STEP, size - len(batch))))
                batch += step
                if len(step) < _STEP or set(map(len, step)) != {width}:
                    break
            if not batch:
                return
            yield batch


class _LineLimited(io.RawIOBase):
    """``inflated`` as a raw stream that counts its bytes and refuses a line longer than
    :data:`MAX_ROW` (read a chunk of at most that at a time, so only the line running across
    chunks needs checking)."""

    def __init__(self, inflated: gzip.GzipFile, where: str) -> None:
        self._inflated = inflated
        self._where = where
        self._line = 0  # bytes of the line running into the next chunk
        self._lines = 0
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer)
        data = self._inflated.read(min(len(view), MAX_ROW))
        first = data.find(b"\n")
        if first < 0:
            self._line += len(data)
        else:
            self._check(self._line + first)
            self._line = len(data) - data.rfind(b"\n") - 1
            self._lines += data.count(b"\n")
        self._check(self._line)
        self.count += len(data)
        view[: len(data)] = data
        return len(data)

    def _check(self, length: int) -> None:
        if length > MAX_ROW:
            raise InventoryError(
                f"{self._where}, row {self._lines + 1} is longer than {MAX_ROW:,} bytes (S3 "
                "writes rows of at most tens of KiB): the data file is not one S3 wrote; "
                "publish from a report S3 wrote")

    def close(self) -> None:
        self._inflated.close()
        super().close()
