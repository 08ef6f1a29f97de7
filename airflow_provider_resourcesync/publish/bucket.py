"""Reading the objects a publication packages, pinned to what the inventory listed.

An inventory may be a day old (S3 Inventory reports are eventually consistent). A read is pinned
to the inventoried object: on S3 to its version (``VersionId``) where the inventory has one, else
to its ETag (``If-Match``); on a local disk to its change token (size and modification time, as
:mod:`.inventory.local` writes it). An object overwritten or deleted since is not read: the read
says so (None), and the publication leaves the object for the next run, which lists its new
state. What is published is described by the bytes read, never by the inventory's row.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

from botocore.exceptions import ClientError

from ..errors import PublishError
from ..storage.base import shown_key
from .inventory.local import change_token
from .inventory.s3errors import s3_errors

__all__ = ["Bucket", "LocalBucket", "S3Bucket"]

#: S3 error codes of an object that is no longer the one inventoried.
_MOVED_ON = frozenset({"PreconditionFailed", "NoSuchKey", "NoSuchVersion", "404", "412"})
_CHUNK = 1024 * 1024


class Bucket(Protocol):
    """Where the objects to publish are read from."""

    def where(self, key: str) -> str:
        """The object at ``key``, named for a message."""
        ...

    def read(self, key: str, etag: str, version_id: str | None
             ) -> AbstractContextManager[Iterator[bytes] | None]:
        """The inventoried object's bytes, in chunks, or None if it has changed or gone
        since (the object is left for the next run).

        :raises PublishError: the object cannot be read (the message says why).
        """
        ...


class LocalBucket:
    """The regular files under ``root``, read without following a link anywhere on the way (a
    directory swapped for a link after the walk cannot lead the read outside ``root``)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def where(self, key: str) -> str:
        return f"the file {shown_key(key)} under {self.root}"

    @contextmanager
    def read(self, key: str, etag: str, version_id: str | None = None
             ) -> Iterator[Iterator[bytes] | None]:
        descriptor = self._open(key)
        if descriptor is None:
            yield None
            return
        with os.fdopen(descriptor, "rb") as file:
            info = os.fstat(file.fileno())
            same = stat.S_ISREG(info.st_mode) and change_token(info) == etag
            yield iter(lambda: file.read(_CHUNK), b"") if same else None

    def _open(self, key: str) -> int | None:
        """A descriptor of the file at ``key``, each folder opened below the one before with no
        link followed; None where something on the way is gone or is not what it was.

        :raises PublishError: the file cannot be read for another reason (permissions).
        """
        *folders, name = key.split("/")
        nofollow = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            current = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | nofollow)
        except OSError as exc:
            raise PublishError(f"the directory {self.root} cannot be read ({exc})") from exc
        try:
            for folder in folders:
                below = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=current)
                os.close(current)
                current = below
            return os.open(name, os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0),
                           dir_fd=current)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as exc:
            if exc.errno in (getattr(os, "ELOOP", -1), getattr(os, "EMLINK", -1)):
                return None  # a link where the walk saw a file or folder
            raise PublishError(f"{self.where(key)} cannot be read ({exc}); give the task "
                               "read access to the directory") from exc
        finally:
            os.close(current)


class S3Bucket:
    """Objects of ``bucket``, read through ``client`` (boto3's S3 client), streamed."""

    def __init__(self, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    def where(self, key: str) -> str:
        return f"s3://{self.bucket}/{shown_key(key)[1:-1]}"

    @contextmanager
    def read(self, key: str, etag: str, version_id: str | None = None
             ) -> Iterator[Iterator[bytes] | None]:
        pin = {"VersionId": version_id} if version_id else {"IfMatch": f'"{etag}"'}
        action = "s3:GetObjectVersion" if version_id else "s3:GetObject"
        with s3_errors(action, self.bucket, key):
            try:
                body = self.client.get_object(Bucket=self.bucket, Key=key, **pin)["Body"]
            except ClientError as exc:
                if str(exc.response.get("Error", {}).get("Code")) not in _MOVED_ON:
                    raise
                body = None
        if body is None:
            yield None
            return
        try:
            yield self._chunks(action, key, body)
        finally:
            body.close()

    def _chunks(self, action: str, key: str, body: Any) -> Iterator[bytes]:
        """``body`` in chunks, a broken transfer as :class:`InventoryError`."""
        with s3_errors(action, self.bucket, key):
            yield from body.iter_chunks(_CHUNK)
