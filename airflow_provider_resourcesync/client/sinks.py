"""Where response bodies go: a document into the cache, a resource into the caller's file.

Both enforce a size cap while streaming; a resource is cut off the moment it passes its listed
``length``, and verified against its ``hash`` and ``length`` before the caller may use it.
Shared by the sync and the async client, which only differ in how they iterate a body.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

import httpx

from ..errors import ContentMismatchError, FetchError, UnsafeContentError
from ..protocol.hashes import Digester, Hashes, stored_digests
from ..protocol.model import Metadata
from .cache import CachedDocument, DocumentCache

__all__ = ["DocumentSink", "Download", "FetchedDocument", "Page", "PageSink", "ResourceSink",
           "response_fields"]


@dataclass(frozen=True, slots=True)
class FetchedDocument:
    """A document's body on disk. ``not_modified``: the server answered 304 (no body sent)."""

    url: str
    path: Path
    not_modified: bool
    content_type: str | None
    link_headers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Download:
    """A resource fetched. ``url``: where it came from (``loc`` or a mirror). ``verified``: its
    length or a hash was compared with the description (False: there was nothing to compare)."""

    url: str
    length: int
    verified: bool
    hashes: Hashes
    content_type: str | None
    etag: str | None
    last_modified: str | None


@dataclass(frozen=True, slots=True)
class Page:
    """A small response read whole, whatever its status (discovery reads pages and robots.txt)."""

    url: str
    status: int
    headers: httpx.Headers
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def response_fields(response: httpx.Response) -> dict[str, str]:
    """A response's header fields by lower-case name, read once: a name sent more than once
    has its values joined with ", " (as ``httpx.Headers.get`` joins them)."""
    fields: dict[str, str] = {}
    for name, value in response.headers.multi_items():
        fields[name] = f"{fields[name]}, {value}" if name in fields else value
    return fields


def _content_length(fields: Mapping[str, str]) -> int | None:
    """The ``Content-Length`` a response declares, if it is a number."""
    declared = fields.get("content-length")
    return int(declared) if declared is not None and declared.isdigit() else None


def _identity(fields: Mapping[str, str]) -> bool:
    """Whether the body comes as sent, with no content coding (which httpx decodes)."""
    return fields.get("content-encoding", "identity").strip().lower() == "identity"


class _CappedSink:
    """Counts a body against a cap, refusing early on a declared ``Content-Length``."""

    def __init__(self, url: str, max_bytes: int) -> None:
        self.url = url
        self._max_bytes = max_bytes
        self._count = 0
        self._declared: int | None = None

    def received(self) -> str:
        """How much of the body of the try that started last arrived, for an error."""
        if self._declared is None:
            return f"{self._count} bytes arrived"
        return f"{self._count} of {self._declared} bytes arrived"

    def _start(self, response: httpx.Response, fields: Mapping[str, str], ok: frozenset[int],
               tries: int) -> None:
        if response.status_code not in ok:
            raise FetchError(f"HTTP {response.status_code} {response.reason_phrase}",
                             url=self.url, status=response.status_code, tries=tries)
        declared = _content_length(fields)
        if declared is not None and declared > self._max_bytes:
            raise self._too_large(declared)
        self._count = 0
        # what the sink sees is counted against it only where no content coding changes it
        self._declared = declared if _identity(fields) else None

    def _counted(self, chunk: bytes) -> bytes:
        self._count += len(chunk)
        if self._count > self._max_bytes:
            raise self._too_large(self._count)
        return chunk

    def _too_large(self, size: int) -> UnsafeContentError:
        return UnsafeContentError(f"response of {size} bytes exceeds the cap of "
                                  f"{self._max_bytes} bytes", rule="response size cap",
                                  url=self.url)


