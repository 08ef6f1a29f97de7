"""What an incremental run of the mirror's state costs (docs/design.md, "The Source writer"):
its lookups read the lookup index, not the Resource List; its save appends to the journal and
rewrites the Resource List only at a compaction, so the bytes it writes do not grow with the
mirror; and the Resource List with the Change Lists after it stay the collection."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.protocol.model import Change
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.storage.base import Destination, Staged
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.writer import (
    CHANGE_LIST_INDEX,
    CHECKPOINT,
    RESOURCE_LIST,
    MirrorState,
    ObjectRecord,
    ShardIndex,
)

from .records import Counting

T0 = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)


def item(n: int, version: int = 0) -> ObjectRecord:
    return ObjectRecord(f"https://example.org/r/{n:06d}", f"https/example.org/r/{n:06d}",
                        n + version, Hashes.of(md5=f"{n + version:032x}"),
                        T0 - timedelta(days=1, seconds=version), "text/plain")


class Recording(Counting):
    """``inner``, recording the keys read and written under the mirror's folder."""

    def __init__(self, inner: Destination) -> None:
        super().__init__(inner)
        self.opened: list[str] = []
        self.wrote: list[str] = []

    def read_bytes(self, key: str) -> bytes | None:
        self.opened.append(key)
        return super().read_bytes(key)

    def open(self, key: str) -> object:  # type: ignore[override]
        self.opened.append(key)
        return super().open(key)

    def write_bytes(self, key: str, data: bytes, content_type: str, *,
                    cache_control: str | None = None) -> None:
        self.wrote.append(key)
        super().write_bytes(key, data, content_type, cache_control=cache_control)

    def stage(self, key: str) -> Staged:
        self.wrote.append(key)
        return super().stage(key)

    def bytes_written(self) -> int:
        """The size of every object written under the mirror's folder, as it is now."""
        return sum(len(self.inner.read_bytes(key) or b"") for key in set(self.wrote)
                   if key.startswith(RESERVED_PREFIX))


def mirror_of(destination: Destination, size: int) -> None:
    with MirrorState.load(destination, clock=lambda: T0) as state:
        for n in range(size):
            state.put(item(n))
        state.save(checkpoint={})


def run(destination: Destination, changes: range, version: int, hour: int, *,
        later: int = 0) -> None:
    """An incremental run: ``changes`` updated to ``version`` (every third removed instead),
    at ``hour`` (and ``later`` minutes: the same run made again)."""
    clock = iter(T0 + timedelta(hours=hour, minutes=later, microseconds=n)
                 for n in range(10_000))
    with MirrorState.load(destination, clock=lambda: next(clock)) as state:
        for n in changes:
            assert later or state.get(item(n).uri) is not None  # gone if made already
            if n % 3:
                state.put(item(n, version))
            else:
                state.remove(item(n).uri)
        state.put(item(10_000 + hour))  # one created
        state.save(checkpoint={"hour": hour})


def collection(destination: Destination) -> dict[str, int | None]:
    """What a Destination of the mirror reads as the collection: the Resource List, then the
    Change Lists after its ``at``, applied in order (each loc and its length)."""
    snapshot = read_document(destination.read_bytes(RESOURCE_LIST) or b"")
    assert snapshot.head.md is not None and snapshot.head.md.at is not None
    held: dict[str, int | None] = {entry.loc: entry.md.length for entry in snapshot
                                   if entry.md is not None}
    index = read_document(destination.read_bytes(CHANGE_LIST_INDEX) or b"")
    for listed in index:
        key = listed.loc[len(destination.url):]
        for entry in read_document(destination.read_bytes(key) or b""):
            assert entry.md is not None and entry.md.datetime is not None
            if entry.md.datetime <= snapshot.head.md.at:
                continue
            if entry.md.change == Change.DELETED:
                held.pop(entry.loc, None)
            else:
                held[entry.loc] = entry.md.length
    return held


def expected(destination: Destination, size: int, hours: Iterator[tuple[range, int, int]]
             ) -> dict[str, int | None]:
    held = {destination.object_url(item(n).key): item(n).length for n in range(size)}
    for changes, version, hour in hours:
        for n in changes:
            if n % 3:
                held[destination.object_url(item(n).key)] = item(n, version).length
            else:
                held.pop(destination.object_url(item(n).key), None)
        created = item(10_000 + hour)
        held[destination.object_url(created.key)] = created.length
    return held


