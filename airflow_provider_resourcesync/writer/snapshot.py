"""The snapshot: the mirror's Resource List (10.1), split into parts under an index past 50,000
entries (10.2), read and written as stored rows of the record store.

Each write names its parts anew, ``resourcelist-<UTC time>-<random>-NNNNN.xml``, so no part the
index still lists is written over: a write killed part way leaves the old Resource List whole.
(A part rewritten in place would put the new snapshot under the old index, and an entry pushed
from one part into the next would be read by nobody.) Parts the new index does not list are
deleted after it is written.

Each entry of the mirror's has as ``loc`` the object's URL at the destination (or under the
public base URL, to republish it), ``lastmod`` when the mirror's copy last changed, ``rs:md`` its
hash, length and type, and an ``rs:ln rel="via"`` to the origin URI with the origin's hash,
length and ``modified`` (14.8). A collection served apart from its documents (a publisher's)
has as ``loc`` the object's URI and as ``lastmod`` the object's, with no ``via`` link. The
object's key travels in a ``mirror:key`` attribute of ``rs:md`` (:data:`.documents.NAMESPACE`).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from ..errors import DocumentError, UnsafeContentError
from ..protocol.datetimes import as_datetime, micros
from ..protocol.model import DocumentKind, Entry, Head, Link, Metadata
from ..storage.keys import RESERVED_PREFIX, normalized
from .documents import CAPABILITY_LIST, KEY, NAMESPACE, RESOURCE_LIST, Documents, name_of
from .record import ObjectRecord
from .records import record_of

__all__ = ["Snapshot", "stored_row"]

_PART_PREFIX = RESERVED_PREFIX + "resourcelist-"
_PART_NAME = re.compile(r"resourcelist-(?:\d{8}T\d{6}Z-[0-9a-f]{8}-)?\d{5}\.xml")


def stored_row(documents: Documents, entry: Entry, url: str) -> tuple[Any, ...] | None:
    """An entry of ours as a stored row: the URI it describes (:meth:`Documents.origin`, in
    its normal form: a mirror made before there was one may hold another spelling), key from
    ``mirror:key``; None for a URI that has no normal form (credentials in it), which is never
    mapped now.

    :raises DocumentError: the entry is not one we write.
    """
    origin, via = documents.origin(entry, url)
    md = entry.md
    key = md.extra.get(KEY) if md is not None else None
    if md is None or md.length is None or key is None:
        raise DocumentError(f"the entry for {entry.loc} lacks the length or mirror:key we "
                            "write: the Resource List is not ours", url=url, line=entry.line,
                            section="14.8")
    try:
        uri = normalized(origin)
    except UnsafeContentError:
        return None
    modified = via.modified if via is not None else entry.lastmod
    return (uri, key, md.length, str(md.hash or ""), micros(modified), md.type,
            micros(entry.lastmod))


class Snapshot:
    """The Resource List of the mirror's :class:`Documents`."""

    def __init__(self, documents: Documents) -> None:
        self._documents = documents

    def exists(self) -> bool:
        return self._documents.destination.exists(self._documents.key(RESOURCE_LIST))

    def at(self) -> datetime | None:
        """When the Resource List was written (its ``at``).

        :raises DocumentError: it cannot be read.
        """
        with self._documents.reader(self._documents.key(RESOURCE_LIST)) as reader:
            return reader.head.md.at if reader.head.md is not None else None

    def records(self) -> Iterator[ObjectRecord]:
        """Every record, streamed (see :meth:`rows`)."""
        return (record_of(row) for row in self.rows() if row is not None)

    def rows(self) -> Iterator[tuple[Any, ...] | None]:
        """Every entry as a stored row (see :func:`stored_row`), streamed part after part.

        :raises DocumentError: a document cannot be read or was not written by the mirror.
        """
        parts: list[str] = []
        with self._documents.reader(self._documents.key(RESOURCE_LIST)) as reader:
            kind = reader.head.kind
            if kind is DocumentKind.RESOURCE_LIST_INDEX:
                parts = [self._part_key(entry, reader.url) for entry in reader]
            elif kind is DocumentKind.RESOURCE_LIST:
                for entry in reader:
                    yield stored_row(self._documents, entry, reader.url)
            else:
                raise DocumentError("the mirror's Resource List is not a Resource List",
                                    url=reader.url, section="10.1")
        for part in parts:
            with self._documents.reader(part) as reader:
                for entry in reader:
                    yield stored_row(self._documents, entry, reader.url)

    def _part_key(self, entry: Entry, url: str) -> str:
        """The key of a part the index lists, by its name (the base URL may have changed)."""
        name = name_of(entry.loc)
        if not _PART_NAME.fullmatch(name):
            raise DocumentError(f"the index lists {entry.loc} , not a part of the mirror's "
                                "Resource List", url=url, line=entry.line, section="10.2")
        return self._documents.location + name

    def write(self, at: datetime, rows: Iterable[Sequence[Any]]) -> None:
        """The Resource List of ``rows`` (stored rows, ordered by URI) as of ``at``; parts no
        longer needed are deleted after."""
        documents = self._documents
        head = Head(md=Metadata(capability="resourcelist", at=at),
                    links=(Link(rel="up", href=documents.url(documents.key(CAPABILITY_LIST))),),
                    namespaces={"mirror": NAMESPACE})
        parts = documents.key(_PART_PREFIX)
        generation = f"{at.astimezone(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"
        written = documents.write_list(head, (self._entry(row) for row in rows),
                                       documents.key(RESOURCE_LIST),
                                       lambda number: f"{parts}{generation}-{number:05d}.xml")
        for key in list(documents.destination.keys(parts)):
            if key not in written:
                documents.destination.delete(key)

    def _entry(self, row: Sequence[Any]) -> Entry:
        record = record_of(row)
        hashes = record.hashes or None
        documents = self._documents
        md = Metadata(hash=hashes, length=record.length, type=record.type,
                      extra={KEY: record.key})
        if documents.resources is not None:  # the loc is the URI; its lastmod the object's
            return Entry(record.uri, lastmod=record.lastmod, md=md)
        return Entry(
            documents.url(record.key), lastmod=as_datetime(row[6]), md=md,
            links=(Link(rel="via", href=record.uri, modified=record.lastmod, hash=hashes,
                        length=record.length, type=record.type),))
