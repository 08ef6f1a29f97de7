"""What the mirror should hold, and what an audit found, in a scratch SQLite database.

The expectation is a Resource List with the later changes applied, coalesced by URI (the last
change wins); each URI keeps its description and its key at the destination. Memory stays flat
for a million URIs. The book is used from one thread (the pool hands results back to it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from itertools import islice
from typing import Any

from ..protocol.closing import ClosedOnExit
from ..protocol.datetimes import format_datetime, parse_datetime
from ..protocol.hashes import Hashes
from ..protocol.model import Change, Entry
from ..storage.scratch import scratch_database
from .compare import Expected

__all__ = ["Expectations"]

_SCHEMA = """
CREATE TABLE expected (
    uri TEXT PRIMARY KEY, key TEXT, hash TEXT, length INTEGER, lastmod TEXT, type TEXT,
    present INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX expected_key ON expected (key);
CREATE TABLE found (
    kind TEXT NOT NULL, uri TEXT NOT NULL, key TEXT, PRIMARY KEY (kind, uri)
) WITHOUT ROWID;
CREATE INDEX found_key ON found (kind, key);
"""
_UPSERT = """
INSERT INTO expected VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (uri) DO UPDATE SET key = excluded.key, hash = excluded.hash,
    length = excluded.length, lastmod = excluded.lastmod, type = excluded.type,
    present = excluded.present
"""
_BATCH = 5_000
_PAGE = 1_000


class Expectations(ClosedOnExit):
    """URIs the mirror should hold (and should not), with the findings of an audit.

    :param key_of: the destination key of a URI; None where the URI has none.
    """

    def __init__(self, key_of: Callable[[str], str | None]) -> None:
        self._key_of = key_of
        self._db = scratch_database(_SCHEMA)

    # -- the expectation -------------------------------------------------------------------------

    def expect(self, entries: Iterable[Entry]) -> int:
        """Resources listed (a Resource List) or changed (Change Lists, in order: the last
        change of a URI wins); how many entries were read."""
        count, entries = 0, iter(entries)
        while batch := list(islice(entries, _BATCH)):
            self._db.execute("BEGIN")
            self._db.executemany(_UPSERT, map(self._row, batch))
            self._db.execute("COMMIT")
            count += len(batch)
        return count

    def _row(self, entry: Entry) -> tuple[Any, ...]:
        expected = Expected.of(entry)
        lastmod = format_datetime(expected.lastmod) if expected.lastmod else None
        return (expected.uri, self._key_of(expected.uri), str(expected.hashes or ""),
                expected.length, lastmod, expected.type, int(entry.change is not Change.DELETED))

    def present(self) -> Iterator[tuple[Expected, str | None]]:
        """Every resource the mirror should hold, with its key, ordered by URI, streamed."""
        for row in self._pages("SELECT uri, hash, length, lastmod, type, key FROM expected "
                               "WHERE present = 1 AND uri > ?"):
            uri, hash_, length, lastmod, type_, key = row
            yield Expected(uri, Hashes.parse(hash_) or None, length,
                           parse_datetime(lastmod) if lastmod else None, type_), key

    def present_count(self) -> int:
        """How many resources the mirror should hold."""
        count: int = self._db.execute("SELECT count(*) FROM expected WHERE present = 1"
                                      ).fetchone()[0]
        return count

    def expects_key(self, key: str) -> bool:
        """Whether a resource the mirror should hold lives at ``key``."""
        return self._one("SELECT 1 FROM expected WHERE key = ? AND present = 1", key)

    def expects_newer(self, uri: str, than: datetime) -> bool:
        """Whether the mirror should hold ``uri`` in a state dated after ``than``."""
        row = self._db.execute("SELECT lastmod FROM expected WHERE uri = ? AND present = 1",
                               (uri,)).fetchone()
        return row is not None and row[0] is not None and parse_datetime(row[0]) > than

    def expects(self, uri: str) -> bool:
        return self._one("SELECT 1 FROM expected WHERE uri = ? AND present = 1", uri)

    # -- findings --------------------------------------------------------------------------------

    def note(self, kind: str, uri: str, key: str | None) -> None:
        """Record a finding: ``"missing"``, ``"extra"`` or ``"mismatched"``."""
        self._db.execute("INSERT OR REPLACE INTO found VALUES (?, ?, ?)", (kind, uri, key))

    def forget(self, kind: str, uri: str) -> None:
        self._db.execute("DELETE FROM found WHERE kind = ? AND uri = ?", (kind, uri))

    def noted_key(self, kind: str, key: str) -> bool:
        return self._one("SELECT 1 FROM found WHERE kind = ? AND key = ?", kind, key)

    def count(self, kind: str) -> int:
        found: int = self._db.execute("SELECT count(*) FROM found WHERE kind = ?", (kind,)
                                      ).fetchone()[0]
        return found

    def examples(self, kind: str, limit: int) -> list[str]:
        rows = self._db.execute("SELECT uri FROM found WHERE kind = ? ORDER BY uri LIMIT ?",
                                (kind, limit)).fetchall()
        return [row[0] for row in rows]

    def found(self, kind: str) -> Iterator[tuple[str, str | None]]:
        """The findings of ``kind`` as ``(uri, key)``, ordered by URI, streamed."""
        for row in self._pages("SELECT uri, key FROM found WHERE kind = ? AND uri > ?", kind):
            yield row[0], row[1]

    def wrong(self) -> Iterator[tuple[str, Expected, str | None]]:
        """The missing and mismatched resources as ``(kind, expected, key)``, streamed."""
        for kind in ("missing", "mismatched"):
            for row in self._pages(
                    "SELECT e.uri, e.hash, e.length, e.lastmod, e.type, e.key FROM found f "
                    "JOIN expected e ON e.uri = f.uri WHERE f.kind = ? AND f.uri > ?", kind,
                    column="f.uri"):
                uri, hash_, length, lastmod, type_, key = row
                yield kind, Expected(uri, Hashes.parse(hash_) or None, length,
                                     parse_datetime(lastmod) if lastmod else None, type_), key

    # -- internals -------------------------------------------------------------------------------

    def _one(self, query: str, *values: Any) -> bool:
        return self._db.execute(query, values).fetchone() is not None

    def _pages(self, query: str, *values: Any, column: str = "uri") -> Iterator[Sequence[Any]]:
        """Rows of ``query`` (``values``, then the last URI its final ``> ?`` pages on; the
        URI first in each row), a page at a time, so the caller may write while it iterates."""
        last = ""
        while True:
            rows = self._db.execute(f"{query} ORDER BY {column} LIMIT {_PAGE}",
                                    (*values, last)).fetchall()
            yield from rows
            if len(rows) < _PAGE:
                return
            last = rows[-1][0]

    def close(self) -> None:
        self._db.close()
