"""The Source writer's own lookup index: is a URI held, under which key, with which hash and length,
at a cost that grows with the URIs asked about, not with the collection (docs/design.md, "The
Source writer", "Lookups in O(changes)").

Layout, under the index's ``prefix`` at a :class:`Destination`:

- ``manifest.json``: the format version, the generation, its shard count, the stamp (the name of
  the last journal Change List folded in), and how many records each layer holds. No manifest:
  an empty index;
- ``snapshot-<generation>/<shard:05d>.json.gz``: every record, written by :meth:`ShardIndex.rebuild`
  (a compaction) into a new generation with about 1,000 records a shard;
- ``delta-<generation>/<shard:05d>.json.gz``: the records changed since, a removal included (a
  tombstone), written by :meth:`ShardIndex.apply`. A URI's delta record wins over its snapshot one.

A URI falls in shard ``h * shards >> 63``, ``h`` the first 63 bits of the SHA-256 of its UTF-8
bytes: uniform, stable, and monotonic in ``h``. So a rebuild, whatever its shard count, sorts its
records by ``h`` in a scratch SQLite database (whose sorter spills to disk) and gets them shard
after shard, holding only the one it writes: memory stays flat for a million records.

A shard is one gzip'd JSON document, ``{"stamp": ..., "before": ..., "records": [row, ...]}``
(rows as in :mod:`.held`), read whole. One document rather than JSON lines: one ``json.loads``
call parses 1,000 rows in half the time of a call per line (1.3 against 2.7 ms, measured here),
and SQLite's ``json_each`` stores its rows without a Python object per row.
Gzip'd: the URIs, keys and hashes of a shard share long prefixes, which gzip stores once; 1,000
records with an MD5 each are 34 KB instead of 192 KB, and decompressing them costs 0.4 ms, less
than moving the difference to S3 and back. Rows become :class:`ObjectRecord` records only when a
lookup returns them.

Costs: each shard is read at most once while the index is open (a run): read, its rows go into
a scratch SQLite database (:mod:`..scratch`; memory stays flat), which answers every later lookup
in it and every apply to it. A lookup reads, for each shard its URIs fall in, the delta shard and
(unless the delta answers them all) the snapshot shard; an apply folds its changes into the delta
rows, then writes each delta shard they fall in once, then the manifest. So a run of ``n`` changes
reads and writes at most ``min(n, shards)`` shards of each layer, and delta shards stay small
because the writer compacts when the delta holds a tenth of the snapshot's records: no cost grows
with the collection faster than the changes do.

Kills: every write replaces one whole object, and the manifest is written last. A rebuild killed
before its manifest leaves the old generation in use (the next rebuild removes the orphan); an
apply killed before its manifest leaves some delta shards ahead of the manifest's stamp. The
journal is the truth: the writer replays the Change Lists after :attr:`ShardIndex.stamp`, each
with its own name as the stamp, and an apply done again is a no-op on what it already wrote
(each delta shard keeps the stamp that wrote it and how many records it held before, so the
delta count comes out as if the apply had not been interrupted). One writer at a time.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import secrets
import sqlite3
import zlib
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from ..errors import ConfigurationError, DocumentError, InvalidValueError, shown
from ..protocol.closing import ClosedOnExit
from ..storage.base import Destination
from ..storage.scratch import scratch_database
from .record import ObjectRecord, record_from_row, row_of

__all__ = ["MANIFEST", "RECORDS_PER_SHARD", "ShardIndex", "shard_count", "shard_of"]

#: The manifest's name under the index's prefix.
MANIFEST = "manifest.json"
#: Records a snapshot shard holds, about: the shard count is chosen from this at each rebuild.
RECORDS_PER_SHARD = 1_000
#: Changes an apply folds into the scratch database per transaction.
_BATCH = 10_000
_VERSION = 1
_SNAPSHOT, _DELTA = "snapshot", "delta"
_GENERATION = re.compile(r"[0-9A-Za-z-]{1,64}")
_FOLDER = re.compile(rf"({_SNAPSHOT}|{_DELTA})-([0-9A-Za-z-]+)/")
#: Records in arrival order; read back sorted (SQLite's sorter spills to disk), which is faster
#: than keeping them in a B-tree by position as they come.
_SCHEMA = "CREATE TABLE records (position INTEGER, uri TEXT, row TEXT);"
#: The rows of the shards read (or written) while the index is open, by layer (0: snapshot, 1:
#: delta) and URI; a removal's row is ``[uri]``.
_ROWS = """
CREATE TABLE rows (layer INTEGER, uri TEXT, shard INTEGER, row TEXT, PRIMARY KEY (layer, uri))
WITHOUT ROWID;
CREATE INDEX rows_shard ON rows (layer, shard, uri);
"""
_LAYERS = {_SNAPSHOT: 0, _DELTA: 1}
_REBUILD = ("it is derived from the journal: rebuilding it from the collection's documents (its "
            "Resource List and the Change Lists after it) fixes it")


def _position(uri: str) -> int:
    """The first 63 bits of the SHA-256 of ``uri`` (a non-negative SQLite integer)."""
    digest = hashlib.sha256(uri.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def shard_of(uri: str, shards: int) -> int:
    """The shard, of ``shards``, that ``uri`` falls in."""
    return _position(uri) * shards >> 63


def shard_count(records: int) -> int:
    """Shards for ``records`` records: about :data:`RECORDS_PER_SHARD` a shard, at least one."""
    return max(1, -(-records // RECORDS_PER_SHARD))


@dataclass(frozen=True, slots=True)
class _Manifest:
    generation: str
    shards: int
    stamp: str | None
    snapshot_records: int
    delta_records: int

    def to_bytes(self) -> bytes:
        return json.dumps({
            "version": _VERSION, "generation": self.generation, "shards": self.shards,
            "stamp": self.stamp, "snapshot_records": self.snapshot_records,
            "delta_records": self.delta_records}).encode()

    @classmethod
    def parse(cls, data: bytes) -> _Manifest:
        """:raises ValueError: saying what is wrong."""
        found = json.loads(data)
        if not isinstance(found, dict) or found.get("version") != _VERSION:
            raise ValueError(f"it is not a version {_VERSION} manifest")
        generation, stamp = found.get("generation"), found.get("stamp")
        counts = [count for count in (found.get(name) for name in (
            "shards", "snapshot_records", "delta_records")) if type(count) is int and count >= 0]
        if not (isinstance(generation, str) and _GENERATION.fullmatch(generation)
                and isinstance(stamp, str | None) and len(counts) == 3 and counts[0] >= 1):
            raise ValueError("a field is missing or has the wrong type")
        return cls(generation, counts[0], stamp, counts[1], counts[2])


@dataclass(frozen=True, slots=True)
class _Shard:
    """What a shard says besides its rows: the stamp of the apply that wrote it, how many rows
    it held before that apply, and how many it holds."""

    stamp: str | None
    before: int
    count: int


_EMPTY = _Shard(None, 0, 0)


def _shard_bytes(stamp: str | None, before: int, rows: Iterable[str]) -> bytes:
    text = f'{{"stamp":{json.dumps(stamp)},"before":{before},"records":[{",".join(rows)}]}}'
    return gzip.compress(text.encode(), compresslevel=6, mtime=0)


def _parse_shard(data: bytes) -> tuple[_Shard, str]:
    """What a shard says, and its JSON text.

    :raises ValueError, OSError, EOFError, zlib.error: saying what is wrong."""
    text = gzip.decompress(data).decode()
    found = json.loads(text)
    if not (isinstance(found, dict) and isinstance(found.get("stamp"), str | None)
            and type(found.get("before")) is int and isinstance(found.get("records"), list)
            and all(isinstance(row, list) and row and isinstance(row[0], str)
                    for row in found["records"])):
        raise ValueError("it is not a shard of stamp, before and records")
    return _Shard(found["stamp"], found["before"], len({row[0] for row in found["records"]})), text


def _by_shard(rows: Iterable[tuple[int, str, str]], shards: int) -> Iterator[list[str]]:
    """The row texts of each of ``shards`` shards in turn (empty ones too), from ``rows`` of
    ``(position, uri, text)`` sorted by position and URI: of rows for one URI, the last."""
    shard, last = 0, None
    texts: list[str] = []
    for position, uri, text in rows:
        while shard < position * shards >> 63:
            yield texts
            shard, texts = shard + 1, []
        if uri == last:
            texts[-1] = text
        else:
            texts.append(text)
        last = uri
    yield texts
    yield from ([] for _ in range(shard + 1, shards))


def _batches(changes: Iterable[tuple[str, ObjectRecord | None]]
             ) -> Iterator[list[tuple[str, ObjectRecord | None]]]:
    iterator = iter(changes)
    while batch := list(islice(iterator, _BATCH)):
        yield batch


class ShardIndex(ClosedOnExit):
    """The lookup index at ``prefix`` (a folder of its own) of ``destination``: :meth:`open` or
    :meth:`build` it, then :meth:`lookup`, :meth:`apply` and :meth:`rebuild`, from one thread
    at a time; :meth:`close` (or ``with``) drops the shards read.

    :raises ConfigurationError: ``prefix`` is empty (the destination's root).
    """

    def __init__(self, destination: Destination, prefix: str, manifest: _Manifest | None
                 ) -> None:
        if not prefix.strip("/"):
            raise ConfigurationError(
                f"the lookup index at {destination.url} needs a folder of its own (a prefix "
                "such as '.resourcesync/index/'), not the destination's root: a rebuild deletes "
                "the other generations' folders under it")
        self._destination = destination
        self._prefix = prefix if prefix.endswith("/") else prefix + "/"
        self._manifest = manifest
        self._rows: sqlite3.Connection | None = None  # made at the first shard read
        #: The shards in the scratch database, by layer and shard number.
        self._read: dict[str, dict[int, _Shard]] = {_SNAPSHOT: {}, _DELTA: {}}

    @classmethod
    def open(cls, destination: Destination, prefix: str) -> ShardIndex:
        """The index as its manifest says; an empty one if there is none.

        :raises DocumentError: the manifest cannot be read (it names the key).
        """
        index = cls(destination, prefix, None)
        key = index._prefix + MANIFEST
        data = destination.read_bytes(key)
        if data is not None:
            try:
                index._manifest = _Manifest.parse(data)
            except ValueError as exc:
                raise index._unreadable(key, "manifest", exc) from exc
        return index

    @classmethod
    def build(cls, destination: Destination, prefix: str, records: Iterable[ObjectRecord],
              stamp: str) -> ShardIndex:
        """A new index of ``records`` in place of whatever is at ``prefix``, read or not (the
        way out when :meth:`open` finds it unreadable); see :meth:`rebuild`."""
        index = cls(destination, prefix, None)
        index.rebuild(records, stamp)
        return index

    def close(self) -> None:
        """Drop the shards read (the scratch database)."""
        if self._rows is not None:
            self._rows.close()
            self._rows = None
        self._read = {_SNAPSHOT: {}, _DELTA: {}}

    @property
    def stamp(self) -> str | None:
        """The name of the last journal Change List folded in; None for an empty index."""
        return self._manifest.stamp if self._manifest else None

    @property
    def snapshot_records(self) -> int:
        """Records in the snapshot layer (as of the last rebuild)."""
        return self._manifest.snapshot_records if self._manifest else 0

    @property
    def delta_records(self) -> int:
        """Records in the delta layer, removals included: what changed since the snapshot."""
        return self._manifest.delta_records if self._manifest else 0

    # -- reading ---------------------------------------------------------------------------------

    def lookup(self, uris: Iterable[str]) -> dict[str, ObjectRecord | None]:
        """What the index holds for each of ``uris`` (None: not held, or removed).

        :raises DocumentError: a shard cannot be read (it names the key).
        """
        manifest = self._manifest
        if manifest is None:
            return dict.fromkeys(uris)
        found: dict[str, ObjectRecord | None] = {}
        for uri in uris:
            shard = shard_of(uri, manifest.shards)
            self._shard(manifest, _DELTA, shard)
            layer, row = _DELTA, self._row(_DELTA, uri)
            if row is None and manifest.snapshot_records:
                self._shard(manifest, _SNAPSHOT, shard)
                layer, row = _SNAPSHOT, self._row(_SNAPSHOT, uri)
            try:
                found[uri] = record_from_row(json.loads(row))[1] if row is not None else None
            except ValueError as exc:
                raise self._unreadable(self._key(layer, manifest.generation, shard),
                                       f"{layer} shard", exc) from exc
        return found

    def _row(self, layer: str, uri: str) -> str | None:
        assert self._rows is not None  # a shard was read
        found = self._rows.execute("SELECT row FROM rows WHERE layer = ? AND uri = ?",
                                   (_LAYERS[layer], uri)).fetchone()
        return found[0] if found else None

    def _shard(self, manifest: _Manifest, layer: str, shard: int) -> _Shard:
        """What ``shard`` of ``layer`` says, its rows in the scratch database: read the first
        time only."""
        known = self._read[layer].get(shard)
        if known is not None:
            return known
        key = self._key(layer, manifest.generation, shard)
        data = self._destination.read_bytes(key)
        rows = self._database()
        if data is None:
            if layer == _SNAPSHOT:
                raise self._unreadable(key, "snapshot shard", "it is missing")
            content = _EMPTY
        else:
            try:
                content, text = _parse_shard(data)
            except (ValueError, OSError, EOFError, zlib.error) as exc:
                raise self._unreadable(key, f"{layer} shard", exc) from exc
            rows.execute(
                "INSERT OR REPLACE INTO rows SELECT ?, json_extract(value, '$[0]'), ?, value "
                "FROM json_each(?, '$.records')", (_LAYERS[layer], shard, text))
        self._read[layer][shard] = content
        return content

    def _database(self) -> sqlite3.Connection:
        if self._rows is None:
            self._rows = scratch_database(_ROWS, shared=True)
        return self._rows

    def _key(self, layer: str, generation: str, shard: int) -> str:
        return f"{self._prefix}{layer}-{generation}/{shard:05d}.json.gz"

    def _unreadable(self, key: str, what: str, why: object) -> DocumentError:
        return DocumentError(f"the Source writer's lookup index {what} is not readable ({why}); "
                             f"{_REBUILD}", url=self._destination.object_url(key))

    # -- writing ---------------------------------------------------------------------------------

    def apply(self, changes: Iterable[tuple[str, ObjectRecord | None]], stamp: str) -> None:
        """Fold ``changes`` (``(uri, record)``, None for a removal; the last for a URI wins) into
        the delta shards they fall in, each written once, then write the manifest with
        ``stamp``, the name of the last journal Change List they come from. Applying the same
        changes with the same stamp again leaves the same index, also after an apply killed
        part way.

        :raises InvalidValueError: a record's URI is not the URI it is given for.
        :raises DocumentError: a delta shard it rewrites cannot be read.
        """
        manifest = self._manifest or _Manifest(_new_generation(), 1, None, 0, 0)
        committed: dict[int, int] = {}  # shard -> records it held as of the manifest
        befores: dict[int, int] = {}  # shard -> what it held before this stamp's apply
        rows = self._database()
        for batch in _batches(changes):
            folded = []
            for uri, record in batch:
                if record is not None and record.uri != uri:
                    raise InvalidValueError(f"the record of {shown(record.uri)} is given for "
                                            f"another URI, {shown(uri)}")
                shard = shard_of(uri, manifest.shards)
                if shard not in committed:
                    old = self._shard(manifest, _DELTA, shard)
                    again = old.stamp == stamp  # this stamp wrote it: keep what it held before
                    killed = again and manifest.stamp != stamp
                    committed[shard] = old.before if killed else old.count
                    befores[shard] = old.before if again else old.count
                folded.append((_LAYERS[_DELTA], uri, shard, json.dumps(row_of(uri, record))))
            rows.execute("BEGIN")
            rows.executemany("INSERT OR REPLACE INTO rows VALUES (?, ?, ?, ?)", folded)
            rows.execute("COMMIT")
        held = 0
        for shard in sorted(committed):
            texts = [text for text, in rows.execute(
                "SELECT row FROM rows WHERE layer = ? AND shard = ? ORDER BY uri",
                (_LAYERS[_DELTA], shard))]
            self._destination.write_bytes(self._key(_DELTA, manifest.generation, shard),
                                          _shard_bytes(stamp, befores[shard], texts),
                                          "application/gzip")
            self._read[_DELTA][shard] = _Shard(stamp, befores[shard], len(texts))
            held += len(texts) - committed[shard]
        self._commit(replace(manifest, stamp=stamp, delta_records=manifest.delta_records + held))

    def rebuild(self, records: Iterable[ObjectRecord], stamp: str) -> None:
        """Compaction: :meth:`rebuild_rows` of ``records``."""
        self.rebuild_rows((row_of(record.uri, record) for record in records), stamp)

    def rebuild_rows(self, rows: Iterable[list[Any]], stamp: str) -> None:
        """Compaction: every record of ``rows`` (JSON rows, :func:`.held.row_of`; the last for
        a URI wins) into the snapshot shards of a new generation, with an empty delta, then the
        manifest naming it, with ``stamp``; then the files of every other generation (the old
        one, and those of killed rebuilds) are deleted. Memory stays flat: the records are
        grouped by shard in a scratch SQLite database."""
        generation = _new_generation()
        with closing(scratch_database(_SCHEMA)) as database:
            database.execute("BEGIN")
            database.executemany(
                "INSERT INTO records VALUES (?, ?, ?)",
                ((_position(row[0]), row[0], json.dumps(row)) for row in rows))
            database.execute("COMMIT")
            # Duplicates counted too: the shard count is an estimate, the record count is not.
            shards = shard_count(database.execute("SELECT count(*) FROM records").fetchone()[0])
            rows = database.execute(
                "SELECT position, uri, row FROM records ORDER BY position, uri, rowid")
            count = 0
            for shard, texts in enumerate(_by_shard(rows, shards)):
                self._destination.write_bytes(self._key(_SNAPSHOT, generation, shard),
                                              _shard_bytes(stamp, 0, texts), "application/gzip")
                count += len(texts)
        self._commit(_Manifest(generation, shards, stamp, count, 0))
        self.close()  # the shards read are the old generation's
        for key in list(self._destination.keys(self._prefix)):
            folder = _FOLDER.match(key[len(self._prefix):])
            if folder and folder.group(2) != generation:
                self._destination.delete(key)

    def _commit(self, manifest: _Manifest) -> None:
        self._destination.write_bytes(self._prefix + MANIFEST, manifest.to_bytes(),
                                      "application/json")
        self._manifest = manifest


def _new_generation() -> str:
    """A generation id never used before: the UTC time and 32 random bits."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"
