"""The record store: what the mirror holds during one run, in a scratch SQLite database.

Each record is an object the mirror holds (:class:`ObjectRecord`), with when the mirror's copy
last changed (``stored``, the Resource List's ``lastmod``), and, for this run, when it changed
and whether it is new; removed objects are kept with their key until the save lists them. The
database is private to the run (:mod:`..scratch`: nothing is left behind, even by a killed run),
so memory stays flat for a million resources; one connection serves every thread, behind a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..protocol.datetimes import as_datetime, format_datetime, micros
from ..protocol.hashes import Hashes
from ..storage.scratch import scratch_database
from .record import ObjectRecord

__all__ = ["COLUMNS", "RecordStore", "record_of"]

#: Writes per SQLite transaction (see ``RecordStore._transaction``).
_COMMIT_EVERY = 10_000
#: Marks of :meth:`RecordStore.mark_seen` written at once.
_SEEN_BATCH = 1_000
#: Records held back and written to SQLite at once. SQLite lets other threads have the
#: interpreter while it works, so a write per record queues every thread that records
#: behind the lock (about 5 ms per resource with 16 threads).
_PUT_BATCH = 256
_BATCH = 5_000

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
CREATE TABLE base (
    uri TEXT PRIMARY KEY, key TEXT NOT NULL, length INTEGER NOT NULL, hash TEXT NOT NULL,
    lastmod INTEGER, type TEXT, stored INTEGER
) WITHOUT ROWID;
"""
#: The columns of a stored row: the record's, then ``stored``.
COLUMNS = "uri, key, length, hash, lastmod, type, stored"
_SAME = """(key, length, hash, lastmod, type)
    IS (excluded.key, excluded.length, excluded.hash, excluded.lastmod, excluded.type)"""
_PUT = f"""
INSERT INTO records (uri, key, length, hash, lastmod, type, changed, fresh)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (uri) DO UPDATE SET
    stored = CASE WHEN {_SAME} THEN stored END,
    changed = CASE WHEN {_SAME} THEN changed ELSE excluded.changed END,
    key = excluded.key, length = excluded.length, hash = excluded.hash,
    lastmod = excluded.lastmod, type = excluded.type
"""
_CHANGES = (
    "SELECT changed AS t, uri, CASE fresh WHEN 1 THEN 'created' ELSE 'updated' END, "
    "key, length, hash, lastmod, type, stored FROM records "
    "WHERE changed IS NOT NULL AND (changed, uri) > (?, ?) UNION ALL "
    "SELECT at, uri, 'deleted', key, NULL, NULL, NULL, NULL, NULL FROM removed "
    "WHERE (at, uri) > (?, ?) ORDER BY 1, 2 LIMIT ?")




def record_of(row: Sequence[Any]) -> ObjectRecord:
    """The record of a stored row (:data:`COLUMNS`)."""
    uri, key, length, hash_, lastmod, type_ = row[:6]
    return ObjectRecord(uri, key, length, Hashes.parse(hash_), as_datetime(lastmod), type_)


def stored_json_row(row: Sequence[Any]) -> list[Any]:
    """The JSON row (:func:`.held.row_of`) of a stored row, as ``row_of(uri, record_of(row))``
    makes it, without making the record: a compaction writes one for every record held."""
    uri, key, length, hash_, lastmod, type_ = row[:6]
    time = as_datetime(lastmod)
    return [uri, key, length, hash_, None if time is None else format_datetime(time), type_]


def _row(record: ObjectRecord, changed: int | None, fresh: bool) -> tuple[Any, ...]:
    """The row :data:`_PUT` writes: the record, when the mirror's clock saw it put, and
    whether it is new to the mirror (if it is not recorded yet)."""
    return (record.uri, record.key, record.length, str(record.hashes),
            micros(record.lastmod), record.type, changed, int(fresh))


def _batches(items: Iterable[Any]) -> Iterator[list[Any]]:
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


