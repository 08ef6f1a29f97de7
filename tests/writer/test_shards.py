"""The Source writer's lookup index (docs/design.md, "Lookups in O(changes)"): what a lookup
answers after a rebuild and applies, applies done again, and rebuilds and applies killed for real
(SIGKILL in a child process) before their manifest; on local disk and on S3."""

from __future__ import annotations

import os
import signal
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_resourcesync.errors import (
    ConfigurationError,
    DocumentError,
    InvalidValueError,
)
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination
from airflow_provider_resourcesync.writer import ObjectRecord, ShardIndex, shards
from airflow_provider_resourcesync.writer.record import row_of
from airflow_provider_resourcesync.writer.records import (
    RecordStore,
    record_of,
    stored_json_row,
)

from ..killing import run_child
from .records import PREFIX, changes, named, opened, record, records, uri

MANIFEST = PREFIX + "manifest.json"


def killed_index(where: str, endpoint: str, action: str, size: int) -> None:
    """In a child: opens the index at ``where`` (:func:`.records.opened`) and rebuilds it from
    ``size`` new records, or applies the changes() of an index of that size (``action``),
    killing itself just before the manifest is written."""
    destination = opened(where, endpoint)
    write = destination.write_bytes

    def killing(key: str, data: bytes, kind: str) -> None:
        if key == MANIFEST:
            os.kill(os.getpid(), signal.SIGKILL)
        write(key, data, kind)

    destination.write_bytes = killing  # type: ignore[method-assign]
    index = ShardIndex.open(destination, PREFIX)
    if action == "rebuild":
        index.rebuild((record(n, 1) for n in range(size)), "changes/killed.xml")
    else:
        index.apply(changes(size), "changes/0002.xml")


def files(destination: Destination) -> dict[str, bytes]:
    """Every object of the index, by key."""
    found = {}
    for key in destination.keys(PREFIX):
        data = destination.read_bytes(key)
        assert data is not None
        found[key] = data
    return found


def state(index: ShardIndex) -> tuple[str | None, int, int]:
    return index.stamp, index.snapshot_records, index.delta_records


def test_an_index_never_written_holds_nothing(destination: Destination) -> None:
    index = ShardIndex.open(destination, PREFIX)
    assert state(index) == (None, 0, 0)
    assert index.lookup([uri(1)]) == {uri(1): None}


def test_a_lookup_reads_the_delta_over_the_snapshot(destination: Destination) -> None:
    index = ShardIndex.build(destination, PREFIX, records(3_000), "changes/0001.xml")
    assert state(index) == ("changes/0001.xml", 3_000, 0)
    assert index.lookup([uri(5), uri(2_999), uri(3_000)]) == {
        uri(5): record(5), uri(2_999): record(2_999), uri(3_000): None}

    index.apply([(uri(5), record(5, 1)), (uri(7), None), (uri(3_000), record(3_000))],
                "changes/0002.xml")
    index.apply([(uri(7), record(7, 2)), (uri(8), None)], "changes/0003.xml")

    expected = {uri(5): record(5, 1),  # updated: the delta record wins
                uri(6): record(6),  # untouched: the snapshot's
                uri(7): record(7, 2),  # removed, then created again
                uri(8): None,  # removed: a tombstone hides the snapshot's record
                uri(3_000): record(3_000)}  # new
    for reader in (index, ShardIndex.open(destination, PREFIX)):
        assert reader.lookup(expected) == expected
        assert state(reader) == ("changes/0003.xml", 3_000, 4)


def test_changes_to_an_empty_index_are_its_delta(destination: Destination) -> None:
    index = ShardIndex.open(destination, PREFIX)
    index.apply([(uri(1), record(1)), (uri(2), record(2)), (uri(2), None)], "changes/0001.xml")
    reopened = ShardIndex.open(destination, PREFIX)
    assert reopened.lookup([uri(1), uri(2)]) == {uri(1): record(1), uri(2): None}
    assert state(reopened) == ("changes/0001.xml", 0, 2)


