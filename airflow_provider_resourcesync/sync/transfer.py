"""One resource into the mirror: skipped when held unchanged, else fetched (or copied out of a
dump package), verified, committed atomically, and recorded in the mirror's state; or one
resource out of it, deleted or moved aside.

Every method is safe to call from many threads at once; a resource is known by its URI's normal
form (:func:`~..storage.keys.normalized`), and one key is written by one thread at a time, so two
spellings of one resource in one run never race. A failure is an :class:`Outcome`, not an
exception, so the other resources go on; the staged bytes of a failed resource are discarded
and the object held before stays as it was (DESIGN.md, "Safety rules").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from ..client.sync_client import ResourceSyncClient
from ..errors import ResourceSyncError, UnstorableKeyError
from ..protocol.hashes import Digester, stored_digests
from ..protocol.model import Entry
from ..protocol.package import DumpPackage
from ..storage.base import Destination, ObjectInfo, shown_key
from ..storage.keys import KeyMapper
from ..writer import MirrorState, ObjectRecord
from .compare import Expected, agrees, identity
from .tally import Outcome

__all__ = ["Transfer"]


class Transfer:
    """Writes resources into ``destination`` at ``mapper``'s keys, recorded in ``state``."""

    def __init__(self, destination: Destination, state: MirrorState, mapper: KeyMapper) -> None:
        self.destination = destination
        self.state = state
        self.mapper = mapper
        self._locks = _KeyLocks()

    # -- what a run calls per resource -------------------------------------------------------------

    def mirror(self, client: ResourceSyncClient, entry: Entry) -> Outcome:
        """Fetch the listed resource unless the mirror holds it unchanged."""
        return self._guarded(entry, lambda entry, key: self.fetch(client, entry, key))

    def unpack(self, package: DumpPackage, entry: Entry) -> Outcome:
        """Copy a dump package's bitstream unless the mirror holds it unchanged."""
        return self._guarded(entry, lambda entry, key: self.copy(package, entry, key))

    def _guarded(self, entry: Entry, write: Callable[[Entry, str], Outcome]) -> Outcome:
        try:
            loc, key = self.mapper.normal_key(entry.loc)
            if loc != entry.loc:
                entry = replace(entry, loc=loc)
            with self._locks.hold(key):
                held = self.destination.info(key)
                self._check_not_another(entry.loc, key, held)
                if self.unchanged(Expected.of(entry), key, held):
                    return Outcome(entry.loc, "unchanged")
                return write(entry, key)
        except ResourceSyncError as error:  # the reason without the URL the outcome names
            return Outcome.failed(entry.loc, str(error).removeprefix(f"{entry.loc} : "), error)

    def remove(self, uri: str, *, move_to: str | None = None,
               unless_newer_than: datetime | None = None) -> Outcome:
        """Delete the mirror's copy of ``uri``, or move it to the key prefix ``move_to``;
        ``"unchanged"`` where the mirror holds none, ``"kept"`` where its copy is dated after
        ``unless_newer_than`` (a doubtful deletion: the copy came later). A copy the state does
        not know (a run killed before it saved) is found at the destination all the same."""
        try:
            uri, key = self.mapper.normal_key(uri)
            with self._locks.hold(key):
                record = self.state.get(uri)
                if record is None:
                    info = self.destination.info(key)
                    if info is None or self._another(uri, key, info):
                        return Outcome(uri, "unchanged")
                    self.state.put(record := replace(ObjectRecord.of(key, info), uri=uri))
                if _later(record.lastmod, unless_newer_than):
                    return Outcome(uri, "kept")
                if move_to is None:
                    self.destination.delete(record.key)
                else:
                    self.destination.move(record.key, move_to + record.key)
                self.state.remove(uri)
        except ResourceSyncError as error:
            return Outcome.failed(uri, f"cannot remove: {error}", error)
        return Outcome(uri, "removed")

    # -- the steps -------------------------------------------------------------------------------

    def _another(self, uri: str, key: str, held: ObjectInfo | None) -> str | None:
        """The other resource the object at ``key`` is, where the mirror still holds it there:
        two URIs whose keys are one (the readable layout names ``a%2Bb`` and ``a+b`` alike)."""
        if held is None:
            return None
        other = identity(held.uri)
        if other == uri:
            return None
        record = self.state.get(other)
        return other if record is not None and record.key == key else None

    def _check_not_another(self, uri: str, key: str, held: ObjectInfo | None) -> None:
        """Refuse to write over the object of another resource the mirror holds at ``key``."""
        other = self._another(uri, key, held)
        if other is not None:
            raise UnstorableKeyError(
                f"its key {shown_key(key)} holds {other}, which the mirror keeps: the two URIs "
                "have one key (key_layout 'readable' names an escaped reserved character as "
                "itself); mirror such a Source with key_layout='escaped'")

    def unchanged(self, expected: Expected, key: str, info: ObjectInfo | None) -> bool:
        """Whether ``info``, the object at ``key``, is the described resource, by its stored
        description (no bytes read). Such an object missing from the state (a run killed before
        it saved) is recorded there."""
        if info is None or agrees(expected, info) is not True:
            return False
        self.keep(replace(ObjectRecord.of(key, info), uri=expected.uri), fetched=False)
        return True

    def keep(self, record: ObjectRecord, *, fetched: bool) -> None:
        """Record what a resource's outcome left at the destination: a fetched object always,
        one held unchanged only where the state does not hold it as it is (a record of another
        spelling, or one a killed run did not save)."""
        if fetched or self.state.get(record.uri) != record:
            self.state.put(record)

    def fetch(self, client: ResourceSyncClient, entry: Entry, key: str) -> Outcome:
        """Download the resource (mirrors by ``pri``, then ``loc``), verified, to ``key``."""
        with self.destination.stage(key) as staged:
            download = client.download_entry(entry, staged.file)
            info = ObjectInfo(entry.loc, download.length, download.hashes, entry.lastmod,
                              _type(entry) or download.content_type)
            staged.commit(info)
        self.keep(ObjectRecord.of(key, info), fetched=True)
        return Outcome(entry.loc, "fetched", download.length)

    def copy(self, package: DumpPackage, entry: Entry, key: str) -> Outcome:
        """Copy the entry's bitstream out of ``package``, verified against the manifest, to
        ``key``."""
        digester = Digester(stored_digests(entry.md.hash if entry.md is not None else None))
        with self.destination.stage(key) as staged:
            for chunk in package.read_verified(entry, digester=digester):  # verified at the end
                staged.file.write(chunk)
            info = ObjectInfo(entry.loc, digester.length, digester.hashes(), entry.lastmod,
                              _type(entry))
            staged.commit(info)
        self.keep(ObjectRecord.of(key, info), fetched=True)
        return Outcome(entry.loc, "fetched", digester.length)


