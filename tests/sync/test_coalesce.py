"""Coalescing a run's changes by resource (the last change wins, spec 12.1) in bounded memory:
winners past what memory holds spill into a scratch database and come back in change order,
exactly as read, each with the position before it."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from dataclasses import fields
from datetime import UTC, datetime, timedelta, timezone

import pytest

from airflow_provider_resourcesync.client.navigate import ChangeItem
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import SyncIncompleteError
from airflow_provider_resourcesync.protocol.datetimes import ZONE_ASSUMED, zone_assumed
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.protocol.model import Entry, Link, Metadata
from airflow_provider_resourcesync.protocol.position import ChangeListRef, ChangePosition
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync import coalesce as coalescing
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.sync.coalesce import Coalesced, coalesce
from airflow_provider_resourcesync.sync.plain import from_plain, to_plain
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.writer import saved_checkpoint

from .conftest import path_of, resource_gets
from .test_baseline import baseline
from .test_incremental import in_step, incremental

AT = datetime(2024, 1, 1, tzinfo=UTC)
LIST = ChangeListRef("http://h/changelist.xml", AT)
DIGEST = Hashes.parse("md5:1e0d5cb8ef6ba40c99b14c0237be735e")


def changed(uri: str, change: str = "updated", seconds: int = 0, **md: object) -> Entry:
    return Entry(uri, md=Metadata(change=change, datetime=AT + timedelta(seconds=seconds),
                                  **md))  # type: ignore[arg-type]


def items(entries: list[Entry]) -> Iterator[ChangeItem]:
    return (ChangeItem(LIST, index, entry, doubtful=index % 2 == 1)
            for index, entry in enumerate(entries))


def winners(coalesced: Coalesced) -> list[tuple[object, ...]]:
    """Everything a winner carries, ``line`` and the zone mark included (equality skips them)."""
    return [(winner, winner.entry.line, winner.item.doubtful,
             [zone_assumed(value) for value in (winner.entry.change_time, winner.before.time)
              if value is not None]) for winner in coalesced.winners]


# -- bounded memory ------------------------------------------------------------------------------

def test_coalescing_many_distinct_resources_holds_a_bounded_number_in_memory() -> None:
    """Past ``held`` winners they spill: the peak is a fraction of what the same coalescing
    holds with every winner in memory. One small size here; 30,000 and 120,000 resources (with
    :data:`~.coalesce.HELD`) in ``benchmarks/memory.py``."""
    count = 3_000

    def distinct() -> Iterator[ChangeItem]:
        for number in range(count):
            yield ChangeItem(LIST, number, changed(f"http://h/r/{number}", "created", number,
                                                   hash=DIGEST, length=number))

    def peak(held: int) -> int:
        tracemalloc.start()
        try:
            coalesced = coalesce(distinct(), ChangePosition(), held=held)
            streamed = last = 0
            for winner in coalesced.winners:
                streamed, last = streamed + 1, winner.order
            assert streamed == len(coalesced.winners) == coalesced.read == count
            assert last == count - 1
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    spilled, whole = peak(count // 10), peak(count + 1)
    assert spilled < whole / 4, f"peak {spilled:,} bytes spilled, {whole:,} held whole"


# -- spilled winners are the winners ---------------------------------------------------------------

def many_changes() -> list[Entry]:
    """Resources changed again and again across spills, under several spellings, one refused
    (credentials) and one timed with no zone, in an order that moves winners around."""
    zoneless = datetime(2024, 1, 2, 3, 4, 5, tzinfo=ZONE_ASSUMED)
    entries = []
    for round_ in range(4):
        for number in range(7):
            change = ("created", "updated", "deleted")[(round_ + number) % 3]
            entries.append(changed(f"http://h/r{(number * 3 + round_) % 7}", change,
                                   round_ * 10 + number, length=number))
        entries.append(changed(f"HTTP://H:80/r{round_}#part", "updated", 100 + round_))
        entries.append(changed("http://user@h/secret", "deleted", 200 + round_))
        entries.append(Entry(f"http://h/old{round_ % 2}", lastmod=zoneless, line=round_))
    entries.append(Entry("http://h/untimed"))
    return entries


@pytest.mark.parametrize("held", [1, 2, 5, 9])
def test_spilled_winners_are_the_winners_held_in_memory_in_change_order(held: int) -> None:
    entries = many_changes()
    position = ChangePosition(AT - timedelta(days=1), "http://h/earlier.xml", AT, 7, "http://h/x")
    in_memory = coalesce(items(entries), position, held=len(entries) + 1)

    with coalesce(items(entries), position, held=held) as spilled:
        assert winners(spilled) == winners(in_memory)
        assert winners(spilled) == winners(spilled)  # streamed again, the same
        assert len(spilled.winners) == len(in_memory.winners) == 11
        assert (spilled.read, spilled.after) == (in_memory.read, in_memory.after)
        orders = [winner.order for winner in spilled.winners]
        assert orders == sorted(orders)
        assert any(zone_assumed(winner.entry.change_time) for winner in spilled.winners
                   if winner.entry.change_time is not None)


def test_the_standing_of_spilled_winners_is_before_the_earliest_failure() -> None:
    start = ChangePosition.at(AT)
    positions = [start]  # positions[n]: after the first n changes
    for item in items(many_changes()):
        positions.append(positions[-1].advance(item.list, item.index, item.entry))

    with coalesce(items(many_changes()), start, held=3) as coalesced:
        streamed = list(coalesced.winners)
        assert [winner.before for winner in streamed] == [
            positions[winner.order] for winner in streamed]
        first, middle, last = streamed[0], streamed[len(streamed) // 2], streamed[-1]
        assert coalesced.standing([]) == coalesced.after == positions[-1]
        assert coalesced.standing([last, middle]) == positions[middle.order]
        assert coalesced.standing([middle, first, last]) == positions[first.order]


def test_every_field_of_a_change_survives_the_trip() -> None:
    # Every field set to a value other than its default: a field added to the model and left
    # out of the trip fails here.
    when = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=timezone(timedelta(hours=-5)))
    zoneless = datetime(2024, 5, 6, 7, 8, 9, tzinfo=ZONE_ASSUMED)
    md = Metadata("changelist", when, when, when, zoneless, "deleted", zoneless, DIGEST, 12,
                  "text/plain", "gzip", "/a/b", {"{urn:x}y": "z"})
    link = Link("duplicate alternate", "http://m/x", 2, zoneless,
                Hashes.parse("sha-256:ab odd-token"), 3, "text/html", "br", "/c", {"q": "r"})
    entry = Entry("http://h/x?y=1", zoneless, "daily", md, (link, link), ("<x:e xmlns:x='u'/>",),
                  41)
    for value, default in ((entry, Entry("")), (md, Metadata()), (link, Link("", ""))):
        unset = [field.name for field in fields(value)
                 if getattr(value, field.name) == getattr(default, field.name)]
        assert unset == []
    item = ChangeItem(ChangeListRef("http://h/cl.xml", when, zoneless), 5, entry, True)
    before = ChangePosition(zoneless, "http://h/cl.xml", when, 5, "http://h/w")

    back, back_before = from_plain(to_plain(item, before))

    assert (back, back_before) == (item, before)
    assert back.entry.line == 41
    times = [back.entry.lastmod, back.entry.md.datetime, back.entry.md.until,  # type: ignore[union-attr]
             back.entry.links[0].modified, back.list.until, back_before.time]
    assert all(zone_assumed(value) for value in times)  # type: ignore[arg-type]
    assert back.entry.md.at.utcoffset() == timedelta(hours=-5)  # type: ignore[union-attr]


# -- the engine, its winners spilled ---------------------------------------------------------------

def test_a_run_whose_winners_spill_applies_them_and_stands_before_its_failure(
        fragile: ResourceSyncClient, client: ResourceSyncClient, local: LocalDestination,
        source: ResourceSyncSource, server: SourceServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coalescing, "HELD", 2)
    start = baseline(client, local, source)
    source.update("r12.txt", b"twelve\n")
    failing = source.update("r13.txt", b"thirteen\n")
    for version in range(3):
        source.update("r14.txt", f"fourteen {version}\n".encode())
    source.delete("r15.txt")
    source.create("new.txt", b"new\n")
    source.update("r12.txt", b"twelve again\n")
    source.publish()
    for failed in ("r14.txt", "r13.txt"):  # both fail; only the earlier counts
        server.fail(path_of(source.uri(failed)), 500)

    with pytest.raises(SyncIncompleteError, match="incomplete"):
        incremental(fragile, local, source, start)

    standing = Checkpoint.from_json(saved_checkpoint(local))  # type: ignore[arg-type]
    assert standing.position.consumed == 1  # r12's first change: before r13's, which failed
    assert standing.position.time is not None and standing.position.time < failing.datetime
    server.reset_log()
    after = incremental(client, local, source, standing)
    assert sorted(resource_gets(server)) == sorted(  # the rest held already
        path_of(source.uri(name)) for name in ("r13.txt", "r14.txt"))
    assert after.stats["changes"] == 7 and after.stats["resources"] == 5
    assert after.stats["failed"] == 0 and in_step(client, local, source)
