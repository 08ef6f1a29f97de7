"""A data file of a report, read through a check of its size and MD5 against the manifest."""

from __future__ import annotations

import hashlib
import io
from typing import TYPE_CHECKING

from ...errors import InventoryError
from .readers import ReportObject

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

__all__ = ["Verified"]


class Verified(io.RawIOBase):
    """``body`` as a raw stream that counts and hashes what is read; :meth:`check` reads the
    rest and compares with what the manifest says.

    :param where: the data file, for the message.
    """

    def __init__(self, body: ReportObject, where: str, size: int, md5: str) -> None:
        self._body = body
        self._where = where
        self._size = size
        self._md5 = md5
        self._hash = hashlib.md5()
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer)
        data = self._body.read(len(view))
        self._hash.update(data)
        self.count += len(data)
        view[: len(data)] = data
        return len(data)

    def check(self) -> None:
        """Read to the end, then compare.

        :raises InventoryError: the size or the MD5 is not the manifest's (truncated, replaced
            or corrupt).
        """
        while self.read(1 << 20):
            pass
        if self.count != self._size:
            raise InventoryError(
                f"{self._where}: {self.count} bytes, the manifest says {self._size}: the data "
                "file is truncated or was replaced; publish from a report whose files are whole")
        if self._hash.hexdigest() != self._md5:
            raise InventoryError(
                f"{self._where}: MD5 {self._hash.hexdigest()}, the manifest says {self._md5}: "
                "the data file is corrupt or was replaced; publish from a report whose files "
                "are whole")

    def close(self) -> None:
        self._body.close()
        super().close()