def test_applying_the_same_changes_again_leaves_the_same_index(destination: Destination) -> None:
    index = ShardIndex.build(destination, PREFIX, records(3_000), "changes/0001.xml")
    index.apply(changes(3_000), "changes/0002.xml")
    once = files(destination)
    index.apply(changes(3_000), "changes/0002.xml")
    assert files(destination) == once
    ShardIndex.open(destination, PREFIX).apply(changes(3_000), "changes/0002.xml")
    assert files(destination) == once
    assert state(ShardIndex.open(destination, PREFIX)) == ("changes/0002.xml", 3_000, 10)


def test_a_rebuild_is_a_new_generation_with_an_empty_delta(destination: Destination) -> None:
    index = ShardIndex.build(destination, PREFIX, records(1_500), "changes/0001.xml")
    index.apply(changes(1_500), "changes/0002.xml")
    before = set(files(destination))

    index.rebuild((record(n, 3) for n in range(2_500)), "changes/0003.xml")
    after = set(files(destination))
    assert before & after == {MANIFEST}  # the old generation's snapshot and delta are gone
    assert len(after) == 1 + 3 and all("/snapshot-" in key for key in after - {MANIFEST})
    assert state(index) == ("changes/0003.xml", 2_500, 0)
    assert index.lookup([uri(1), uri(2_499), uri(2_500)]) == {
        uri(1): record(1, 3), uri(2_499): record(2_499, 3), uri(2_500): None}

    index.apply([(uri(1), None)], "changes/0004.xml")
    reopened = ShardIndex.open(destination, PREFIX)
    assert state(reopened) == ("changes/0004.xml", 2_500, 1)
    assert reopened.lookup([uri(1), uri(2)]) == {uri(1): None, uri(2): record(2, 3)}


def test_a_rebuild_keeps_the_last_record_of_a_uri(local: LocalDestination) -> None:
    index = ShardIndex.build(local, PREFIX, [record(1), record(2), record(1, 1)], "c")
    assert index.lookup([uri(1), uri(2)]) == {uri(1): record(1, 1), uri(2): record(2)}
    assert index.snapshot_records == 2


def test_an_apply_in_several_batches_counts_each_uri_once(
        local: LocalDestination, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shards, "_BATCH", 4)
    index = ShardIndex.build(local, PREFIX, records(2_000), "changes/0001.xml")
    index.apply([*[(uri(n), record(n, 1)) for n in range(10)] * 2, (uri(3), None)],
                "changes/0002.xml")
    reopened = ShardIndex.open(local, PREFIX)
    assert state(reopened) == ("changes/0002.xml", 2_000, 10)
    assert reopened.lookup([uri(3), uri(4)]) == {uri(3): None, uri(4): record(4, 1)}


def test_an_index_needs_a_folder_of_its_own(local: LocalDestination) -> None:
    local.write_bytes("delta-2024/report.csv", b"a user's object", "text/csv")
    with pytest.raises(ConfigurationError, match="a folder of its own"):
        ShardIndex.build(local, "/", records(10), "c")
    assert local.read_bytes("delta-2024/report.csv") == b"a user's object"


def test_a_record_given_for_another_uri_is_refused(local: LocalDestination) -> None:
    with pytest.raises(InvalidValueError, match=r"0000002\.xml"):
        ShardIndex.open(local, PREFIX).apply([(uri(2), record(1))], "c")
    assert not local.exists(MANIFEST)


