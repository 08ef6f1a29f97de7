"""The mirror's state keeps the Source writer's lookup index (docs/design.md, "The Source
writer"): up to date after every save, built for a mirror written before there was one, and
brought up to date on load from the Change Lists a save wrote before it was stopped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.storage.base import Destination, Staged
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.writer import CHANGES, MirrorState, ObjectRecord, ShardIndex

INDEX = RESERVED_PREFIX + "index/"
T0 = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)


def item(n: int, version: int = 0) -> ObjectRecord:
    return ObjectRecord(f"https://example.org/r/{n:04d}", f"https/example.org/r/{n:04d}",
                        n + version, Hashes.of(md5=f"{n + version:032x}"),
                        T0 - timedelta(days=1, seconds=version), "text/plain")


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1)
        return self.now


class Stopped(Exception):
    """A save stopped before a write."""


class StoppedBefore:
    """``destination`` that stops a save before its first write under ``prefix``."""

    def __init__(self, destination: Destination, prefix: str) -> None:
        self._destination = destination
        self._prefix = prefix

    def __getattr__(self, name: str) -> object:
        return getattr(self._destination, name)

    def write_bytes(self, key: str, data: bytes, kind: str, *,
                    cache_control: str | None = None) -> None:
        self._check(key)
        self._destination.write_bytes(key, data, kind, cache_control=cache_control)

    def stage(self, key: str) -> Staged:
        self._check(key)
        return self._destination.stage(key)

    def _check(self, key: str) -> None:
        if key.startswith(self._prefix):
            raise Stopped(key)


def runs(destination: Destination, clock: Clock) -> dict[str, ObjectRecord | None]:
    """A first save of items 0-9, then a run that updates 1, removes 2 and creates 10; what
    the mirror holds for items 0-10 after."""
    with MirrorState.load(destination, clock=clock) as state:
        for n in range(10):
            state.put(item(n))
        state.save(checkpoint={})
    clock.now += timedelta(hours=1)
    with MirrorState.load(destination, clock=clock) as state:
        state.put(item(1, 1))
        state.remove(item(2).uri)
        state.put(item(10))
        state.save(checkpoint={})
    held: dict[str, ObjectRecord | None] = {item(n).uri: item(n) for n in range(11)}
    held[item(1).uri], held[item(2).uri] = item(1, 1), None
    return held


def stamps(destination: Destination) -> list[str]:
    return [key.removeprefix(CHANGES).removesuffix(".xml")
            for key in sorted(destination.keys(CHANGES))]


def test_every_save_keeps_the_lookup_index(destination: Destination) -> None:
    held = runs(destination, Clock(T0))
    index = ShardIndex.open(destination, INDEX)
    assert index.lookup(held) == held
    assert index.stamp == stamps(destination)[-1]  # the last Change List folded in


def test_a_mirror_written_without_an_index_gets_one(destination: Destination) -> None:
    held = runs(destination, Clock(T0))
    for key in list(destination.keys(INDEX)):  # as the code before the index left it
        destination.delete(key)
    MirrorState.load(destination).close()
    assert ShardIndex.open(destination, INDEX).lookup(held) == held


@pytest.mark.parametrize("stopped_at", [INDEX, RESERVED_PREFIX + "resourcelist"])
def test_a_save_stopped_after_its_change_list_is_replayed_on_load(
        destination: Destination, stopped_at: str) -> None:
    clock = Clock(T0)
    held = runs(destination, clock)
    clock.now += timedelta(hours=1)
    with MirrorState.load(StoppedBefore(destination, stopped_at),  # type: ignore[arg-type]
                          clock=clock) as state:
        state.put(item(3, 2))
        state.remove(item(4).uri)
        with pytest.raises(Stopped):
            state.save(checkpoint={})
    held[item(3).uri], held[item(4).uri] = item(3, 2), None
    MirrorState.load(destination).close()
    index = ShardIndex.open(destination, INDEX)
    assert index.lookup(held) == held
    assert index.stamp == stamps(destination)[-1] and len(stamps(destination)) == 2


@pytest.mark.parametrize("broken", ["manifest.json", "snapshot-"])
def test_an_unreadable_lookup_index_is_built_again_from_the_documents(
        destination: Destination, broken: str) -> None:
    """The index is derived: a manifest or shard that cannot be read (a torn copy, a bad disk)
    costs a run that reads the documents whole, not a failed run."""
    clock = Clock(T0)
    held = runs(destination, clock)
    (key,) = [key for key in destination.keys(INDEX) if key[len(INDEX):].startswith(broken)]
    destination.write_bytes(key, b"not the index", "application/octet-stream")
    clock.now += timedelta(hours=1)
    with MirrorState.load(destination, clock=clock) as state:
        assert state.get(item(5).uri) == item(5)
        state.put(item(5, 3))
        state.save(checkpoint={})
    held[item(5).uri] = item(5, 3)
    assert ShardIndex.open(destination, INDEX).lookup(held) == held
    with MirrorState.load(destination) as state:
        assert {uri: state.get(uri) for uri in held} == held