class RecordStore:
    """The records of one run, safe to use from many threads. :meth:`close` drops them."""

    def __init__(self) -> None:
        self._db = scratch_database(_SCHEMA, shared=True)
        self._lock = threading.Lock()
        self._puts: dict[str, tuple[Any, ...]] = {}  # records not yet written, by URI
        self._writes = 0
        self._removals = 0  # URIs removed in this run: a put must take them off that list
        self._seen: list[str] = []  # marks not yet written

    def close(self) -> None:
        self._db.close()

    # -- records ---------------------------------------------------------------------------------

    def get(self, uri: str) -> ObjectRecord | None:
        return self.find(uri)[1]

    def find(self, uri: str) -> tuple[bool, ObjectRecord | None]:
        """Whether the store knows ``uri`` (recorded, or removed in this run), and its record
        (None if removed or unknown)."""
        with self._lock:
            row = self._puts.get(uri) or self._db.execute(
                f"SELECT {COLUMNS} FROM records WHERE uri = ?", (uri,)).fetchone()
            if row is not None:
                return True, record_of(row)
            removed = self._removals and self._db.execute(
                "SELECT 1 FROM removed WHERE uri = ?", (uri,)).fetchone()
        return bool(removed), None

    def put(self, record: ObjectRecord, now: int | None, *, fresh: bool = True) -> None:
        """Record an object (replacing what was recorded for its URI), changed at ``now`` if it
        changed; ``fresh``: new to the mirror, if the store does not record it yet. Records are
        written in batches of :data:`_PUT_BATCH`; every read sees them all."""
        row = _row(record, now, fresh)
        with self._lock:
            self._puts[record.uri] = row
            if len(self._puts) >= _PUT_BATCH:
                self._write_puts()

    def remove(self, uri: str, key: str, now: int | None) -> None:
        """Forget the object of ``uri``, held under ``key``, removed at ``now`` (its key is kept
        for the save)."""
        with self._transaction():
            self._removals += 1
            self._db.execute("INSERT OR REPLACE INTO removed VALUES (?, ?, ?)", (uri, key, now))
            self._db.execute("DELETE FROM records WHERE uri = ?", (uri,))

    def __len__(self) -> int:
        with self._database():
            count: int = self._db.execute("SELECT count(*) FROM records").fetchone()[0]
            return count

    def rows(self) -> Iterator[Sequence[Any]]:
        """Every stored row (:data:`COLUMNS`), ordered by URI, streamed."""
        return self._scan(f"SELECT {COLUMNS} FROM records WHERE uri > ?")

    def fill(self, rows: Iterable[tuple[Any, ...] | None],
             changes: Iterable[tuple[str, tuple[Any, ...] | None]]) -> None:
        """Record what the mirror held before this run, beneath what this run recorded and
        removed: stored ``rows`` (Nones passed over), then ``changes`` to them in order (a URI
        and its new row, None for a removal)."""
        for batch in _batches(filter(None, rows)):
            with self._transaction():
                self._db.executemany(
                    f"INSERT OR REPLACE INTO base ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", batch)
        for batch in _batches(changes):
            with self._transaction():
                for uri, row in batch:
                    if row is None:
                        self._db.execute("DELETE FROM base WHERE uri = ?", (uri,))
                    else:
                        self._db.execute(f"INSERT OR REPLACE INTO base ({COLUMNS}) "
                                         "VALUES (?, ?, ?, ?, ?, ?, ?)", row)
        with self._transaction():
            self._db.execute(
                f"INSERT OR IGNORE INTO records ({COLUMNS}) SELECT {COLUMNS} FROM base "
                "WHERE uri NOT IN (SELECT uri FROM removed)")
            self._db.execute("DELETE FROM base")

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
        """The URIs held and not marked seen, ordered, streamed."""
        self._write_seen()
        for row in self._scan("SELECT uri FROM records WHERE seen = 0 AND uri > ?"):
            yield row[0]

    def _write_seen(self) -> None:
        with self._transaction():
            marks, self._seen = self._seen, []
            self._db.executemany("UPDATE records SET seen = 1 WHERE uri = ?",
                                 ((uri,) for uri in marks))


    # -- this run's changes ----------------------------------------------------------------------

    def last_change(self) -> int | None:
        """When this run last changed a record or removed one; None: it changed nothing."""
        with self._database():
            last: int | None = self._db.execute(
                "SELECT max(t) FROM (SELECT max(changed) AS t FROM records "
                "UNION ALL SELECT max(at) FROM removed)").fetchone()[0]
            return last

    def changes(self) -> Iterator[Sequence[Any]]:
        """This run's changes in the order it made them, a page at a time: rows of ``(when,
        uri, change, key, length, hash, lastmod, type, stored)``, the last five None for a
        removal."""
        last: tuple[int, str] = (-(2**63), "")
        while True:
            with self._database():
                rows = self._db.execute(_CHANGES, (*last, *last, 1_000)).fetchall()
            yield from rows
            if len(rows) < 1_000:
                return
            last = (rows[-1][0], rows[-1][1])

    def mark_stored(self, stamp: int | None) -> None:
        """Date the copies changed since the last save ``stamp``."""
        with self._transaction():
            self._db.execute("UPDATE records SET stored = ? WHERE stored IS NULL", (stamp,))

    def clear_changes(self) -> None:
        """Forget this run's changes, once saved."""
        with self._transaction():
            self._db.execute("UPDATE records SET changed = NULL, fresh = 0 "
                             "WHERE changed IS NOT NULL")  # every fresh record has changed
            self._db.execute("DELETE FROM removed")

    # -- SQLite ----------------------------------------------------------------------------------

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
        pages fetched under the lock, so callers may write to the store while they iterate."""
        last = ""
        while True:
            with self._database():
                rows = self._db.execute(f"{query} ORDER BY uri LIMIT ?", (last, page)).fetchall()
            yield from rows
            if len(rows) < page:
                return
            last = rows[-1][0]
