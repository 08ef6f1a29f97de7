"""Reading the objects a publication packages, as their URLs serve them now.

An inventory may be a day old (S3 Inventory reports are eventually consistent), and an object
may have been written again since: a status file rewritten daily always has. A read takes the
object as it is now, the latest version on a versioned bucket (what a URL serves), never the
inventory's version or ETag, and says what it read: its change token (its ETag; a file's size
and modification time, as :mod:`.inventory.local` writes it), length, LastModified and media
type. What is published is described by the bytes read, never by the inventory's row. An
object deleted since is not read (None): the publication leaves it for the next run, whose
inventory no longer lists it.
"""

from __future__ import annotations

import errno
import mimetypes
import os
import stat
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

from botocore.exceptions import ClientError

from ..errors import PublishError
from ..storage.base import shown_key
from .inventory.local import change_token, last_modified
from .inventory.s3errors import s3_errors

if TYPE_CHECKING:
    from botocore.response import StreamingBody
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import GetObjectOutputTypeDef

__all__ = ["Bucket", "LocalBucket", "Read", "S3Bucket"]

#: S3 error codes of an object deleted since the inventory.
_GONE = frozenset({"NoSuchKey", "404"})
_CHUNK = 1024 * 1024
_NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW
#: Folders a :class:`LocalBucket` keeps open.
_FOLDERS = 256


class Read(Iterator[bytes]):
    """An object's bytes, in chunks, and what was read: its media ``type`` (the Content-Type S3
    serves it with; for a file, what a web server would say from its name; None: unknown), its
    ``etag`` (the inventory's kind of change token), ``length`` and ``modified`` time (UTC)."""

    __slots__ = ("_chunks", "etag", "length", "modified", "type")

    def __init__(self, chunks: Iterator[bytes], type: str | None, etag: str, length: int,
                 modified: datetime) -> None:
        self._chunks = chunks
        self.type = type
        self.etag = etag
        self.length = length
        self.modified = modified

    def __next__(self) -> bytes:
        return next(self._chunks)

    def lastmod(self, size: int, etag: str, modified: datetime | None) -> datetime:
        """The ``lastmod`` of what was read: ``modified``, the LastModified of the object an
        inventory listed with ``size`` and ``etag``, if this is that object (a report's or a
        walk's finer time); else (written again since, or no time given) its own."""
        if modified is not None and (self.length, self.etag) == (size, etag):
            return modified
        return self.modified


class Bucket(Protocol):
    """Where the objects to publish are read from."""

    def where(self, key: str) -> str:
        """The object at ``key``, named for a message."""
        ...

    def read(self, key: str) -> AbstractContextManager[Read | None]:
        """The object's bytes as they are now, in chunks, with what was read, or None if it is
        gone (the object is left for the next run).

        :raises PublishError: the object cannot be read (the message says why).
        """
        ...

    def type_of(self, key: str) -> str | None:
        """The media type the object at ``key`` is served with, where it is known without
        reading it (a first run reads nothing); None where it is not: never a guess."""
        ...