class _KeyLocks:
    """One lock per key in use, forgotten once nobody holds or waits for it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, list[int]]] = {}

    def hold(self, key: str) -> _Held:
        """Hold ``key``'s lock for a ``with`` block."""
        return _Held(self, key)


class _Held:
    """One key's lock, held for a ``with`` block (a class, not a generator: one per resource)."""

    __slots__ = ("_key", "_lock", "_locks", "_users")

    def __init__(self, locks: _KeyLocks, key: str) -> None:
        self._locks = locks
        self._key = key

    def __enter__(self) -> None:
        locks = self._locks
        with locks._guard:
            self._lock, self._users = locks._locks.setdefault(
                self._key, (threading.Lock(), [0]))
            self._users[0] += 1
        try:
            self._lock.acquire()
        except BaseException:
            self._leave()
            raise

    def __exit__(self, *_: object) -> None:
        self._lock.release()
        self._leave()

    def _leave(self) -> None:
        locks, users = self._locks, self._users
        with locks._guard:
            users[0] -= 1
            if not users[0]:
                del locks._locks[self._key]


def _type(entry: Entry) -> str | None:
    return entry.md.type if entry.md is not None else None


def _later(held: datetime | None, than: datetime | None) -> bool:
    return held is not None and than is not None and held > than
