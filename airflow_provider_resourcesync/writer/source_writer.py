"""The Source writer: a collection's ResourceSync documents at a destination, kept over time
(docs/design.md, "The Source writer"), for the mirror's own state and for the publisher.

Under its location, a :class:`SourceWriter` keeps

- ``resourcelist.xml``: the snapshot, a Resource List of every record (:mod:`.snapshot`);
- ``changes/<UTC timestamp>.xml``: the journal, a Change List per save that found the collection
  changed (every save but the first), from the save before, and ``changelist.xml``, the Change
  List Index over them (:mod:`.journal`);
- ``capabilitylist.xml`` and ``description.xml``: the Capability List (9) and Source
  Description (8) over them, and whatever else the caller lists (a Change Dump);
- ``checkpoint.json``: the caller's last checkpoint, written last (:mod:`.checkpoint`);
- ``index/``: the lookup index (:mod:`.shards`), derived from the documents: brought up to date
  on load by replaying the Change Lists listed after its stamp (built from the Resource List
  first for a collection that has none), folded into on every save, rebuilt with the Resource
  List.

During a run, what the run changed (or, for a run that reads every record, every record) lives
in a scratch SQLite database (:mod:`.records`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Self

from ..errors import DocumentError, InvalidValueError
from ..protocol.closing import ClosedOnExit
from ..protocol.datetimes import as_datetime, micros
from ..protocol.hashes import Hashes
from ..protocol.model import MAX_ENTRIES, Change, Entry, Head, Link, Metadata
from ..storage.base import Destination
from ..storage.keys import RESERVED_PREFIX
from .checkpoint import SavedRecord
from .documents import (
    CAPABILITY_LIST,
    CHANGE_LIST_INDEX,
    CHECKPOINT,
    DESCRIPTION,
    DOCUMENTS_MAX_AGE,
    INDEX,
    RESOURCE_LIST,
    Documents,
    base_url,
)
from .journal import Journal, stamp_at
from .record import ObjectRecord
from .records import RecordStore, record_of, stored_json_row
from .shards import ShardIndex
from .snapshot import Snapshot

__all__ = ["RESOURCE_LIST_MAX_AGE", "Saving", "SourceWriter"]

#: Compaction: the Resource List is rewritten once the records changed since it pass this share
#: of it (docs/design.md, "The Source writer": 10 record writes per change, amortized, and a
#: replay at most 10% longer than the snapshot for a Destination baselining from the writer).
_COMPACT_AT = 0.1
#: Staleness: the Resource List is also rewritten once the oldest save whose changes it lacks is
#: this old (docs/design.md, "Late joiners"), so a follower that reads it and no Change List (a
#: Destination that reads no Change List Index, as resync) lacks at most a day of changes.
RESOURCE_LIST_MAX_AGE = timedelta(days=1)
#: The least step between two saves' times: a Change List's name holds its save's time to it.
_TICK = timedelta(microseconds=1)


@dataclass(slots=True)
class Saving:
    """A save between its halves (:meth:`SourceWriter.saving`)."""

    _snapshot_at: Callable[[], datetime | None]
    #: Entries the Capability List lists besides the Resource List and the Change List Index.
    capabilities: list[Entry] = field(default_factory=list)

    def snapshot_at(self) -> datetime | None:
        """The Resource List's ``at`` where it is as of this save (written by it, or by a save
        of the same time killed after writing it), else None (read when asked)."""
        return self._snapshot_at()


class SourceWriter(ClosedOnExit):
    """What a collection holds, for one run, and its documents kept over time.

    A run that asks about some URIs (an incremental run, however many it changes) reads what it
    asks for from the lookup index, each shard once, and keeps only what it changes in a scratch
    SQLite database; a run that reads every record (:meth:`records`, :meth:`mark_seen`,
    :meth:`unseen`, ``len()``) reads the Resource List and the Change Lists after it into that
    database, once.

    Made by :meth:`load`; :meth:`save` writes the documents back. ``with`` closes it.

    :param destination: where the documents live.
    :param public_base_url: the URL the destination is published under (``https://...``), for
        a collection others sync from (14.8); it is saved with the checkpoint and kept by later
        runs until another is given. Without one, each document's URL is the destination's own.
    :param location: the key prefix the documents live under (ending with ``/``).
    :param resources_url: where the collection's objects are served (an http(s) URL ending with
        ``/``), when not beside the documents: each entry's ``loc`` is then the record's URI (the
        publisher's ``base_url`` and the key) and carries no ``via`` link. None (the mirror):
        each ``loc`` is the object's URL beside the documents, with a ``via`` link to the
        record's URI, its origin.
    :param clock: the writer's clock, which dates its changes and its saves (tests give their
        own; a publisher gives the time of its inventory).
    :param resource_list_max_age: rewrite the Resource List at a save (a compaction) once the oldest
        save whose changes it lacks is this old, besides when those changes pass a tenth of it;
        None: the size rule alone. Each rewrite costs the whole collection, so a shorter age
        costs more (``benchmarks/writer.py`` (b)).
    :param keep_changes_for: at each save, retire the Change Lists (and the documents of a
        :meth:`series` given to :meth:`retire`) that end before this long ago, or before the
        Resource List's ``at`` if that is earlier (a follower baselining from it reads the
        changes after it); None (the mirror's): keep every one (the oldest go past 50,000).
    :param documents_max_age: how long a cache may keep a document that saves rewrite
        (:meth:`cache_control`).
    :param max_entries: the most entries one document holds; a list of more is split into
        parts under an index (section 7's 50,000; tests give fewer to split small collections).
    :raises InvalidValueError: ``resource_list_max_age`` or ``keep_changes_for`` is negative.
    :raises ConfigurationError: ``documents_max_age`` is not a non-negative ``timedelta``.
    """

    def __init__(self, destination: Destination, *, public_base_url: str | None = None,
                 location: str = RESERVED_PREFIX, resources_url: str | None = None,
                 clock: Callable[[], datetime] | None = None,
                 resource_list_max_age: timedelta | None = RESOURCE_LIST_MAX_AGE,
                 keep_changes_for: timedelta | None = None,
                 documents_max_age: timedelta = DOCUMENTS_MAX_AGE,
                 max_entries: int = MAX_ENTRIES) -> None:
        if location and not location.endswith("/"):
            raise InvalidValueError(f"documents location {location!r} must end with '/'")
        if resource_list_max_age is not None and resource_list_max_age < timedelta(0):
            raise InvalidValueError(f"the Resource List's age bound {resource_list_max_age} is "
                                    "negative; give a duration, or None for no bound")
        if keep_changes_for is not None and keep_changes_for < timedelta(0):
            raise InvalidValueError(f"keep_changes_for={keep_changes_for} is negative; give a "
                                    "duration, or None to keep every change")
        self._max_age = resource_list_max_age
        self._keep = keep_changes_for
        self.destination = destination
        self.location = location
        self._documents = Documents(destination, location, base_url(public_base_url)
                                    if public_base_url is not None else None,
                                    base_url(resources_url) if resources_url is not None
                                    else None, documents_max_age, max_entries)
        self._journal = Journal(self._documents)
        self._snapshot = Snapshot(self._documents)
        self._clock = clock or _now
        self._store = RecordStore()
        self._checkpoint: dict[str, Any] | None = None
        self._saved_at: datetime | None = None
        #: The Resource List's ``at``, as the last save kept it (None: not kept, read it).
        self._snapshot_at: datetime | None = None
        self._changelist: str | None = None
        self._index: ShardIndex | None = None
        self._full = True  # every record is in the store: nothing saved yet, or all read
        self._compact = False  # the Resource List must be rewritten at the next save
        self._lazy = threading.RLock()  # lookups and reading everything, one thread at a time
        #: A save was made before (its checkpoint record, or its Resource List, is there).
        self.made = False

    @classmethod
    def load(cls, destination: Destination, **options: Any) -> Self:
        """The state recorded at ``destination`` (empty if none), made with ``options`` (as
        the constructor takes them): its checkpoint, and its lookup index brought up to date.

        :raises DocumentError: if a stored document cannot be read or was not written by us.
        :raises DestinationError: if the destination cannot be read.
        """
        state = cls(destination, **options)
        try:
            state._load()
        except BaseException:
            state.close()
            raise
        return state

    # -- records ---------------------------------------------------------------------------------

    def get(self, uri: str) -> ObjectRecord | None:
        if self._full:
            return self._store.get(uri)
        with self._lazy:
            known, record = self._store.find(uri)
            return record if known or self._full else self._lookup(uri)

    def put(self, record: ObjectRecord, *, when: datetime | None = None) -> None:
        """Record an object (replacing what was recorded for its URI), changed ``when`` (None:
        now by the writer's clock) if it changed. Records are written in batches; every read
        sees them all."""
        now = micros(when or self._now(), "the change time")
        if not self._full:
            with self._lazy:
                known, held = self._store.find(record.uri)
                if not (known or self._full):
                    held = self._lookup(record.uri)
                    if not self._full:  # the store records what this run changes only
                        if held != record:
                            self._store.put(record, now, fresh=held is None)
                        return
        self._store.put(record, now)

    def remove(self, uri: str, *, when: datetime | None = None) -> None:
        """Forget the object of ``uri`` (its key is kept for this run's Change List), removed
        ``when`` (None: now by the writer's clock)."""
        now = micros(when or self._now(), "the change time")
        held = self.get(uri)
        if held is not None:
            self._store.remove(uri, held.key, now)

    def _now(self) -> datetime:
        """The writer's clock, never at or behind the last save (a clock behind another
        host's): a change dated before it would be dated before the Resource List's ``at``,
        which a follower standing there, or baselining from it, takes as already had."""
        now = self._clock()
        return now if self._saved_at is None else max(now, self._saved_at + _TICK)

    def __len__(self) -> int:
        self._materialize()
        return len(self._store)

    def records(self) -> Iterator[ObjectRecord]:
        """Every record, ordered by URI, streamed (read from the Resource List and the Change
        Lists after it, once per run)."""
        self._materialize()
        return (record_of(row) for row in self._store.rows())

    # -- what the Source no longer lists ---------------------------------------------------------

    def mark_seen(self, uri: str) -> None:
        """Note that the Source still lists ``uri`` (nothing if it is not held).
        Marks are written in batches; :meth:`unseen` sees every one made before it."""
        self._materialize()
        self._store.mark_seen(uri)

    def unseen(self) -> Iterator[str]:
        """The URIs held and not marked seen since the state was loaded, ordered, streamed."""
        self._materialize()
        return self._store.unseen()

    # -- what was held before this run -----------------------------------------------------------

    def _lookup(self, uri: str) -> ObjectRecord | None:
        """What the lookup index holds for ``uri`` (under the lazy lock): each shard is read
        once per run however many lookups fall in it, so a run costs in proportion to its
        changes (at most the index) and never reads or rewrites the Resource List for them."""
        index = self._index
        assert index is not None
        try:
            return index.lookup([uri])[uri]
        except DocumentError:  # a shard cannot be read: read everything, rebuild at the save
            self._compact = True
            self._materialize()
            return self._store.get(uri)

    def _materialize(self) -> None:
        """Every record into the store, beneath what this run recorded: the Resource List and
        the Change Lists after it (a run that reads everything anyway, or a compaction)."""
        if self._full:
            return
        with self._lazy:
            if self._full:
                return
            changes = ((uri, _stored_row(held, stored))
                       for stamp, keys in self._journal.since(self._snapshot_stamp())
                       for uri, held, stored in self._journal.changes(keys))
            self._store.fill(self._snapshot.rows(), changes)
            self._full = True

    def _snapshot_stamp(self) -> str:
        at = self._snapshot.at()
        return stamp_at(at) if at is not None else ""

    # -- checkpoint ------------------------------------------------------------------------------

    def checkpoint(self) -> dict[str, Any] | None:
        """The checkpoint of the last :meth:`save`; None if there was none."""
        return self._checkpoint

    # -- saving ----------------------------------------------------------------------------------

    def save(self, *, checkpoint: dict[str, Any] | None, capabilities: Iterable[Entry] = ()
             ) -> None:
        """Write the documents, then ``checkpoint.json``, as of now by the writer's
        clock: the Resource List's ``at``, and the ``lastmod`` of what changed since the last
        save.

        Past the first save, what changed since the last one (objects recorded anew or with
        another description, objects removed) goes in a Change List of its own (12.1), listed
        in the Change List Index (12.2): each change dated when it was made, by
        its clock (as in 14.8's examples; the ``via`` link keeps the Source's ``modified``),
        each list from the one before to this one, so the lists follow each other and a
        Destination of the collection misses none of its changes, whichever run made them.

        Dating the Resource List by the writer's clock, not an origin's, is what lets a
        Destination go from its ``at`` to the first Change List with no gap.

        The Resource List is rewritten only at a compaction: when the records changed since it
        pass a tenth of it (:data:`_COMPACT_AT`), when the oldest save whose changes it lacks
        is ``resource_list_max_age`` old, when this run read every record anyway (a
        baseline, an audit), when the public URL changed, or when no Change List holds this
        run's changes (no ``checkpoint.json`` to go on from); otherwise it stays as it was, and
        it and the Change Lists after its ``at`` are the collection now.

        The order of the writes is what makes a save killed between any two of them lose no
        change, for the writer or for a Destination of it: the journal first (the Change List,
        then the index that lists it), then the lookup index (its manifest last), then at a
        compaction the Resource List and a new lookup index, then what the caller writes with
        them (:meth:`saving`), then the Capability List and Source Description that point at
        them, and ``checkpoint.json`` last. Killed after the
        Change List, the next run replays it into the lookup index on load and finds its
        changes recorded: it lists nothing twice. Nothing points at a document not yet written.

        :param checkpoint: the checkpoint to keep, JSON-serializable; None: none yet (an
            incomplete first run).
        :param capabilities: entries the Capability List lists besides the Resource List and
            the Change List Index (a publisher's Change Dump), written before this save.
        :raises InvalidValueError: for a checkpoint JSON cannot carry; nothing is written then.
        """
        with self.saving(checkpoint=checkpoint) as saving:
            saving.capabilities.extend(capabilities)

    @contextmanager
    def saving(self, *, checkpoint: dict[str, Any] | None) -> Iterator[Saving]:
        """:meth:`save` in two halves, for what goes with the Resource List (a publisher's
        Resource Dump, 11.1): entering writes the journal, the lookup index and, at a
        compaction, the Resource List; the block writes what goes with them (where
        :meth:`Saving.snapshot_at` says the Resource List is as of this save) and adds the
        entries the Capability List lists for it to :attr:`Saving.capabilities`; leaving the
        block writes the Capability List, the Source Description and ``checkpoint.json``. An
        error in the block writes nothing more: the save stands as a kill there leaves it.

        :raises InvalidValueError: for a checkpoint JSON cannot carry; nothing is written then.
        """
        now, saved = self._save_changes(checkpoint)
        saving = Saving(lambda: now if self._snapshot.at() == now else None)
        yield saving
        self._save_capabilities(now, saved, saving.capabilities)

    def _save_changes(self, checkpoint: dict[str, Any] | None) -> tuple[datetime, SavedRecord]:
        """The first half of a save (:meth:`saving`): its time, and the record it keeps."""
        # a clock at or behind the one that saved before: just after it, so this save's
        # Change List is named after the last one's instead of writing over it
        now = self._now()
        last = self._store.last_change()
        # the first save writes no Change List: its Resource List is where Destinations start
        journal = self._saved_at is not None and last is not None
        # a quiet save reads the index too where the Resource List's age is bounded: the
        # changes it lacks may have come before it
        listed = self._journal.listed() if journal or self._changelist is None or (
            self._max_age is not None and self._saved_at is not None) else []
        # no index yet (a first save; a collection saved before there was one, or by a save
        # killed before the index of its first list, replayed on load): one is written, with
        # no list yet, so that a follower's incremental run finds nothing new where nothing
        # changed instead of no Change List at all (spec 12.2: zero or more entries)
        unindexed = not journal and self._changelist is None and \
            not self._journal.index_exists()
        changelist = self._changelist
        if journal:
            changelist = self._journal.list_key(now)
        elif changelist is None:
            changelist = self.key(CHANGE_LIST_INDEX)
        saved = SavedRecord(now, changelist, checkpoint, self._documents.base)
        saved.to_bytes()  # a checkpoint JSON cannot carry is refused before anything is written
        index = self._index = self._index or self._open_index()
        self._store.mark_stored(micros(now, "the clock's time"))
        if journal:
            assert self._saved_at is not None and changelist is not None and last is not None
            start = self.series_start(listed) or self._saved_at
            end = max(now, start, as_datetime(last) or start)
            self._journal.write_index([*listed, *self._journal.write_list(
                changelist, start, end, self._store.changes())])
            self._journal.drop_unlisted(listed, changelist)
            try:
                index.apply(self._changed(), stamp_at(now))
            except DocumentError:  # a shard cannot be read: the index is rebuilt below
                self._compact = True
        elif unindexed:
            # from the snapshot's at: this save's, if it is the first
            self._journal.write_index(listed, start=(
                self.series_start(listed) if listed or self._saved_at is not None else None)
                or now)
        self._changelist = changelist
        # changes no Change List holds (no checkpoint.json to go on from) go in the snapshot
        if self._compact or self._full or (last is not None and not journal) or (
                index.delta_records > _COMPACT_AT * index.snapshot_records) or (
                self._saved_at is not None and self._stale(listed, now, changed=journal)):
            self._materialize()
            self._snapshot.write(now, self._store.rows())
            self._snapshot_at = now
            index.rebuild_rows(map(stored_json_row, self._store.rows()), stamp_at(now))
            self._compact = False
        self.retire()
        return now, saved

    def _save_capabilities(self, now: datetime, saved: SavedRecord,
                           capabilities: list[Entry]) -> None:
        """The second half of a save (:meth:`saving`)."""
        documents = self._documents
        documents.write(self.key(CAPABILITY_LIST), Head(
            md=Metadata(capability="capabilitylist"),
            links=(Link(rel="up", href=self.url(self.key(DESCRIPTION))),)),
            [*self._capabilities(), *capabilities])
        documents.write(self.key(DESCRIPTION), Head(md=Metadata(capability="description")), [
            Entry(self.url(self.key(CAPABILITY_LIST)), md=Metadata(capability="capabilitylist"))])
        if self._snapshot_at is None:  # a first save killed after its Resource List, made
            self._snapshot_at = self._snapshot.at()  # again: kept, not read from the list later
        record = replace(saved, snapshot_at=self._snapshot_at).to_bytes()
        self.destination.write_bytes(self.key(CHECKPOINT), record, "application/json")
        self._store.clear_changes()
        self._checkpoint = json.loads(record)["checkpoint"]
        self._saved_at = now


    @property
    def public_base_url(self) -> str | None:
        """The URL the destination is published under, given or saved; None if none."""
        return self._documents.base

    @public_base_url.setter
    def public_base_url(self, url: str) -> None:
        base = base_url(url)
        self._compact = self._compact or base != self._documents.base
        self._documents.base = base

    def url(self, key: str) -> str:
        """Where the object at ``key`` is published: under ``public_base_url`` if given, else
        the destination's own URL."""
        return self._documents.url(key)

    def cache_control(self, key: str) -> str:
        """The ``Cache-Control`` of the object at ``key``: :data:`~.documents.IMMUTABLE` for
        what is named by its time, else ``documents_max_age``
        (:meth:`.documents.Documents.cache_control`)."""
        return self._documents.cache_control(key)

    def key(self, name: str) -> str:
        """The key of a document named as under :data:`RESERVED_PREFIX` (``RESOURCE_LIST``...),
        under this writer's location."""
        return self._documents.key(name)

    def series_start(self, listed: list[Entry], series: Journal | None = None
                     ) -> datetime | None:
        """Where the next document of ``series`` (the journal by default; a publisher's Change
        Dumps) starts, ``listed`` being those its index lists: the last one's ``until``; with
        none listed yet, the index's own ``from`` (the first Resource List's ``at``: a later
        one, rewritten by a compaction that changed nothing, would leave the time since the
        first uncovered for a follower that baselined from it); else the Resource List's
        ``at``. Not the last save's time: saves that found nothing to list write no document,
        and a document from their time would leave the time since the last one covered by none,
        a gap for every follower standing there (docs/design.md, "Continuity"). A killed save's
        document, listed after the save before, counts too.

        :raises DocumentError: the index or the Resource List, needed, cannot be read.
        """
        last = listed[-1].md if listed else None
        if last is not None and last.until is not None:
            return last.until
        return (series or self._journal).start() or self._snapshot_at or self._snapshot.at()

    def _stale(self, listed: list[Entry], now: datetime, *, changed: bool) -> bool:
        """Whether the oldest save whose changes the Resource List lacks (of the lists in
        ``listed``, else this one if it ``changed`` anything) is ``resource_list_max_age`` old
        at ``now``; a quiet save compacts too, so the bound holds when changes stop. A list's
        ``until``, not its ``from``: after a quiet spell a list starts where the last one ended,
        long before its first change."""
        if self._max_age is None:
            return False
        at = self._snapshot_at or self._snapshot.at()
        lacked = [entry.md.until for entry in listed if entry.md is not None
                  and entry.md.until is not None and (at is None or entry.md.until > at)]
        if not (lacked or changed):
            return False
        return now - min(lacked, default=now) >= self._max_age

    def series(self, capability: str, index: str, folder: str,
               retiring: Callable[[list[Entry]], None] | None = None) -> Journal:
        """Another series of documents kept one per save as the journal is, in an index of
        their own (a publisher's Change Dumps, 13.1): ``index`` and ``folder`` are named as
        under :data:`RESERVED_PREFIX`; ``retiring`` is given each retired document's entries
        before it is deleted (to delete what they name)."""
        return Journal(self._documents, capability=capability, index=index, folder=folder,
                       retiring=retiring)

    def retire(self, series: Journal | None = None) -> None:
        """Retire the documents of ``series`` (the journal by default; the save retires it)
        that end before ``keep_changes_for`` ago by the writer's clock, or before the Resource
        List's ``at`` where that is earlier: never a change the Resource List lacks
        (docs/design.md, "Retention"). The index is rewritten first, then they are deleted; a
        save killed between, and made again, deletes them. Nothing with ``keep_changes_for``
        None.

        :raises DocumentError: the index, or a document retired, cannot be read.
        """
        if self._keep is None:
            return
        at = self._snapshot_at or self._snapshot.at()
        if at is not None:
            (series or self._journal).retire(min(self._clock() - self._keep, at))

    def close(self) -> None:
        """Drop the scratch databases."""
        self._store.close()
        if self._index is not None:
            self._index.close()

    def _capabilities(self) -> list[Entry]:
        entries = [Entry(self.url(self.key(RESOURCE_LIST)),
                         md=Metadata(capability="resourcelist"))]
        if self._changelist is not None:
            entries.append(Entry(self.url(self.key(CHANGE_LIST_INDEX)),
                                 md=Metadata(capability="changelist")))
        return entries

    # -- loading ---------------------------------------------------------------------------------

    def _load(self) -> None:
        data = self.destination.read_bytes(self.key(CHECKPOINT))
        if data is not None:
            saved = SavedRecord.parse(data, self.destination.object_url(self.key(CHECKPOINT)))
            self._saved_at = saved.saved_at
            self._snapshot_at = saved.snapshot_at
            self._changelist = saved.changelist
            self._checkpoint = saved.checkpoint
            if self._documents.base is None:
                self._documents.base = saved.public_url
            # the Resource List's locs are under the base it was written with
            self._compact = self._documents.base != saved.public_url
        self._full = not self._snapshot.exists()
        self.made = data is not None or not self._full
        self._index = self._open_index()

    def _open_index(self) -> ShardIndex:
        """The lookup index, brought up to date with the journal (:meth:`_replayed`). It is
        derived from the documents: one that cannot be read is built again from them."""
        prefix = self.key(INDEX)
        try:
            return self._replayed(ShardIndex.open(self.destination, prefix))
        except DocumentError:  # a fault in the documents themselves is raised again below
            return self._replayed(ShardIndex(self.destination, prefix, None))

    def _replayed(self, index: ShardIndex) -> ShardIndex:
        """``index`` with the Change Lists listed after its stamp folded in, each stamped with
        its own name, so a save killed after its Change List Index finds its changes recorded.
        A collection with none yet (written before there was one) gets one built from its Resource
        List first."""
        if index.stamp is None and self._snapshot.exists():
            index.close()
            index = ShardIndex.build(self.destination, self.key(INDEX),
                                     self._snapshot.records(), self._snapshot_stamp())
        for stamp, keys in self._journal.since(index.stamp):
            index.apply(((uri, held) for uri, held, _ in self._journal.changes(keys)), stamp)
        return index

    def _changed(self) -> Iterator[tuple[str, ObjectRecord | None]]:
        """This run's changes, as the lookup index takes them."""
        for _, uri, change, key, length, hash_, lastmod, type_, _ in self._store.changes():
            yield uri, (None if change == Change.DELETED else ObjectRecord(
                uri, key, length, Hashes.parse(hash_), as_datetime(lastmod), type_))



def _stored_row(held: ObjectRecord | None, stored: datetime | None) -> tuple[Any, ...] | None:
    """The store's row of ``held``, whose copy changed at ``stored``; None for a removal."""
    if held is None:
        return None
    return (held.uri, held.key, held.length, str(held.hashes), micros(held.lastmod), held.type,
            micros(stored))


def _now() -> datetime:
    return datetime.now(UTC)
