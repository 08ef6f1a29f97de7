"""Where an S3 Inventory report is read from: a bucket (through a boto3 client), or a local
directory holding the same keys (tests, the embedded default). One small interface, so the
report's code is the same over both."""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self

from ...errors import InventoryError, shown
from .s3errors import s3_errors

if TYPE_CHECKING:
    from botocore.response import StreamingBody
    from mypy_boto3_s3 import S3Client

__all__ = ["DirectoryReportReader", "ReportObject", "ReportReader", "S3ReportReader"]


class ReportObject(Protocol):
    """An object of a report, open to read (a file, or an S3 object's body)."""

    def read(self, size: int = -1, /) -> bytes: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None, /) -> None: ...


class ReportReader(Protocol):
    """Opens the objects of a report by key."""

    def open(self, key: str) -> ReportObject:
        """The object at ``key``, to read (the caller closes it).

        :raises InventoryError: it is missing or cannot be read (the key is named).
        """
        ...

    def where(self, key: str) -> str:
        """``key`` as a location for messages: ``s3://bucket/key``, or a path."""
        ...


class S3ReportReader:
    """The report's objects in ``bucket`` (the inventory's destination bucket)."""

    def __init__(self, client: S3Client, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    def open(self, key: str) -> ReportObject:
        with s3_errors("s3:GetObject", self.bucket, key):
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
        return _Body(body, self.bucket, key)

    def where(self, key: str) -> str:
        return f"s3://{self.bucket}/{shown(key)}"


class _Body:
    """An object's body whose reads fail as :class:`InventoryError` (a connection dropped
    mid-file: a re-run can help)."""

    def __init__(self, body: StreamingBody, bucket: str, key: str) -> None:
        self._body = body
        self._bucket = bucket
        self._key = key

    def read(self, size: int = -1) -> bytes:
        with s3_errors("s3:GetObject", self._bucket, self._key):
            return self._body.read(None if size < 0 else size)

    def close(self) -> None:
        self._body.close()

    def __enter__(self) -> _Body:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class DirectoryReportReader:
    """The report's objects as files under ``root``, a key's ``/`` a directory separator."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def open(self, key: str) -> ReportObject:
        if key.startswith("/") or any(part in ("", ".", "..") for part in key.split("/")):
            raise InventoryError(f"{self.where(key)}: not a relative key inside {self.root}; "
                                 "the manifest is not one S3 wrote")
        try:
            return (self.root / key).open("rb")
        except OSError as exc:
            raise InventoryError(f"{self.where(key)}: cannot be read ({exc.strerror}); check "
                                 "that the report was copied whole") from exc

    def where(self, key: str) -> str:
        return f"{self.root}/{shown(key)}"
