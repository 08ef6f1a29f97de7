"""A destination in S3: objects under a prefix of a bucket, through a boto3 client the caller built.

A write is staged in a local temporary file and uploaded on commit: a single PUT below
``multipart_threshold``, a multipart upload (smart-open) above it; either way S3 shows the object
whole or not at all, and a failed multipart upload is aborted. The :class:`ObjectInfo` travels as
user metadata (``x-amz-meta-uri``, ``-length``, ``-hash``, ``-lastmod``, ``-type``), the type as
``Content-Type`` and the cache lifetime as ``Cache-Control``, which S3 serves with the object.
S3 limits keys to 1024 bytes and user metadata to 2 KB: a key or a URI too long for them is
refused with :class:`UnstorableKeyError` (a re-run cannot help).

A killed run leaves its multipart upload incomplete: invisible, but billed. Before its first
write, a destination aborts the incomplete uploads under its prefix that were started more than
``stale_upload_after`` ago, by the server's clock (a run still uploading is younger than that).

Every error from botocore becomes a :class:`DestinationError` naming the bucket, the key and the
error code.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, BinaryIO, TypedDict
from urllib.parse import quote, unquote

import smart_open.s3
from botocore.exceptions import BotoCoreError, ClientError

from ..errors import DestinationError, UnstorableKeyError
from ..protocol.datetimes import format_datetime, parse_datetime
from ..protocol.hashes import Hashes
from .base import Destination, ObjectInfo, Staged, shown_key
from .keys import RESERVED_PREFIX
from .local import key_segments

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import (
        CopySourceTypeDef,
        HeadObjectOutputTypeDef,
        ListMultipartUploadsOutputTypeDef,
        MultipartUploadTypeDef,
    )

__all__ = ["STALE_UPLOAD_AFTER", "S3Destination"]

_log = logging.getLogger(__name__)
_MIB = 1024 * 1024
#: S3's limits: parts of 5 MiB at least (the last excepted), 10,000 parts, 2 KB of metadata,
#: keys of 1024 bytes (UTF-8).
_MIN_PART_SIZE = 5 * _MIB
_MAX_PARTS = 10_000
_MAX_METADATA = 2048
_MAX_KEY = 1024
#: An incomplete multipart upload older than this was left by a killed run (the default).
STALE_UPLOAD_AFTER = timedelta(minutes=15)
#: Printable ASCII but ``%`` passes as it is in ``x-amz-meta-uri``; the rest is percent-encoded.
_URI_SAFE = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) != "%")
_NOT_FOUND = frozenset({"404", "NoSuchKey", "NotFound"})
_BINARY = "application/octet-stream"


class S3Destination(Destination):
    """Objects under ``prefix`` in ``bucket``.

    :param client: a boto3 S3 client (the Airflow hook builds it from the user's connection).
    :param bucket: the bucket's name.
    :param prefix: the key prefix of the mirror; a ``/`` is added if it lacks one.
    :param multipart_threshold: objects of this size or more go up as multipart uploads.
    :param part_size: the size of each part (at least 5 MiB; more for objects over 10,000 parts).
    :param page_size: keys asked for per listing request.
    :param stale_upload_after: incomplete multipart uploads under ``prefix`` started longer ago
        than this (by the server's clock) are aborted before the first write: a killed run left
        them. Longer than any upload of a live run takes.
    """

    def __init__(self, client: S3Client, bucket: str, prefix: str = "", *,
                 multipart_threshold: int = 8 * _MIB, part_size: int = 8 * _MIB,
                 page_size: int = 1000,
                 stale_upload_after: timedelta = STALE_UPLOAD_AFTER) -> None:
        if not bucket or "/" in bucket:
            raise DestinationError(f"{bucket!r} is not a bucket name")
        prefix = prefix.lstrip("/")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        if prefix:
            key_segments(prefix[:-1])
        self.client = client
        self.bucket = bucket
        self.prefix = prefix
        self.url = f"s3://{bucket}/{prefix}"
        self._multipart_threshold = multipart_threshold
        self._part_size = max(part_size, _MIN_PART_SIZE)
        self._page_size = page_size
        self._stale_upload_after = stale_upload_after
        self._swept = False
        self._sweeping = threading.Lock()

    def _key(self, key: str) -> str:
        key_segments(key)
        full = self.prefix + key
        if len(full.encode("utf-8", "surrogatepass")) > _MAX_KEY:
            raise UnstorableKeyError(
                f"{self._where(key)}: S3 keys are at most {_MAX_KEY} bytes (UTF-8) "
                "and this one, with the prefix, is longer; choose a shorter prefix, or map the "
                "URIs to shorter keys (key_prefixes)")
        return full

    def _where(self, key: str) -> str:
        return f"{self.url} key {shown_key(key)}"

    @contextmanager
    def _errors(self, action: str, key: str) -> Iterator[None]:
        """botocore's errors (and smart-open's wrapping of them) as :class:`DestinationError`."""
        try:
            yield
        except ClientError as exc:
            raise self._error(action, key, exc) from exc
        except (BotoCoreError, ValueError, OSError) as exc:
            cause = exc.__cause__
            if isinstance(cause, ClientError):
                raise self._error(action, key, cause) from exc
            raise DestinationError(f"{self._where(key)}: {action} failed: {exc}") from exc

    def _error(self, action: str, key: str, exc: ClientError) -> DestinationError:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "unknown"))
        message = error.get("Message") or exc
        kind = _Missing if code in _NOT_FOUND else DestinationError
        return kind(f"{self._where(key)}: {action} failed: {code} ({message}) in bucket "
                    f"{self.bucket!r}")

    # -- writing ---------------------------------------------------------------------------------

    def stage(self, key: str) -> Staged:
        self._key(key)
        return _S3Staged(self, key)

    def _upload(self, key: str, file: BinaryIO, info: ObjectInfo) -> None:
        metadata = _metadata(info)
        size = sum(len(name) + len(value) for name, value in metadata.items())
        if size > _MAX_METADATA:
            raise UnstorableKeyError(
                f"{self._where(key)}: the description of {shown_key(info.uri)} needs {size} bytes "
                f"of metadata, more than S3's {_MAX_METADATA}; mirror this Source to a local "
                "destination, which has no such limit")
        self._abort_stale_uploads()
        length = file.seek(0, 2)
        file.seek(0)
        extra: _Described = {"Metadata": metadata, "ContentType": info.type or _BINARY,
                             **_cached(info.cache_control)}
        with self._errors("upload", key):
            if length < self._multipart_threshold:
                self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=file,
                                       **extra)
                return
            part_size = max(self._part_size, -(-length // _MAX_PARTS))
            with tempfile.TemporaryFile() as buffer:
                self._multipart(key, file, buffer, part_size, extra)

    def _multipart(self, key: str, file: BinaryIO, buffer: BinaryIO, part_size: int,
                   extra: _Described) -> None:
        """Upload ``file`` in parts, buffered in ``buffer`` (a file: memory stays flat).

        smart_open.s3's writer, not smart_open.open: no compression guessed from the key's
        extension, no credentials or versionId parsed out of it. The writer aborts the upload
        when its ``with`` block fails, but not when ``close()`` does (the last part goes up
        there), so the abort is ours. An abort that fails too leaves an incomplete upload,
        invisible as an object (a bucket lifecycle rule AbortIncompleteMultipartUpload reclaims
        it).
        """
        upload = smart_open.s3.MultipartWriter(
            self.bucket, self._key(key), part_size=part_size, client=self.client,
            client_kwargs={"S3.Client.create_multipart_upload": extra},
            # smart_open documents any seekable binary file as the buffer; it annotates BytesIO
            writebuffer=buffer)  # type: ignore[arg-type]
        try:
            shutil.copyfileobj(file, upload, _MIB)
            upload.close()
        except BaseException:
            with suppress(ClientError, BotoCoreError):
                upload.terminate()
            raise

    def _abort_stale_uploads(self) -> None:
        """Once, before the first write: abort the incomplete multipart uploads under the prefix
        started more than ``stale_upload_after`` ago by the server's clock (the ``Date`` of the
        listing's answer), so a local clock that is off cannot abort a live run's upload."""
        with self._sweeping:
            if self._swept:
                return
            self._swept = True
            try:
                stale = list(self._stale_uploads())
            except (ClientError, BotoCoreError) as exc:
                _log.warning("Cannot list the incomplete multipart uploads under %s (%s): those "
                             "of killed runs stay until a bucket lifecycle rule "
                             "(AbortIncompleteMultipartUpload) removes them", self.url, exc)
                return
            aborted = 0
            for upload in stale:
                try:
                    self.client.abort_multipart_upload(Bucket=self.bucket, Key=upload["Key"],
                                                       UploadId=upload["UploadId"])
                    aborted += 1
                except (ClientError, BotoCoreError) as exc:
                    _log.warning("Cannot abort the incomplete multipart upload of s3://%s/%s: %s",
                                 self.bucket, shown_key(upload["Key"]), exc)
            if stale:
                _log.info("Aborted %d incomplete multipart upload(s) of killed runs under %s , "
                          "started more than %s before the server's time", aborted, self.url,
                          self._stale_upload_after)

    def _stale_uploads(self) -> Iterator[MultipartUploadTypeDef]:
        paginator = self.client.get_paginator("list_multipart_uploads")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix,
                                       PaginationConfig={"PageSize": self._page_size}):
            now = _server_time(page)
            if now is None:
                _log.warning("The answer listing the incomplete multipart uploads under %s has "
                             "no readable Date: none is aborted", self.url)
                return
            yield from (upload for upload in page.get("Uploads", ())
                        if upload["Initiated"] < now - self._stale_upload_after)

    def write_bytes(self, key: str, data: bytes, content_type: str, *,
                    cache_control: str | None = None) -> None:
        self._abort_stale_uploads()
        with self._errors("write", key):
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data,
                                   ContentType=content_type, **_cached(cache_control))

    # -- reading ---------------------------------------------------------------------------------

    def info(self, key: str) -> ObjectInfo | None:
        head = self._head(key)
        if head is None:
            return None
        info = _info(head.get("Metadata", {}), f"{self._where(key)}")
        cache_control = head.get("CacheControl")
        return replace(info, cache_control=cache_control) if info and cache_control else info

    def _head(self, key: str) -> HeadObjectOutputTypeDef | None:
        """The object's headers; None if there is none (S3 answers a HEAD in a missing bucket
        with a bare 404 too: the first GET or PUT names the bucket)."""
        try:
            with self._errors("head", key):
                return self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except _Missing:
            return None

    def exists(self, key: str) -> bool:
        return self._head(key) is not None

    def open(self, key: str) -> BinaryIO:
        with self._errors("read", key):
            body = self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
        # botocore's StreamingBody is an io.IOBase of bytes (read, close, with) as BinaryIO's
        # readers here use it; its stubs do not derive it from BinaryIO
        return body  # type: ignore[return-value]

    def read_bytes(self, key: str) -> bytes | None:
        """A small object whole, in one request; None if there is none."""
        try:
            with self.open(key) as body, self._errors("read", key):
                return body.read()
        except _Missing:
            return None

    def keys(self, prefix: str = "") -> Iterator[str]:
        paginator = self.client.get_paginator("list_objects_v2")
        pages = paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix,
                                   PaginationConfig={"PageSize": self._page_size})
        reserved = prefix.startswith(RESERVED_PREFIX)
        with self._errors("list", prefix):
            for page in pages:
                for item in page.get("Contents", ()):
                    key = item["Key"][len(self.prefix):]
                    if reserved or not key.startswith(RESERVED_PREFIX):
                        yield key

    def object_url(self, key: str) -> str:
        return f"s3://{self.bucket}/{self._key(key)}"

    # -- changing --------------------------------------------------------------------------------

    def delete(self, key: str) -> None:
        with self._errors("delete", key):
            self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def move(self, key: str, to_key: str) -> None:
        """Copy (with the metadata) then delete; objects up to S3's 5 GB copy limit."""
        source: CopySourceTypeDef = {"Bucket": self.bucket, "Key": self._key(key)}
        self._abort_stale_uploads()
        with self._errors(f"copy to {shown_key(to_key)}", key):
            self.client.copy_object(Bucket=self.bucket, Key=self._key(to_key),
                                    CopySource=source, MetadataDirective="COPY")
        self.delete(key)