@pytest.mark.parametrize("damage", [
    ("manifest", b"{not json"),
    ("manifest", b'{"version": 2}'),
    ("/snapshot-", b"not gzip"),
    ("/snapshot-", None),  # missing
    ("/delta-", shards._shard_bytes(None, 0, ['{"uri": "https://h/"}'])),
    ("/delta-", shards._shard_bytes(None, 0, [f'["{uri(1)}", "k", -1, "", null, null]'])),
])
def test_an_unreadable_index_says_what_fixes_it(local: LocalDestination,
                                                damage: tuple[str, bytes | None]) -> None:
    part, data = damage
    ShardIndex.build(local, PREFIX, records(1_000), "changes/0001.xml").apply(
        [(uri(n), record(n, 1)) for n in range(0, 1_000, 2)], "changes/0002.xml")
    key = next(key for key in local.keys(PREFIX) if part in key)
    if data is None:
        local.delete(key)
    else:
        local.write_bytes(key, data, "application/octet-stream")

    with pytest.raises(DocumentError) as caught:
        ShardIndex.open(local, PREFIX).lookup([uri(n) for n in range(1_000)])
    assert str(caught.value).startswith(local.object_url(key) + " : ")
    assert "rebuilding it from the collection's documents" in str(caught.value)
    assert not caught.value.rerun_helps

    ShardIndex.build(local, PREFIX, records(1_000), "changes/0002.xml")
    assert ShardIndex.open(local, PREFIX).lookup([uri(1)]) == {uri(1): record(1)}


@pytest.fixture
def where(request: pytest.FixtureRequest, destination: Destination) -> tuple[str, str]:
    """How a child process names ``destination``, and the S3 endpoint (empty on local disk)."""
    endpoint = request.getfixturevalue("s3_endpoint") if isinstance(
        destination, S3Destination) else ""
    return named(destination), endpoint


def _killed(where: tuple[str, str], action: str, size: int) -> None:
    run = run_child(killed_index, *where, action, size)
    assert run.exitcode == -signal.SIGKILL, run.traceback


def test_a_killed_rebuild_leaves_the_old_index_and_the_next_removes_its_files(
        destination: Destination, where: tuple[str, str]) -> None:
    ShardIndex.build(destination, PREFIX, records(1_500), "changes/0001.xml")
    before = files(destination)
    _killed(where, "rebuild", 2_500)
    left = files(destination)
    orphans = set(left) - set(before)
    assert len(orphans) == 3 and all("/snapshot-" in key for key in orphans)
    assert {key: left[key] for key in before} == before

    index = ShardIndex.open(destination, PREFIX)
    assert state(index) == ("changes/0001.xml", 1_500, 0)
    assert index.lookup([uri(1), uri(2_000)]) == {uri(1): record(1), uri(2_000): None}
    index.rebuild(records(500), "changes/0002.xml")
    assert len(files(destination)) == 2  # the manifest and one shard: no orphan left


def test_an_apply_killed_before_its_manifest_and_done_again_counts_its_changes_once(
        destination: Destination, where: tuple[str, str]) -> None:
    ShardIndex.build(destination, PREFIX, records(3_000), "changes/0001.xml")
    _killed(where, "apply", 3_000)
    index = ShardIndex.open(destination, PREFIX)
    assert state(index) == ("changes/0001.xml", 3_000, 0)  # the manifest was not written

    index.apply(changes(3_000), "changes/0002.xml")  # the journal's replay
    expected: dict[str, Any] = dict(changes(3_000))
    for reader in (index, ShardIndex.open(destination, PREFIX)):
        assert state(reader) == ("changes/0002.xml", 3_000, 10)
        assert reader.lookup(expected) == expected


@settings(max_examples=200, deadline=None)
@given(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2999, 1, 1),
                    timezones=st.sampled_from([UTC, timezone(timedelta(hours=-5, minutes=-30))]))
       | st.none(),
       st.lists(st.sampled_from(["md5:ab12", "sha-256:ffee", "SHA-1:00", "x:y:z"]), max_size=3),
       st.sampled_from(["text/plain", None]))
def test_a_compaction_writes_each_stored_row_as_its_record_would_be_written(
        lastmod: datetime | None, tokens: list[str], kind: str | None) -> None:
    """A compaction turns the run's stored rows into the index's JSON rows directly
    (``stored_json_row``): the same rows as through each row's record, times in any zone (to
    the microsecond), none, and hashes of any form the store holds."""
    held = ObjectRecord(uri(1), "k/1", 12, Hashes.parse(" ".join(tokens)), lastmod, kind)
    store = RecordStore()
    try:
        store.put(held, None)
        (row,) = store.rows()
        assert stored_json_row(row) == row_of(held.uri, record_of(row)) == row_of(held.uri, held)
    finally:
        store.close()
