"""Conditional GETs for documents: bodies kept on disk with their validators.

An unchanged document then costs one request answered 304 and is read again from disk; memory
does not grow with document size. Least recently used bodies are dropped past ``max_bytes``.

The bodies live in a work folder of the process's own (``workdirs.WorkDir``) under
``<temp dir>/resourcesync-cache.<user id>``: a run killed with up to ``max_bytes`` stored leaves
its folder to the next client, which removes it (and the ``resourcesync-cache-*`` folders that
earlier versions left right in the temp dir, once untouched for an hour).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from ..workdirs import WorkDir

__all__ = ["CachedDocument", "DocumentCache"]


@dataclass(frozen=True, slots=True)
class CachedDocument:
    """A stored body and the validators that came with it."""

    path: Path
    etag: str | None
    last_modified: str | None
    size: int


class DocumentCache:
    """Document bodies by URL, in a work folder of this process removed by :meth:`close`.

    :param max_bytes: total size kept; older bodies are dropped first.
    """

    def __init__(self, max_bytes: int = 2 * 1024 * 1024 * 1024) -> None:
        temp = Path(tempfile.gettempdir())
        self._work = WorkDir(temp / f"resourcesync-cache.{os.geteuid()}",
                             legacy=temp.glob("resourcesync-cache-*"))
        self._directory = self._work.path
        self._max_bytes = max_bytes
        self._entries: OrderedDict[str, CachedDocument] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def validators(self, url: str) -> dict[str, str]:
        """Conditional request headers for ``url`` (empty when nothing is stored)."""
        with self._lock:
            cached = self._entries.get(url)
        if cached is None:
            return {}
        headers = {}
        if cached.etag:
            headers["If-None-Match"] = cached.etag
        if cached.last_modified:
            headers["If-Modified-Since"] = cached.last_modified
        return headers

    def get(self, url: str) -> CachedDocument | None:
        with self._lock:
            cached = self._entries.get(url)
            if cached is not None:
                self._entries.move_to_end(url)
            return cached

    def new_file(self) -> Path:
        """A fresh file in the cache's directory, to stream a body into."""
        handle, name = tempfile.mkstemp(dir=self._directory, suffix=".part")
        os.close(handle)
        return Path(name)

    def store(self, url: str, body: Path, *, etag: str | None, last_modified: str | None
              ) -> CachedDocument:
        """Keep ``body`` (a file from :meth:`new_file`) as the document at ``url``."""
        path = self._directory / hashlib.sha256(url.encode()).hexdigest()
        os.replace(body, path)  # a reader holding the old file keeps reading it
        cached = CachedDocument(path, etag, last_modified, path.stat().st_size)
        with self._lock:
            old = self._entries.pop(url, None)
            self._size += cached.size - (old.size if old else 0)
            self._entries[url] = cached
            self._evict()
        return cached

    def _evict(self) -> None:
        while self._size > self._max_bytes and len(self._entries) > 1:
            _, oldest = self._entries.popitem(last=False)
            self._size -= oldest.size
            oldest.path.unlink(missing_ok=True)

    def close(self) -> None:
        """Remove every stored body."""
        with self._lock:
            self._entries.clear()
            self._size = 0
        self._work.close()