class DocumentSink(_CappedSink):
    """Streams a document into the cache; a 304 hands back the stored body."""

    _OK = frozenset({200, 304})

    def __init__(self, cache: DocumentCache, url: str, max_bytes: int) -> None:
        super().__init__(url, max_bytes)
        self._cache = cache
        self._key = url  # stored under the URL asked for, wherever redirects led
        self._file: IO[bytes] | None = None
        self._path: Path | None = None
        self._response: httpx.Response | None = None

    def start(self, response: httpx.Response, fields: Mapping[str, str], url: str, tries: int
              ) -> None:
        self.url = url
        if response.status_code == 304 and self._cache.get(self._key) is None:
            raise FetchError("HTTP 304 for a document we do not hold", url=url, status=304,
                             tries=tries)
        self._start(response, fields, self._OK, tries)
        self._response = response
        if response.status_code == 200:
            self._path = self._cache.new_file()
            self._file = self._path.open("wb")

    def write(self, chunk: bytes) -> None:
        if self._file is not None:
            self._file.write(self._counted(chunk))

    def finish(self) -> FetchedDocument:
        response = self._response
        assert response is not None
        if self._file is None:  # 304: the stored body is current
            cached: CachedDocument | None = self._cache.get(self._key)
            assert cached is not None
            return self._fetched(cached.path, response, not_modified=True)
        self._file.close()
        assert self._path is not None
        stored = self._cache.store(self._key, self._path, etag=response.headers.get("ETag"),
                                   last_modified=response.headers.get("Last-Modified"))
        return self._fetched(stored.path, response, not_modified=False)

    def discard(self) -> None:
        """Drop a partial body (a failed try)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._path is not None:
            self._path.unlink(missing_ok=True)
            self._path = None

    def _fetched(self, path: Path, response: httpx.Response, *, not_modified: bool
                 ) -> FetchedDocument:
        return FetchedDocument(self.url, path, not_modified, response.headers.get("Content-Type"),
                               tuple(response.headers.get_list("Link")))


class ResourceSink(_CappedSink):
    """Streams a resource into ``dest`` (empty, seekable; rewound when a try wrote into it),
    verifying it."""

    _OK = frozenset({200})

    def __init__(self, dest: BinaryIO, expected: Metadata | None, max_bytes: int) -> None:
        super().__init__("", max_bytes)
        self._dest = dest
        self._expected = expected
        self._listed = expected.length if expected is not None else None
        self._algorithms = stored_digests(expected.hash if expected is not None else None)
        self._digester = Digester(self._algorithms)
        self._fields: Mapping[str, str] = {}

    def start(self, response: httpx.Response, fields: Mapping[str, str], url: str, tries: int
              ) -> None:
        self.url = url
        self._start(response, fields, self._OK, tries)
        self._fields = fields
        self.discard()
        if self._listed is not None and self._declared is not None and (
                self._declared > self._listed):
            raise self._longer(f"{self._declared} (its Content-Length; not read)")

    def write(self, chunk: bytes) -> None:
        # counted first: a retry starts afresh. A response's chunks are fresh objects each,
        # never refilled (h11 slices its buffer; httpx's decoders return new bytes).
        self._digester.update(self._counted(chunk), owned=True)
        if self._listed is not None and self._count > self._listed:
            raise self._longer(f"more: cut off at {self._count} bytes")
        self._dest.write(chunk)

    def _longer(self, actual: str) -> ContentMismatchError:
        """A body longer than the listed ``length``, refused before it is stored."""
        return ContentMismatchError(url=self.url, what="length", expected=str(self._listed),
                                    actual=actual)

    def finish(self) -> Download:
        expected = self._expected
        verified = self._digester.verify(self.url, hashes=expected.hash if expected else None,
                                         length=expected.length if expected else None)
        fields = self._fields
        return Download(self.url, self._digester.length, verified, self._digester.hashes(),
                        fields.get("content-type"), fields.get("etag"),
                        fields.get("last-modified"))

    def discard(self) -> None:
        """Forget what a try wrote (nothing to do before its first byte)."""
        if self._digester.length:
            self._dest.seek(0)
            self._dest.truncate()
            self._digester = Digester(self._algorithms)


class PageSink(_CappedSink):
    """Reads a small body into memory; any status is delivered (a 404 robots.txt is an answer)."""

    def __init__(self, url: str, max_bytes: int) -> None:
        super().__init__(url, max_bytes)
        self._chunks: list[bytes] = []
        self._response: httpx.Response | None = None

    def start(self, response: httpx.Response, fields: Mapping[str, str], url: str, tries: int
              ) -> None:
        self.url = url
        self._start(response, fields, frozenset({response.status_code}), tries)
        self._response = response
        self._chunks = []

    def write(self, chunk: bytes) -> None:
        self._chunks.append(self._counted(chunk))

    def finish(self) -> Page:
        assert self._response is not None
        return Page(self.url, self._response.status_code, self._response.headers,
                    b"".join(self._chunks))

    def discard(self) -> None:
        self._chunks = []