def test_an_incremental_run_rewrites_the_resource_list_only_at_compaction(
        destination: Destination) -> None:
    mirror_of(destination, 300)
    recording = Recording(destination)
    run(recording, range(10, 20), 1, 1)  # 11 changes: under a tenth of 300
    assert not [key for key in recording.opened + recording.wrote if "resourcelist" in key]
    assert any("/changes/" in key for key in recording.wrote)
    index = ShardIndex.open(destination, RESERVED_PREFIX + "index/")
    assert (index.snapshot_records, index.delta_records) == (300, 11)
    runs = [(range(10, 20), 1, 1)]
    assert collection(destination) == expected(destination, 300, iter(runs))

    recording = Recording(destination)
    run(recording, range(100, 120), 2, 2)  # 21 more: past a tenth, so a compaction
    runs.append((range(100, 120), 2, 2))
    assert RESERVED_PREFIX + "resourcelist.xml" in recording.wrote
    index = ShardIndex.open(destination, RESERVED_PREFIX + "index/")
    assert index.delta_records == 0
    assert index.snapshot_records == len(expected(destination, 300, iter(runs)))
    assert collection(destination) == expected(destination, 300, iter(runs))
    with MirrorState.load(destination) as state:  # and a run that reads everything sees it
        assert {destination.object_url(r.key): r.length for r in state.records()} == expected(
            destination, 300, iter(runs))


def test_the_bytes_an_incremental_run_writes_do_not_grow_with_the_mirror(
        tmp_path: Path) -> None:
    written = {}
    for size in (2_000, 20_000):
        destination = LocalDestination(tmp_path / str(size))
        mirror_of(destination, size)
        recording = Recording(destination)
        run(recording, range(7, size, size // 9), 1, 1)  # 9 changes and a creation
        written[size] = recording.bytes_written()
    print(f"bytes written under {RESERVED_PREFIX} by ten changes: {written}")
    assert written[20_000] < 1.3 * written[2_000]


def test_a_run_that_asks_about_every_uri_reads_each_index_shard_once(tmp_path: Path) -> None:
    """However many URIs a run asks about (a baseline asks about every one), it reads each
    shard of the lookup index once and never the Resource List, and its save of one change does
    not rewrite it (issue 26: past 1,000 lookups a run read and rewrote the whole collection)."""
    destination = LocalDestination(tmp_path)
    mirror_of(destination, 2_500)
    run(destination, range(0, 30, 2), 1, 1)  # 16 changes in the journal, after the snapshot
    recording = Recording(destination)
    with MirrorState.load(recording, clock=lambda: T0 + timedelta(hours=2)) as state:
        found = {n: state.get(item(n).uri) for n in range(2_500)}
        state.put(item(2_499, 5))
        state.save(checkpoint={})
    assert found == {n: None if n < 30 and n % 6 == 0 else item(n, 1) if n < 30 and n % 2 == 0
                     else item(n) for n in range(2_500)}
    assert RESOURCE_LIST not in recording.opened and RESOURCE_LIST not in recording.wrote
    shards = [key for key in recording.opened if key.startswith(RESERVED_PREFIX + "index/")
              and key.endswith(".json.gz")]
    assert len(shards) == len(set(shards)) == 6  # 3 snapshot shards, 3 delta shards
    with MirrorState.load(destination) as state:
        assert state.get(item(2_499).uri) == item(2_499, 5)
        assert state.get(item(2).uri) == item(2, 1) and state.get(item(0).uri) is None


def test_changes_saved_with_no_checkpoint_to_go_on_from_go_in_the_resource_list(
        destination: Destination) -> None:
    """With ``checkpoint.json`` gone (the XCom is enough to go on from), a save writes no Change
    List: its changes go in the Resource List, not only in the lookup index."""
    mirror_of(destination, 300)
    destination.delete(CHECKPOINT)
    run(destination, range(10, 13), 1, 1)
    runs = [(range(10, 13), 1, 1)]
    assert not list(destination.keys(RESERVED_PREFIX + "changes/"))
    snapshot = read_document(destination.read_bytes(RESOURCE_LIST) or b"")
    assert {e.loc: e.md.length for e in snapshot if e.md is not None} == expected(
        destination, 300, iter(runs))
