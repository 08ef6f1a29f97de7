"""What a destination is: objects under keys, written atomically, with their description.

A write is staged (a seekable local file the download streams into, rewound on each retry) and
becomes visible only on :meth:`Staged.commit`, all at once: a reader sees the old object or the new
one, never part of one, and a failed or mismatched fetch never replaces good data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO

from ..errors import SHOWN
from ..protocol.closing import ClosedOnExit
from ..protocol.hashes import Hashes

__all__ = ["Destination", "ObjectInfo", "Staged", "shown_key"]

def shown_key(key: str) -> str:
    """``key`` quoted for an error message, cut if very long (:func:`~..errors.shown`)."""
    return repr(key) if len(key) <= SHOWN else f"{key[:SHOWN]!r}... ({len(key)} characters)"


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """What travels with each object: where it came from and what it is; and how long a cache
    may keep it, the ``Cache-Control`` it is served with where the destination serves headers
    (S3; a local folder's web server sets its own: docs/publishing.md, "Caches")."""

    uri: str
    length: int
    hashes: Hashes
    lastmod: datetime | None = None
    type: str | None = None
    cache_control: str | None = None


class Staged(ClosedOnExit):
    """An object being written: fill :attr:`file` (binary, seekable, not necessarily readable),
    then :meth:`commit`; closing without a commit discards it."""

    def __init__(self, key: str, file: BinaryIO) -> None:
        self.key = key
        self.file = file
        self.committed = False

    def commit(self, info: ObjectInfo) -> None:
        """Make the staged bytes the object at :attr:`key`, atomically, with ``info``."""
        self._publish(info)
        self.committed = True

    @abstractmethod
    def _publish(self, info: ObjectInfo) -> None: ...

    @abstractmethod
    def close(self) -> None:
        """Discard what was not committed and release the staging file."""


class Destination(ABC):
    """Where a mirror lives: a local directory or an S3 prefix."""

    #: A URL naming the destination (``file:///...``, ``s3://bucket/prefix/``), for logs and XCom.
    url: str

    @abstractmethod
    def stage(self, key: str) -> Staged:
        """Start writing the object at ``key``."""

    @abstractmethod
    def info(self, key: str) -> ObjectInfo | None:
        """The description stored with the object at ``key``; None if there is none."""

    @abstractmethod
    def open(self, key: str) -> BinaryIO:
        """Read the object at ``key``.

        :raises DestinationError: if there is none.
        """

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove the object at ``key`` (and its description); nothing if there is none."""

    @abstractmethod
    def move(self, key: str, to_key: str) -> None:
        """Move the object at ``key`` (and its description) to ``to_key``."""

    @abstractmethod
    def keys(self, prefix: str = "") -> Iterator[str]:
        """Every key under ``prefix``, the mirror's own reserved keys excluded unless asked for."""

    @abstractmethod
    def object_url(self, key: str) -> str:
        """The URL of the object at ``key`` (``file://`` or ``s3://``)."""

    def read_bytes(self, key: str) -> bytes | None:
        """A small object whole (the mirror's own documents); None if there is none."""
        if not self.exists(key):
            return None
        with self.open(key) as stream:
            return stream.read()

    @abstractmethod
    def exists(self, key: str) -> bool:
        """Whether there is an object at ``key``."""

    @abstractmethod
    def write_bytes(self, key: str, data: bytes, content_type: str, *,
                    cache_control: str | None = None) -> None:
        """Write a small object whole, atomically (the mirror's own documents), to be served
        with ``cache_control`` where the destination serves headers (as
        :attr:`ObjectInfo.cache_control`)."""