class LocalBucket:
    """The regular files under ``root``, read without following a link anywhere on the way (a
    directory swapped for a link after the walk cannot lead the read outside ``root``).

    The folders walked to are kept open (the last :data:`_FOLDERS` of them, closed with the
    bucket), so a file next to one read before costs one ``open``, not one per folder.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        # folder (None: the root) -> descriptor, the least recently used first
        self._folders: OrderedDict[str | None, int] = OrderedDict()
        self._lock = threading.Lock()  # no descriptor closed while another read uses it
        weakref.finalize(self, _close_all, self._folders)

    def where(self, key: str) -> str:
        return f"the file {shown_key(key)} under {self.root}"

    def read(self, key: str) -> _OpenFile:
        return _OpenFile(self, key)

    def type_of(self, key: str) -> str | None:
        """A file's, by its name (as a server of the folder maps names to types)."""
        return mimetypes.guess_type(key)[0]

    def _open(self, key: str) -> int | None:
        """A descriptor of the file at ``key``, each folder opened below the one before with no
        link followed; None where something on the way is gone or is not what it was.

        :raises PublishError: the file cannot be read for another reason (permissions).
        """
        folder, slash, name = key.rpartition("/")
        try:
            with self._lock:
                return os.open(name, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0),
                               dir_fd=self._folder(folder if slash else None))
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):  # O_NOFOLLOW's refusals
                return None  # a link where the walk saw a file or folder
            raise PublishError(f"{self.where(key)} cannot be read ({exc}); give the task "
                               "read access to the directory") from exc

    def _folder(self, folder: str | None) -> int:
        """A descriptor of ``folder`` (``a/b``; None: the root), kept open."""
        descriptor = self._folders.get(folder)
        if descriptor is not None:
            self._folders.move_to_end(folder)
            return descriptor
        try:
            descriptor = os.open(self.root, _FOLDER)
        except OSError as exc:
            raise PublishError(f"the directory {self.root} cannot be read ({exc})") from exc
        try:
            for name in folder.split("/") if folder is not None else ():
                below = os.open(name, _FOLDER, dir_fd=descriptor)
                os.close(descriptor)
                descriptor = below
        except BaseException:
            os.close(descriptor)
            raise
        self._folders[folder] = descriptor
        if len(self._folders) > _FOLDERS:
            os.close(self._folders.popitem(last=False)[1])
        return descriptor


class _OpenFile:
    """A file of a :class:`LocalBucket` as a context: its chunks if it is a regular file, else
    None; closed on exit. (A class: cheaper per file than a generator's context.)"""

    __slots__ = ("_bucket", "_file", "_key")

    def __init__(self, bucket: LocalBucket, key: str) -> None:
        self._bucket = bucket
        self._key = key
        self._file: BinaryIO | None = None

    def __enter__(self) -> Read | None:
        descriptor = self._bucket._open(self._key)
        if descriptor is None:
            return None
        self._file = file = os.fdopen(descriptor, "rb")
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            return None
        return Read(iter(partial(file.read, _CHUNK), b""), self._bucket.type_of(self._key),
                    change_token(info), info.st_size, last_modified(info))

    def __exit__(self, *_: object) -> None:
        if self._file is not None:
            self._file.close()


def _close_all(descriptors: OrderedDict[str | None, int]) -> None:
    while descriptors:
        os.close(descriptors.popitem()[1])


class S3Bucket:
    """Objects of ``bucket``, read through ``client`` (boto3's S3 client), streamed."""

    def __init__(self, client: S3Client, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    def where(self, key: str) -> str:
        return f"s3://{self.bucket}/{shown_key(key)[1:-1]}"

    def type_of(self, key: str) -> str | None:
        """Unknown: an object's Content-Type is its own, and neither a listing nor an
        inventory report carries it."""
        return None

    @contextmanager
    def read(self, key: str) -> Iterator[Read | None]:
        action = "s3:GetObject"
        with s3_errors(action, self.bucket, key):
            try:
                got: GetObjectOutputTypeDef | None = self.client.get_object(
                    Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if str(exc.response.get("Error", {}).get("Code")) not in _GONE:
                    raise
                got = None
        if got is None:
            yield None
            return
        body = got["Body"]
        try:
            yield Read(self._chunks(action, key, body), got.get("ContentType") or None,
                       got.get("ETag", "").strip('"'), got["ContentLength"],
                       got["LastModified"].astimezone(UTC))
        finally:
            body.close()

    def _chunks(self, action: str, key: str, body: StreamingBody) -> Iterator[bytes]:
        """``body`` in chunks, a broken transfer as :class:`InventoryError`."""
        with s3_errors(action, self.bucket, key):
            yield from body.iter_chunks(_CHUNK)
