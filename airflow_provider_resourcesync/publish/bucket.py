"""Reading the objects a publication packages, pinned to what the inventory listed.

An inventory may be a day old (S3 Inventory reports are eventually consistent). A read is pinned
to the inventoried object: on S3 to its version (``VersionId``) where the inventory has one, else
to its ETag (``If-Match``); on a local disk to its change token (size and modification time, as
:mod:`.inventory.local` writes it). An object overwritten or deleted since is not read: the read
says so (None), and the publication leaves the object for the next run, which lists its new
state. What is published is described by the bytes read, never by the inventory's row.
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
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol, TypedDict

from botocore.exceptions import ClientError

from ..errors import PublishError
from ..storage.base import shown_key
from .inventory.local import change_token
from .inventory.s3errors import s3_errors

if TYPE_CHECKING:
    from botocore.response import StreamingBody
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import GetObjectOutputTypeDef

__all__ = ["Bucket", "LocalBucket", "Read", "S3Bucket"]

#: S3 error codes of an object that is no longer the one inventoried.
_MOVED_ON = frozenset({"PreconditionFailed", "NoSuchKey", "NoSuchVersion", "404", "412"})
_CHUNK = 1024 * 1024
_NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW
#: Folders a :class:`LocalBucket` keeps open.
_FOLDERS = 256


class Read(Iterator[bytes]):
    """An object's bytes, in chunks, and its media ``type``: the Content-Type S3 serves it
    with; for a file, what a web server would say from its name (None: unknown)."""

    __slots__ = ("_chunks", "type")

    def __init__(self, chunks: Iterator[bytes], type: str | None) -> None:
        self._chunks = chunks
        self.type = type

    def __next__(self) -> bytes:
        return next(self._chunks)


class Bucket(Protocol):
    """Where the objects to publish are read from."""

    def where(self, key: str) -> str:
        """The object at ``key``, named for a message."""
        ...

    def read(self, key: str, etag: str, version_id: str | None
             ) -> AbstractContextManager[Read | None]:
        """The inventoried object's bytes, in chunks, with its media type, or None if it has
        changed or gone since (the object is left for the next run).

        :raises PublishError: the object cannot be read (the message says why).
        """
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

    def read(self, key: str, etag: str, version_id: str | None = None) -> _PinnedFile:
        return _PinnedFile(self, key, etag)

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


class _PinnedFile:
    """A file of a :class:`LocalBucket` as a context: its chunks if it is still the file
    inventoried (its change token), else None; closed on exit. (A class: cheaper per file
    than a generator's context.)"""

    __slots__ = ("_bucket", "_etag", "_file", "_key")

    def __init__(self, bucket: LocalBucket, key: str, etag: str) -> None:
        self._bucket = bucket
        self._key = key
        self._etag = etag
        self._file: BinaryIO | None = None

    def __enter__(self) -> Read | None:
        descriptor = self._bucket._open(self._key)
        if descriptor is None:
            return None
        self._file = file = os.fdopen(descriptor, "rb")
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or change_token(info) != self._etag:
            return None
        return Read(iter(partial(file.read, _CHUNK), b""), mimetypes.guess_type(self._key)[0])

    def __exit__(self, *_: object) -> None:
        if self._file is not None:
            self._file.close()


def _close_all(descriptors: OrderedDict[str | None, int]) -> None:
    while descriptors:
        os.close(descriptors.popitem()[1])


class _Pin(TypedDict, total=False):
    """What a GET is pinned to: the version inventoried, else its ETag."""

    VersionId: str
    IfMatch: str


class S3Bucket:
    """Objects of ``bucket``, read through ``client`` (boto3's S3 client), streamed."""

    def __init__(self, client: S3Client, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    def where(self, key: str) -> str:
        return f"s3://{self.bucket}/{shown_key(key)[1:-1]}"

    @contextmanager
    def read(self, key: str, etag: str, version_id: str | None = None
             ) -> Iterator[Read | None]:
        pin: _Pin = {"VersionId": version_id} if version_id else {"IfMatch": f'"{etag}"'}
        action = "s3:GetObjectVersion" if version_id else "s3:GetObject"
        with s3_errors(action, self.bucket, key):
            try:
                got: GetObjectOutputTypeDef | None = self.client.get_object(
                    Bucket=self.bucket, Key=key, **pin)
            except ClientError as exc:
                if str(exc.response.get("Error", {}).get("Code")) not in _MOVED_ON:
                    raise
                got = None
        if got is None:
            yield None
            return
        body = got["Body"]
        try:
            yield Read(self._chunks(action, key, body), got.get("ContentType") or None)
        finally:
            body.close()

    def _chunks(self, action: str, key: str, body: StreamingBody) -> Iterator[bytes]:
        """``body`` in chunks, a broken transfer as :class:`InventoryError`."""
        with s3_errors(action, self.bucket, key):
            yield from body.iter_chunks(_CHUNK)
