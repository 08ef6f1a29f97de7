"""The mirror describes itself: its own ResourceSync documents under ``.resourcesync/``.

At the destination, :class:`MirrorState` keeps

- ``resourcelist.xml``: a Resource List of every object held (:mod:`.source.snapshot`);
- ``changes/<UTC timestamp>.xml``: a Change List per save that found the mirror changed (every
  save but the first), from the save before, and ``changelist.xml``, the Change List Index over
  them that the Capability List points to (:mod:`.source.journal`);
- ``capabilitylist.xml`` and ``description.xml``: the Capability List (9) and Source
  Description (8) that make the mirror a Source others can sync from; a copy of the Source
  Description at ``.well-known/resourcesync`` if asked (:func:`publish_well_known`);
- ``checkpoint.json``: the last checkpoint, written last (:mod:`.source.checkpoint`);
- ``index/``: the lookup index (:mod:`.source.shards`), derived from the documents: brought up
  to date on load by replaying the Change Lists listed after its stamp (built from the Resource
  List first for a mirror that has none), folded into on every save, rebuilt with the Resource
  List.

During a run the records live in a scratch SQLite database (:mod:`.source.records`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from ..errors import ConfigurationError, DocumentError, InvalidValueError
from ..protocol.closing import ClosedOnExit
from ..protocol.hashes import Hashes
from ..protocol.model import Change, Entry, Head, Link, Metadata
from .base import Destination
from .keys import RESERVED_PREFIX
from .source.checkpoint import SavedRecord, saved_checkpoint
from .source.documents import (
    CAPABILITY_LIST,
    CHANGE_LIST_INDEX,
    CHANGES,
    CHECKPOINT,
    DESCRIPTION,
    INDEX,
    NAMESPACE,
    RESOURCE_LIST,
    XML,
    Documents,
    base_url,
)
from .source.held import Held
from .source.journal import Journal, stamp_at
from .source.records import ObjectRecord, RecordStore, as_datetime, micros, record_of
from .source.shards import ShardIndex
from .source.snapshot import Snapshot

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

#: Where a Destination looks for a Source's Source Description first (6.3.2, RFC 5785): the
#: mirror keeps a copy of its own there when it is served at the root of a host.
WELL_KNOWN = ".well-known/resourcesync"


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
        self._documents = Documents(destination, location, base_url(public_base_url)
                                    if public_base_url is not None else None)
        self._journal = Journal(self._documents)
        self._snapshot = Snapshot(self._documents)
        self._clock = clock or _now
        self._store = RecordStore()
        self._checkpoint: dict[str, Any] | None = None
        self._saved_at: datetime | None = None
        self._changelist: str | None = None
        self._index: ShardIndex | None = None

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
        return self._store.get(uri)

    def put(self, record: ObjectRecord) -> None:
        """Record an object (replacing what was recorded for its URI), now by the mirror's
        clock if it changed. Records are written in batches; every read sees them all."""
        self._store.put(record, micros(self._clock(), "the clock's time"))

    def remove(self, uri: str) -> None:
        """Forget the object of ``uri`` (its key is kept for this run's Change List)."""
        self._store.remove(uri, micros(self._clock(), "the clock's time"))

    def __len__(self) -> int:
        return len(self._store)

    def records(self) -> Iterator[ObjectRecord]:
        """Every record, ordered by URI, streamed."""
        return (record_of(row) for row in self._store.rows())

    # -- what the Source no longer lists ---------------------------------------------------------

    def mark_seen(self, uri: str) -> None:
        """Note that the Source still lists ``uri`` (nothing if the mirror does not hold it).
        Marks are written in batches; :meth:`unseen` sees every one made before it."""
        self._store.mark_seen(uri)

    def unseen(self) -> Iterator[str]:
        """The URIs held and not marked seen since the state was loaded, ordered, streamed."""
        return self._store.unseen()

    def uris_not_in(self, seen: Iterable[str]) -> Iterator[str]:
        """The URIs held that ``seen`` does not list: ``seen`` is consumed first (marking each,
        in bounded memory), then the rest is streamed. Marks from before are cleared."""
        return self._store.uris_not_in(seen)

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
        last = self._store.last_change()
        # the first save writes no Change List: its Resource List is where Destinations start
        journal = self._saved_at is not None and last is not None
        listed = self._journal.listed() if journal else []
        changelist = self._changelist
        if journal:
            changelist = self._journal.list_key(now)
        elif changelist is None and self._journal.index_exists():
            changelist = self._key(CHANGE_LIST_INDEX)  # a killed save wrote the first list
        record = SavedRecord(now, changelist, checkpoint, self._documents.base).to_bytes()
        index = self._index = self._index or self._open_index()
        self._store.mark_stored(micros(now, "the clock's time"))
        if journal:
            assert self._saved_at is not None and changelist is not None and last is not None
            # from the end of the last list listed: a killed save may have listed one after
            # the save before
            start = max([self._saved_at, *(entry.md.until for entry in listed[-1:]
                                           if entry.md is not None and entry.md.until)])
            end = max(now, start, as_datetime(last) or start)
            self._journal.write_index([*listed, *self._journal.write_list(
                changelist, start, end, self._store.changes())])
            index.apply(self._changed(), stamp_at(now))
        self._changelist = changelist
        self._snapshot.write(now, self._store.rows())
        index.rebuild((record_of(row) for row in self._store.rows()), stamp_at(now))
        documents = self._documents
        documents.write(self._key(CAPABILITY_LIST), Head(
            md=Metadata(capability="capabilitylist"),
            links=(Link(rel="up", href=self.url(self._key(DESCRIPTION))),)),
            self._capabilities())
        documents.write(self._key(DESCRIPTION), Head(md=Metadata(capability="description")), [
            Entry(self.url(self._key(CAPABILITY_LIST)), md=Metadata(capability="capabilitylist"))])
        self.destination.write_bytes(self._key(CHECKPOINT), record, "application/json")
        self._store.clear_changes()
        self._checkpoint = json.loads(record)["checkpoint"]
        self._saved_at = now

    @property
    def public_base_url(self) -> str | None:
        """The URL the destination is published under, given or saved; None if none."""
        return self._documents.base

    @public_base_url.setter
    def public_base_url(self, url: str) -> None:
        self._documents.base = base_url(url)

    def url(self, key: str) -> str:
        """Where the object at ``key`` is published: under ``public_base_url`` if given, else
        the destination's own URL."""
        return self._documents.url(key)

    def close(self) -> None:
        """Drop the scratch database."""
        self._store.close()

    def _key(self, key: str) -> str:
        return self._documents.key(key)

    def _capabilities(self) -> list[Entry]:
        entries = [Entry(self.url(self._key(RESOURCE_LIST)),
                         md=Metadata(capability="resourcelist"))]
        if self._changelist is not None:
            entries.append(Entry(self.url(self._key(CHANGE_LIST_INDEX)),
                                 md=Metadata(capability="changelist")))
        return entries

    # -- loading ---------------------------------------------------------------------------------

    def _load(self) -> None:
        data = self.destination.read_bytes(self._key(CHECKPOINT))
        if data is not None:
            saved = SavedRecord.parse(data, self.destination.object_url(self._key(CHECKPOINT)))
            self._saved_at = saved.saved_at
            self._changelist = saved.changelist
            self._checkpoint = saved.checkpoint
            if self._documents.base is None:
                self._documents.base = saved.public_url
        if self._snapshot.exists():
            self._store.insert(self._snapshot.rows())
        self._index = self._open_index()

    def _open_index(self) -> ShardIndex:
        """The lookup index, brought up to date with the journal: the Change Lists listed after
        its stamp folded in, each stamped with its own name, so a save killed after its Change
        List finds its changes recorded. A mirror with none yet (written before there was one),
        or whose index cannot be read, gets one built from its Resource List first."""
        prefix = self._key(INDEX)
        try:
            index = ShardIndex.open(self.destination, prefix)
        except DocumentError:
            index = ShardIndex(self.destination, prefix, None)
        if index.stamp is None and self._snapshot.exists():
            at = self._snapshot.at()
            index = ShardIndex.build(self.destination, prefix, self._snapshot.records(),
                                     stamp_at(at) if at is not None else "")
        for stamp, keys in self._journal.since(index.stamp):
            index.apply(self._journal.changes(keys), stamp)
        return index

    def _changed(self) -> Iterator[tuple[str, Held | None]]:
        """This run's changes, as the lookup index takes them."""
        for _, uri, change, key, length, hash_, lastmod, type_, _ in self._store.changes():
            yield uri, (None if change == Change.DELETED else Held(
                uri, key, length, Hashes.parse(hash_), as_datetime(lastmod), type_))


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
    destination.write_bytes(WELL_KNOWN, description, XML)
    return True


def _shortened(text: str, limit: int = 100) -> str:
    """``text`` quoted, cut to its first ``limit`` characters if longer (its length said)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def _now() -> datetime:
    return datetime.now(UTC)