class _S3Staged(Staged):
    """A local temporary file, uploaded on commit."""

    def __init__(self, destination: S3Destination, key: str) -> None:
        super().__init__(key, tempfile.TemporaryFile())  # noqa: SIM115 - closed by close()
        self._destination = destination

    def _publish(self, info: ObjectInfo) -> None:
        if self.committed:
            raise DestinationError(f"the staged object at {self.key!r} was already committed")
        self.file.flush()
        self._destination._upload(self.key, self.file, info)

    def close(self) -> None:
        self.file.close()


def _server_time(answer: ListMultipartUploadsOutputTypeDef) -> datetime | None:
    """The server's clock when it answered (the ``Date`` header); None without one."""
    date = answer.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    if date is None:
        return None
    try:
        when = parsedate_to_datetime(date)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


class _Cached(TypedDict, total=False):
    """The cache lifetime an object is uploaded with, if it has one."""

    CacheControl: str


class _Described(_Cached):
    """What an object is uploaded with: its description (:func:`_metadata`), type and cache
    lifetime."""

    Metadata: dict[str, str]
    ContentType: str


def _cached(cache_control: str | None) -> _Cached:
    return {"CacheControl": cache_control} if cache_control is not None else {}


class _Missing(DestinationError):
    """S3 has no object at the key."""


def _metadata(info: ObjectInfo) -> dict[str, str]:
    """The description as ``x-amz-meta-*`` values: ASCII, the URI percent-encoded."""
    metadata = {"uri": quote(info.uri, safe=_URI_SAFE), "length": str(info.length),
                "hash": quote(str(info.hashes), safe=_URI_SAFE)}
    if info.lastmod is not None:
        metadata["lastmod"] = format_datetime(info.lastmod)
    if info.type is not None:
        metadata["type"] = quote(info.type, safe=_URI_SAFE)
    return metadata


def _info(metadata: dict[str, str], url: str) -> ObjectInfo | None:
    """The description read back; None for an object written without one."""
    if "uri" not in metadata or "length" not in metadata:
        return None
    try:
        return ObjectInfo(
            uri=unquote(metadata["uri"]), length=int(metadata["length"]),
            hashes=Hashes.parse(unquote(metadata.get("hash", ""))),
            lastmod=parse_datetime(metadata["lastmod"]) if "lastmod" in metadata else None,
            type=unquote(metadata["type"]) if "type" in metadata else None,
        )
    except ValueError as exc:
        raise DestinationError(f"{url} : the object's metadata is not readable: {exc}") from exc
