"""The mirror describes itself: its own ResourceSync documents under ``.resourcesync/``.

At the destination, :class:`MirrorState` keeps

- ``resourcelist.xml``: a Resource List (10.1) of every object held, split into
  ``resourcelist-NNNNN.xml`` parts under an index past 50,000 entries (10.2). Each entry's
  ``loc`` is the object's URL at the destination (or under ``public_base_url``, to republish it),
  ``lastmod`` when the mirror's copy last changed, ``rs:md`` its hash, length and type, and an
  ``rs:ln rel="via"`` to the origin URI with the origin's hash, length and ``modified`` (14.8).
  The object's key travels in a ``mirror:key`` attribute of ``rs:md`` (:data:`NAMESPACE`);
- ``changes/<UTC timestamp>.xml``: a Change List (12.1) per save that found the mirror changed
  (every save but the first), from the save before, and ``changelist.xml``, the Change List
  Index (12.2) over them that the Capability List points to (see :meth:`MirrorState.save`);
- ``capabilitylist.xml`` and ``description.xml``: the Capability List (9) and Source
  Description (8) that make the mirror a Source others can sync from; a copy of the Source
  Description at ``.well-known/resourcesync`` if asked (:func:`publish_well_known`);
- ``checkpoint.json``: the last checkpoint, written last: the recovery path when the XCom is gone.

During a run the state lives in a scratch SQLite database (:mod:`.scratch`: nothing is left behind,
even by a killed run), so memory stays flat for a million resources; one connection serves every
thread, behind a lock.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import IO, Any
from urllib.parse import quote, unquote, urlsplit

from ..errors import ConfigurationError, DocumentError, InvalidValueError, UnsafeContentError
from ..protocol.closing import ClosedOnExit
from ..protocol.datetimes import format_datetime, parse_datetime
from ..protocol.hashes import DigestingWriter, Hashes
from ..protocol.model import (
    MAX_ENTRIES,
    Change,
    Document,
    DocumentKind,
    Entry,
    Head,
    Link,
    Metadata,
    Root,
)
from ..protocol.reader import DocumentReader
from ..protocol.split import write_split
from ..protocol.writer import document_bytes
from .base import Destination, ObjectInfo
from .keys import RESERVED_PREFIX, normalized
from .scratch import scratch_database

#: Writes per SQLite transaction (see ``MirrorState._transaction``).
_COMMIT_EVERY = 10_000
#: Marks of :meth:`MirrorState.mark_seen` written at once.
_SEEN_BATCH = 1_000
#: Records held back and written to SQLite at once. SQLite lets other threads have the
#: interpreter while it works, so a write per record queues every thread that records
#: behind the lock (about 5 ms per resource with 16 threads).
_PUT_BATCH = 256

__all__ = [
    "CAPABILITY_LIST",
    "CHANGES",
    "CHANGE_LIST_INDEX",
    "CHECKPOINT",
    "DESCRIPTION",
    "NAMESPACE",
    "RESOURCE_LIST",
    "WELL_KNOWN",
    "MirrorState",
    "ObjectRecord",
    "check_well_known",
    "publish_well_known",
    "saved_checkpoint",
]

RESOURCE_LIST = RESERVED_PREFIX + "resourcelist.xml"
CAPABILITY_LIST = RESERVED_PREFIX + "capabilitylist.xml"
DESCRIPTION = RESERVED_PREFIX + "description.xml"
CHECKPOINT = RESERVED_PREFIX + "checkpoint.json"
CHANGES = RESERVED_PREFIX + "changes/"
CHANGE_LIST_INDEX = RESERVED_PREFIX + "changelist.xml"
#: Where a Destination looks for a Source's Source Description first (6.3.2, RFC 5785): the
#: mirror keeps a copy of its own there when it is served at the root of a host.
WELL_KNOWN = ".well-known/resourcesync"
#: The namespace of the attribute that names each object's key in the mirror's Resource List.
NAMESPACE = "urn:airflow-provider-resourcesync:mirror"

_KEY = f"{{{NAMESPACE}}}key"
_PART_PREFIX = RESERVED_PREFIX + "resourcelist-"
_PART_NAME = re.compile(r"resourcelist-\d{5}\.xml")
_XML = "application/xml"
_VERSION = 1
_BATCH = 5_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_SCHEMA = """
CREATE TABLE records (
    uri TEXT PRIMARY KEY, key TEXT NOT NULL, length INTEGER NOT NULL, hash TEXT NOT NULL,
    lastmod INTEGER, type TEXT,
    stored INTEGER,                   -- when the mirror's copy changed; NULL: since the last save
    seen INTEGER NOT NULL DEFAULT 0,
    changed INTEGER,                  -- when this run changed it (the mirror's clock), or NULL
    fresh INTEGER NOT NULL DEFAULT 0  -- 1: not held at the last save
) WITHOUT ROWID;
CREATE INDEX records_changed ON records (changed, uri) WHERE changed IS NOT NULL;
CREATE TABLE removed (uri TEXT PRIMARY KEY, key TEXT NOT NULL, at INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX removed_at ON removed (at, uri);
"""
_COLUMNS = "uri, key, length, hash, lastmod, type, stored"
_SAME = """(key, length, hash, lastmod, type)
    IS (excluded.key, excluded.length, excluded.hash, excluded.lastmod, excluded.type)"""
_PUT = f"""
INSERT INTO records (uri, key, length, hash, lastmod, type, changed, fresh)
VALUES (?, ?, ?, ?, ?, ?, ?, 1)
ON CONFLICT (uri) DO UPDATE SET
    stored = CASE WHEN {_SAME} THEN stored END,
    changed = CASE WHEN {_SAME} THEN changed ELSE excluded.changed END,
    key = excluded.key, length = excluded.length, hash = excluded.hash,
    lastmod = excluded.lastmod, type = excluded.type
"""


@dataclass(frozen=True, slots=True)
class ObjectRecord:
    """One object the mirror holds: the origin's URI, its key, and the origin's description."""

    uri: str
    key: str
    length: int
    hashes: Hashes
    lastmod: datetime | None = None
    type: str | None = None

    @classmethod
    def of(cls, key: str, info: ObjectInfo) -> ObjectRecord:
        return cls(info.uri, key, info.length, info.hashes, info.lastmod, info.type)

    @property
    def info(self) -> ObjectInfo:
        return ObjectInfo(self.uri, self.length, self.hashes, self.lastmod, self.type)


class MirrorState(ClosedOnExit):
    """What the mirror holds, indexed in a scratch SQLite database for one run.

    Made by :meth:`load`; :meth:`save` writes the documents back. ``with`` closes it.

    :param destination: where the mirror lives.
    :param public_base_url: the URL the destination is published under (``https://...``), for
        a mirror others sync from (14.8); it is saved with the checkpoint and kept by later runs
        until another is given. Without one, each ``loc`` is the destination's own URL.
    :param location: the key prefix the documents live under: :data:`RESERVED_PREFIX`, or a
        folder below it (a shard of a sharded baseline keeps its own view there).
    :param clock: the mirror's clock, which dates its changes (tests give their own).
    """

    def __init__(self, destination: Destination, *, public_base_url: str | None = None,
                 location: str = RESERVED_PREFIX,
                 clock: Callable[[], datetime] | None = None) -> None:
        if not location.startswith(RESERVED_PREFIX) or not location.endswith("/"):
            raise InvalidValueError(f"state location {location!r} must be {RESERVED_PREFIX!r} "
                                    "or a folder below it, ending with '/'")
        self.destination = destination
        self.location = location
        self._base = _base_url(public_base_url) if public_base_url is not None else None
        self._clock = clock or _now
        self._db = scratch_database(_SCHEMA, shared=True)
        self._lock = threading.Lock()
        self._puts: dict[str, tuple[Any, ...]] = {}  # records not yet written, by URI
        self._writes = 0
        self._removals = 0  # URIs removed in this run: a put must take them off that list
        self._seen: list[str] = []  # marks not yet written
        self._checkpoint: dict[str, Any] | None = None
        self._saved_at: datetime | None = None
        self._changelist: str | None = None

    @classmethod
    def load(cls, destination: Destination, *, public_base_url: str | None = None,
             location: str = RESERVED_PREFIX,
             clock: Callable[[], datetime] | None = None) -> MirrorState:
        """The state recorded at ``destination`` under ``location`` (empty if none), streamed
        into SQLite.

        :raises DocumentError: if a stored document cannot be read or was not written by us.
        :raises DestinationError: if the destination cannot be read.
        """
        state = cls(destination, public_base_url=public_base_url, location=location, clock=clock)
        try:
            state._load()
        except BaseException:
            state.close()
            raise
        return state

    # -- records ---------------------------------------------------------------------------------

    def get(self, uri: str) -> ObjectRecord | None:
        with self._lock:
            row = self._puts.get(uri) or self._db.execute(
                f"SELECT {_COLUMNS} FROM records WHERE uri = ?", (uri,)).fetchone()
        return _record(row) if row is not None else None

    def put(self, record: ObjectRecord) -> None:
        """Record an object (replacing what was recorded for its URI), now by the mirror's
        clock if it changed. Records are written in batches of :data:`_PUT_BATCH`; every read
        sees them all."""
        row = _row(record, _micros(self._clock(), "the clock's time"))
        with self._lock:
            self._puts[record.uri] = row
            if len(self._puts) >= _PUT_BATCH:
                self._write_puts()

    def remove(self, uri: str) -> None:
        """Forget the object of ``uri`` (its key is kept for this run's Change List)."""
        now = _micros(self._clock(), "the clock's time")
        with self._transaction():
            self._removals += 1
            self._db.execute("INSERT OR REPLACE INTO removed SELECT uri, key, ? FROM records "
                             "WHERE uri = ?", (now, uri))
            self._db.execute("DELETE FROM records WHERE uri = ?", (uri,))

    def __len__(self) -> int:
        with self._database():
            return self._db.execute("SELECT count(*) FROM records").fetchone()[0]

    def records(self) -> Iterator[ObjectRecord]:
        """Every record, ordered by URI, streamed."""
        for row in self._scan(f"SELECT {_COLUMNS} FROM records WHERE uri > ?"):
            yield _record(row)

    # -- what the Source no longer lists ---------------------------------------------------------

    def mark_seen(self, uri: str) -> None:
        """Note that the Source still lists ``uri`` (nothing if the mirror does not hold it).
        Marks are written in batches; :meth:`unseen` sees every one made before it."""
        with self._lock:
            self._seen.append(uri)
            if len(self._seen) < _SEEN_BATCH:
                return
        self._write_seen()

    def unseen(self) -> Iterator[str]:
        """The URIs held and not marked seen since the state was loaded, ordered, streamed."""
        self._write_seen()
        for row in self._scan("SELECT uri FROM records WHERE seen = 0 AND uri > ?"):
            yield row[0]

    def _write_seen(self) -> None:
        with self._transaction():
            marks, self._seen = self._seen, []
            self._db.executemany("UPDATE records SET seen = 1 WHERE uri = ?",
                                 ((uri,) for uri in marks))

    def uris_not_in(self, seen: Iterable[str]) -> Iterator[str]:
        """The URIs held that ``seen`` does not list: ``seen`` is consumed first (marking each,
        in bounded memory), then the rest is streamed. Marks from before are cleared."""
        with self._database():
            self._seen = []
            self._db.execute("UPDATE records SET seen = 0")
        for batch in _batches(seen):
            with self._transaction():
                self._db.executemany("UPDATE records SET seen = 1 WHERE uri = ?",
                                     ((uri,) for uri in batch))
        return self.unseen()

    # -- checkpoint ------------------------------------------------------------------------------

    def checkpoint(self) -> dict[str, Any] | None:
        """The checkpoint of the last :meth:`save`; None if there was none."""
        return self._checkpoint

    # -- saving ----------------------------------------------------------------------------------

    def save(self, *, checkpoint: dict[str, Any] | None) -> None:
        """Write the mirror's documents, then ``checkpoint.json``, as of now by the mirror's
        clock: the Resource List's ``at``, and the ``lastmod`` of what changed since the last
        save.

        Past the first save, what changed since the last one (objects recorded anew or with
        another description, objects removed) goes in a Change List of its own (12.1), listed
        in the mirror's Change List Index (12.2): each change dated when the mirror made it, by
        its clock (as in 14.8's examples; the ``via`` link keeps the Source's ``modified``),
        each list from the one before to this one, so the lists follow each other and a
        Destination of the mirror misses none of its changes, whichever run made them.

        Dating the Resource List by the mirror's clock, not the Source's, is what lets a
        Destination of the mirror go from its ``at`` to the first Change List with no gap.

        The order of the writes is what makes a save killed between any two of them lose no
        change, for the mirror or for a Destination of it: the journal first (the Change List,
        then the index that lists it), then the Resource List, the Capability List and Source
        Description that point at them, and ``checkpoint.json`` last. Killed before the
        Resource List, the next run loads the Resource List from before, finds the same changes
        again and lists them again (a Destination applies them twice, which is harmless);
        killed after it, they are in the journal already. Either way nothing points at a
        document not yet written.

        :param checkpoint: the checkpoint to keep, JSON-serializable; None: none yet (an
            incomplete first run).
        :raises InvalidValueError: for a checkpoint JSON cannot carry; nothing is written then.
        """
        now = self._clock()
        if self._saved_at is not None:
            now = max(now, self._saved_at)  # a clock behind the one that saved before
        stamp = _micros(now, "the clock's time")
        with self._database():
            last = self._db.execute(
                "SELECT max(t) FROM (SELECT max(changed) AS t FROM records "
                "UNION ALL SELECT max(at) FROM removed)").fetchone()[0]
        # the first save writes no Change List: its Resource List is where Destinations start
        journal = self._saved_at is not None and last is not None
        listed = self._listed_change_lists() if journal else []
        changelist = self._changelist
        if journal:
            stamp_name = now.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
            changelist = f"{self._key(CHANGES)}{stamp_name}.xml"
        elif changelist is None and self.destination.exists(self._key(CHANGE_LIST_INDEX)):
            changelist = self._key(CHANGE_LIST_INDEX)  # a killed save wrote the first list
        try:
            record = json.dumps({
                "version": _VERSION, "saved_at": format_datetime(now),
                "changelist": changelist, "checkpoint": checkpoint, "public_url": self._base,
            }, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise InvalidValueError(f"the checkpoint cannot be written as JSON: {exc}") from exc
        with self._transaction():
            self._db.execute("UPDATE records SET stored = ? WHERE stored IS NULL", (stamp,))
        if journal:
            assert self._saved_at is not None and changelist is not None
            # from the end of the last list listed: a killed save may have listed one after
            # the save before
            start = max([self._saved_at, *(entry.md.until for entry in listed[-1:]
                                           if entry.md is not None and entry.md.until)])
            end = max(now, start, _EPOCH + timedelta(microseconds=last))
            self._write_change_index([*listed, *self._write_change_list(changelist, start, end)])
        self._changelist = changelist
        self._write_resource_list(now)
        self._write_document(self._key(CAPABILITY_LIST), Head(
            md=Metadata(capability="capabilitylist"),
            links=(Link(rel="up", href=self.url(self._key(DESCRIPTION))),)),
            self._capabilities())
        self._write_document(self._key(DESCRIPTION), Head(
            md=Metadata(capability="description")), [
            Entry(self.url(self._key(CAPABILITY_LIST)), md=Metadata(capability="capabilitylist"))])
        self.destination.write_bytes(self._key(CHECKPOINT), record.encode(), "application/json")
        with self._transaction():
            self._db.execute("UPDATE records SET changed = NULL, fresh = 0 "
                             "WHERE changed IS NOT NULL")  # every fresh record has changed
            self._db.execute("DELETE FROM removed")
        self._checkpoint = json.loads(record)["checkpoint"]
        self._saved_at = now

    @property
    def public_base_url(self) -> str | None:
        """The URL the destination is published under, given or saved; None if none."""
        return self._base

    @public_base_url.setter
    def public_base_url(self, url: str) -> None:
        self._base = _base_url(url)

    def url(self, key: str) -> str:
        """Where the object at ``key`` is published: under ``public_base_url`` if given, else
        the destination's own URL."""
        if self._base is not None:
            return self._base + quote(key, safe="/")
        return self.destination.object_url(key)

    def close(self) -> None:
        """Drop the scratch database."""
        self._db.close()

    def _key(self, key: str) -> str:
        """A key of the default location (:data:`RESOURCE_LIST`...) moved to this one."""
        return self.location + key.removeprefix(RESERVED_PREFIX)

    # -- internals: SQLite -----------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """Writes, under the lock, in one long transaction committed every
        :data:`_COMMIT_EVERY` writes: the database is private to this run and the connection
        reads its own uncommitted rows, so a commit per write would only cost time."""
        with self._database():
            if not self._db.in_transaction:
                self._db.execute("BEGIN")
            yield
            self._wrote(1)

    @contextmanager
    def _database(self) -> Iterator[None]:
        """The lock, with the records :meth:`put` holds back written."""
        with self._lock:
            self._write_puts()
            yield

    def _write_puts(self) -> None:
        """Write the records :meth:`put` holds back (under the lock)."""
        if not self._puts:
            return
        if not self._db.in_transaction:
            self._db.execute("BEGIN")
        rows, self._puts = list(self._puts.values()), {}
        self._db.executemany(_PUT, rows)
        if self._removals:
            self._db.executemany("DELETE FROM removed WHERE uri = ?", ((row[0],) for row in rows))
        self._wrote(len(rows))

    def _wrote(self, writes: int) -> None:
        self._writes += writes
        if self._writes >= _COMMIT_EVERY:
            self._db.execute("COMMIT")
            self._writes = 0

    def _scan(self, query: str, page: int = 1_000) -> Iterator[Sequence[Any]]:
        """Rows of ``query`` (whose first column is the ``uri`` its ``uri > ?`` pages on), in
        pages fetched under the lock, so callers may write to the state while they iterate."""
        last = ""
        while True:
            with self._database():
                rows = self._db.execute(f"{query} ORDER BY uri LIMIT ?", (last, page)).fetchall()
            yield from rows
            if len(rows) < page:
                return
            last = rows[-1][0]

    def _insert(self, rows: Iterable[tuple[Any, ...] | None]) -> None:
        for batch in _batches(filter(None, rows)):
            with self._transaction():
                self._db.executemany(
                    f"INSERT OR REPLACE INTO records ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    batch)

    # -- internals: reading the documents --------------------------------------------------------

    def _load(self) -> None:
        data = self.destination.read_bytes(self._key(CHECKPOINT))
        if data is not None:
            self._read_checkpoint(data)
        if not self.destination.exists(self._key(RESOURCE_LIST)):
            return
        parts: list[str] = []
        with self._reader(self._key(RESOURCE_LIST)) as reader:
            kind = reader.head.kind
            if kind is DocumentKind.RESOURCE_LIST_INDEX:
                parts = [self._part_key(entry, reader.url) for entry in reader]
            elif kind is DocumentKind.RESOURCE_LIST:
                self._insert(_entry_row(entry, reader.url) for entry in reader)
            else:
                raise DocumentError("the mirror's Resource List is not a Resource List",
                                    url=reader.url, section="10.1")
        for part in parts:
            with self._reader(part) as reader:
                self._insert(_entry_row(entry, reader.url) for entry in reader)

    @contextmanager
    def _reader(self, key: str) -> Iterator[DocumentReader]:
        with self.destination.open(key) as stream, DocumentReader(
                stream, url=self.destination.object_url(key)) as reader:
            yield reader

    def _read_checkpoint(self, data: bytes) -> None:
        value = _saved_record(data, self.destination.object_url(self._key(CHECKPOINT)))
        self._saved_at = parse_datetime(value["saved_at"])
        self._changelist = value["changelist"]
        self._checkpoint = value["checkpoint"]
        if self._base is None:
            self._base = value.get("public_url")

    def _part_key(self, entry: Entry, url: str) -> str:
        """The key of a part the index lists, by its name (the base URL may have changed)."""
        name = _name(entry.loc)
        if not _PART_NAME.fullmatch(name):
            raise DocumentError(f"the index lists {entry.loc}, not a part of the mirror's "
                                "Resource List", url=url, line=entry.line, section="10.2")
        return self.location + name

    # -- internals: writing the documents --------------------------------------------------------

    def _write_resource_list(self, at: datetime) -> None:
        head = Head(md=Metadata(capability="resourcelist", at=at),
                    links=(Link(rel="up", href=self.url(self._key(CAPABILITY_LIST))),),
                    namespaces={"mirror": NAMESPACE})
        entries = (self._resource_entry(row) for row in self._scan(
            f"SELECT {_COLUMNS} FROM records WHERE uri > ?"))
        parts = self._key(_PART_PREFIX)
        written = self._write_list(head, entries, self._key(RESOURCE_LIST),
                                   lambda number: f"{parts}{number:05d}.xml")
        for key in list(self.destination.keys(parts)):
            if key not in written:
                self.destination.delete(key)

    def _resource_entry(self, row: Sequence[Any]) -> Entry:
        record = _record(row)
        hashes = record.hashes or None
        return Entry(
            self.url(record.key), lastmod=_datetime(row[6]),
            md=Metadata(hash=hashes, length=record.length, type=record.type,
                        extra={_KEY: record.key}),
            links=(Link(rel="via", href=record.uri, modified=record.lastmod, hash=hashes,
                        length=record.length, type=record.type),))

    def _write_change_list(self, key: str, start: datetime, end: datetime) -> list[Entry]:
        """This run's Change List, from ``start`` to ``end`` (12.1); its entries in the mirror's
        Change List Index: the list, or the parts it was split into."""
        head = Head(md=Metadata(capability="changelist", from_=start, until=end),
                    links=(Link(rel="up", href=self.url(self._key(CAPABILITY_LIST))),))
        written = self._write_list(head, self._change_entries(start), key,
                                   lambda number: f"{key.removesuffix('.xml')}-{number:05d}.xml")
        if written == {key}:
            return [Entry(self.url(key), md=Metadata(from_=start, until=end))]
        with self._reader(key) as parts:
            return [Entry(part.loc, md=part.md) for part in parts]

    def _write_change_index(self, entries: list[Entry]) -> None:
        """The Change List Index over ``entries``, every run's Change List in forward
        chronological order (12.2). Past section 7's 50,000 entries the oldest lists are
        dropped: a mirror that others sync from keeps the changes of its latest 50,000 runs."""
        dropped, entries = entries[:-MAX_ENTRIES], entries[-MAX_ENTRIES:]
        first, last = entries[0].md, entries[-1].md
        self._write_document(self._key(CHANGE_LIST_INDEX), Head(
            root=Root.SITEMAPINDEX,
            md=Metadata(capability="changelist", from_=first.from_ if first else None,
                        until=last.until if last else None),
            links=(Link(rel="up", href=self.url(self._key(CAPABILITY_LIST))),)), entries)
        for entry in dropped:
            self.destination.delete(self._change_key(entry.loc))

    def _listed_change_lists(self) -> list[Entry]:
        """The entries of the Change List Index; where it is missing or unreadable (a mirror
        from before there was one), the Change Lists under ``changes/``, from their heads."""
        key = self._key(CHANGE_LIST_INDEX)
        if self.destination.exists(key):
            try:
                with self._reader(key) as index:  # each list where it is published now
                    return [Entry(self.url(self._change_key(entry.loc)), md=entry.md)
                            for entry in index]
            except DocumentError:
                pass
        listed = []
        for part in sorted(self.destination.keys(self._key(CHANGES))):
            with self._reader(part) as reader:
                md = reader.head.md
                if not reader.head.is_index and md is not None:
                    listed.append(Entry(self.url(part), md=Metadata(from_=md.from_,
                                                                    until=md.until)))
        return listed

    def _change_key(self, url: str) -> str:
        """The key of a Change List the index lists, by its name (the base URL may have
        changed)."""
        return self._key(CHANGES) + _name(url)

    def _change_entries(self, start: datetime) -> Iterator[Entry]:
        """What changed since the last save, in the order the mirror changed it (none dated
        before ``start``), a page at a time."""
        floor = _micros(start, "start")
        last: tuple[int, str] = (-(2**63), "")
        query = ("SELECT changed AS t, uri, CASE fresh WHEN 1 THEN 'created' ELSE 'updated' END, "
                 "key, length, hash, lastmod, type, stored FROM records "
                 "WHERE changed IS NOT NULL AND (changed, uri) > (?, ?) UNION ALL "
                 "SELECT at, uri, 'deleted', key, NULL, NULL, NULL, NULL, NULL FROM removed "
                 "WHERE (at, uri) > (?, ?) ORDER BY 1, 2 LIMIT ?")
        while True:
            with self._database():
                rows = self._db.execute(query, (*last, *last, 1_000)).fetchall()
            for when, uri, change, key, length, hash_, lastmod, type_, stored in rows:
                held = change != Change.DELETED
                hashes = (Hashes.parse(hash_) or None) if held else None
                yield Entry(
                    self.url(key), lastmod=_datetime(stored) if held else None,
                    md=Metadata(change=change, datetime=_datetime(max(when, floor)), hash=hashes,
                                length=length if held else None, type=type_ if held else None),
                    links=(Link(rel="via", href=uri, modified=_datetime(lastmod) if held else None,
                                hash=hashes, length=length if held else None,
                                type=type_ if held else None),))
            if len(rows) < 1_000:
                return
            last = (rows[-1][0], rows[-1][1])

    def _write_list(self, head: Head, entries: Iterable[Entry], key: str,
                    part_key: Callable[[int], str]) -> set[str]:
        """A list at ``key``, split into parts named by ``part_key`` if it must be; the keys
        written."""
        keys = {self.url(key): key}

        def part_url(number: int) -> str:
            part = part_key(number)
            keys[self.url(part)] = part
            return self.url(part)

        urls = write_split(head, entries, url=self.url(key), part_url=part_url,
                           open_output=lambda url: self._output(keys[url]))
        return {keys[url] for url in urls}

    @contextmanager
    def _output(self, key: str) -> Iterator[IO[bytes]]:
        """A staged document at ``key``, committed with its hash and length on a clean exit."""
        with self.destination.stage(key) as staged:
            output = DigestingWriter(staged.file, ("md5", "sha-256"))  # write-only
            yield output  # type: ignore[misc]
            digester = output.digester
            staged.commit(ObjectInfo(self.url(key), digester.length, digester.hashes(),
                                     type=_XML))

    def _capabilities(self) -> list[Entry]:
        entries = [Entry(self.url(self._key(RESOURCE_LIST)),
                         md=Metadata(capability="resourcelist"))]
        if self._changelist is not None:
            entries.append(Entry(self.url(self._key(CHANGE_LIST_INDEX)),
                                 md=Metadata(capability="changelist")))
        return entries

    def _write_document(self, key: str, head: Head, entries: list[Entry]) -> None:
        self.destination.write_bytes(key, document_bytes(Document(head, entries)), _XML)


# -- rows --------------------------------------------------------------------------------------

def saved_checkpoint(destination: Destination) -> dict[str, Any] | None:
    """The checkpoint the mirror at ``destination`` last saved, reading nothing else (for a
    sensor, say); None: no run saved one.

    :raises DocumentError: the saved record is not readable.
    """
    data = destination.read_bytes(CHECKPOINT)
    if data is None:
        return None
    checkpoint: dict[str, Any] | None = _saved_record(data, destination.object_url(CHECKPOINT))[
        "checkpoint"]
    return checkpoint


def check_well_known(key_prefixes: Mapping[str, str] | None) -> None:
    """Refuse key prefixes that could put a resource where :func:`publish_well_known` writes
    (a URI mapped onto ``.well-known/`` could be ``.../resourcesync``; one mapped under
    ``.well-known/resourcesync/`` needs it to be a folder on local disk). The default layout
    cannot: its keys start with the scheme.

    :raises ConfigurationError: a key prefix clashes; nothing is written.
    """
    for uri_prefix, key_prefix in (key_prefixes or {}).items():
        if WELL_KNOWN.startswith(key_prefix) or key_prefix.startswith(WELL_KNOWN + "/"):
            raise ConfigurationError(
                f"key_prefixes maps {uri_prefix!r} to {key_prefix!r}, where a resource could "
                f"take the place of the mirror's Source Description at {WELL_KNOWN!r}: map it "
                "to another key prefix, or leave well_known off")


def publish_well_known(destination: Destination) -> bool:
    """Copy the mirror's Source Description to :data:`WELL_KNOWN` at ``destination``, where a
    Destination of the mirror served at the root of a host finds it (6.3.2). Called after a
    save, so it never points at a Capability List not yet written; a mirror with none saved yet
    gets none. Whether it was written.

    :raises ConfigurationError: a resource of the mirror is stored there (mapped by key
        prefixes of an earlier run); it is left as it is.
    :raises DestinationError: the destination refused the write.
    """
    description = destination.read_bytes(DESCRIPTION)
    if description is None:
        return False
    held = destination.info(WELL_KNOWN)  # the mirror's own documents carry no description
    if held is not None:
        raise ConfigurationError(
            f"{destination.object_url(WELL_KNOWN)} holds the resource {_shortened(held.uri)}, "
            "not a Source "
            "Description: map that resource to another key prefix and baseline again, or "
            "leave well_known off")
    destination.write_bytes(WELL_KNOWN, description, _XML)
    return True


def _saved_record(data: bytes, url: str) -> dict[str, Any]:
    """The record :meth:`MirrorState.save` writes next to the documents, checked."""
    try:
        value = json.loads(data)
        if value["version"] != _VERSION:
            raise ValueError(f"version {value['version']!r}, not {_VERSION}")
        parse_datetime(value["saved_at"])
        missing = {"changelist", "checkpoint"} - value.keys()
        if missing:
            raise KeyError(", ".join(sorted(missing)))
    except (ValueError, KeyError, TypeError) as exc:
        raise DocumentError(f"the mirror's checkpoint is not readable: {exc}", url=url) from exc
    return value


def _shortened(text: str, limit: int = 100) -> str:
    """``text`` quoted, cut to its first ``limit`` characters if longer (its length said)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def _base_url(url: str) -> str:
    """``url`` as a base for keys: an absolute ``http(s)`` URL ending with ``/``."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc or (
            parts.query or parts.fragment):
        raise InvalidValueError(f"public URL {url!r}: expected an http:// or https:// URL with "
                                "no query, under which the destination's keys are published")
    return url if url.endswith("/") else url + "/"


def _name(url: str) -> str:
    """The file name a document of the mirror is published under, at the end of ``url``."""
    return unquote(url.rstrip("/").rpartition("/")[2])


def _now() -> datetime:
    return datetime.now(UTC)


def _micros(value: datetime | None, what: str = "lastmod") -> int | None:
    """Microseconds since the epoch: exact, and ordered as the instants are."""
    if value is None:
        return None
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidValueError(f"{what} {value!r} has no time zone")
    return (value - _EPOCH) // timedelta(microseconds=1)


def _datetime(micros: int | None) -> datetime | None:
    return None if micros is None else _EPOCH + timedelta(microseconds=micros)


def _row(record: ObjectRecord, changed: int | None) -> tuple[Any, ...]:
    """The row :data:`_PUT` writes: the record, and when the mirror's clock saw it put."""
    return (record.uri, record.key, record.length, str(record.hashes),
            _micros(record.lastmod), record.type, changed)


def _record(row: Sequence[Any]) -> ObjectRecord:
    uri, key, length, hash_, lastmod, type_ = row[:6]
    return ObjectRecord(uri, key, length, Hashes.parse(hash_), _datetime(lastmod), type_)


def _entry_row(entry: Entry, url: str) -> tuple[Any, ...] | None:
    """A Resource List entry of ours as a row: origin from the ``via`` link (in its normal form:
    a mirror made before there was one may hold another spelling), key from ``mirror:key``;
    None for an origin that has no normal form (credentials in it), which is never mapped now."""
    md = entry.md
    via = entry.links_for("via")
    key = md.extra.get(_KEY) if md is not None else None
    if md is None or md.length is None or not via or key is None:
        raise DocumentError(f"the entry for {entry.loc} lacks the via link, length or mirror:key "
                            "the mirror writes: the Resource List is not the mirror's own",
                            url=url, line=entry.line, section="14.8")
    try:
        uri = normalized(via[0].href)
    except UnsafeContentError:
        return None
    return (uri, key, md.length, str(md.hash or ""), _micros(via[0].modified), md.type,
            _micros(entry.lastmod))


def _batches(items: Iterable[Any]) -> Iterator[list[Any]]:
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch
