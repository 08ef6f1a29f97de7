"""The changes between the previous snapshot and a new inventory: created, updated, deleted,
each dated inside the run's window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.errors import ConfigurationError, InventoryError
from airflow_provider_resourcesync.publish import Change, ChangeKind, changes
from airflow_provider_resourcesync.publish.inventory import (
    InventoryObject,
    S3ReportReader,
    read_report,
    walk_directory,
)

from .reports import MANIFEST, SOURCE, s3_put, write_report

SINCE = datetime(2026, 11, 24, tzinfo=UTC)
UNTIL = datetime(2026, 11, 25, tzinfo=UTC)
HOUR = timedelta(hours=1)
TICK = timedelta(microseconds=1)


def item(key: str, size: int = 1, etag: str = "e", at: datetime = SINCE + HOUR,
         **flags: Any) -> InventoryObject:
    return InventoryObject(key, size, etag, at, **flags)


def kinds(found: list[Change]) -> list[tuple[str, ChangeKind, datetime]]:
    return [(change.key, change.kind, change.time) for change in found]


def test_created_updated_and_deleted_in_key_order() -> None:
    previous = [item("a"), item("b"), item("c"), item("d", etag="old"), item("f")]
    current = [item("a"), item("b", size=2, at=SINCE + 2 * HOUR), item("d", etag="new"),
               item("e", at=SINCE + 3 * HOUR), item("g")]
    found = list(changes(previous, current, since=SINCE, until=UNTIL))
    assert kinds(found) == [
        ("b", ChangeKind.UPDATED, SINCE + 2 * HOUR),
        ("c", ChangeKind.DELETED, UNTIL),
        ("d", ChangeKind.UPDATED, SINCE + HOUR),
        ("e", ChangeKind.CREATED, SINCE + 3 * HOUR),
        ("f", ChangeKind.DELETED, UNTIL),
        ("g", ChangeKind.CREATED, SINCE + HOUR),
    ]
    assert found[0].previous == previous[1] and found[0].current == current[1]
    assert found[1].current is None and found[3].previous is None


def test_change_times_stay_inside_the_window() -> None:
    late = item("late", at=UNTIL + HOUR)  # written after the inventory was taken
    early = item("early", at=SINCE - HOUR)  # older than the last publication, never seen
    edge = item("edge", at=SINCE)
    found = list(changes([], [early, edge, late], since=SINCE, until=UNTIL))
    assert kinds(found) == [("early", ChangeKind.CREATED, SINCE + TICK),
                            ("edge", ChangeKind.CREATED, SINCE + TICK),
                            ("late", ChangeKind.CREATED, UNTIL)]
    first = list(changes([], [early], since=None, until=UNTIL))
    assert kinds(first) == [("early", ChangeKind.CREATED, SINCE - HOUR)]


def test_versions_count_only_when_latest_and_a_delete_marker_dates_the_deletion() -> None:
    previous = [item("gone"), item("kept", etag="v1"), item("marked-twice")]
    current = [
        item("gone", at=SINCE + 5 * HOUR, is_latest=True, is_delete_marker=True),
        item("kept", etag="v1", at=SINCE - HOUR, is_latest=True),
        item("kept", etag="v0", is_latest=False),
        item("marked-twice", at=SINCE - HOUR, is_delete_marker=True),
        item("never", is_delete_marker=True),  # created and deleted in between: nothing
    ]
    assert kinds(list(changes(previous, current, since=SINCE, until=UNTIL))) == [
        ("gone", ChangeKind.DELETED, SINCE + 5 * HOUR),
        ("marked-twice", ChangeKind.DELETED, SINCE + TICK),
    ]


def test_streams_out_of_key_order_are_errors_naming_both_keys() -> None:
    with pytest.raises(InventoryError, match="the previous snapshot: key 'a' comes after 'b'"
                       ) as caught:
        list(changes([item("b"), item("a")], [], since=SINCE, until=UNTIL))
    assert not caught.value.rerun_helps
    with pytest.raises(InventoryError, match="the inventory: key 'x' comes twice"):
        list(changes([], [item("x"), item("x")], since=SINCE, until=UNTIL))


def test_an_inventory_not_after_the_snapshot_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="not after the previous snapshot"):
        list(changes([], [], since=UNTIL, until=UNTIL))


def test_a_versioned_report_in_s3_against_the_previous_snapshot(s3_client: Any,
                                                                bucket: str) -> None:
    previous = [item("a b"), item("deleted"), item("marked"), item("same")]
    rows = [
        item("marked", size=0, etag="", at=SINCE + 4 * HOUR, version_id="m",
             is_delete_marker=True),
        item("same", version_id="s1"),
        item("new", at=SINCE + 2 * HOUR, version_id="n1"),
        item("marked", version_id="m0", is_latest=False),
        item("a b", size=9, at=SINCE + 3 * HOUR, version_id="ab2"),
        item("a b", version_id="ab1", is_latest=False),
    ]
    write_report(s3_put(s3_client, bucket), [rows[:3], rows[3:]], created=UNTIL)
    report = read_report(S3ReportReader(s3_client, bucket), MANIFEST, bucket=SOURCE)
    found = list(changes(previous, report.ordered(), since=SINCE, until=report.created))
    assert kinds(found) == [
        ("a b", ChangeKind.UPDATED, SINCE + 3 * HOUR),
        ("deleted", ChangeKind.DELETED, UNTIL),
        ("marked", ChangeKind.DELETED, SINCE + 4 * HOUR),
        ("new", ChangeKind.CREATED, SINCE + 2 * HOUR),
    ]


def test_a_directory_walk_diffed_against_its_earlier_walk(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / name).write_text(name)
    before = list(walk_directory(tmp_path))
    (tmp_path / "a").unlink()
    (tmp_path / "b").write_text("bb")
    (tmp_path / "d").write_text("d")
    found = list(changes(before, walk_directory(tmp_path), since=None,
                         until=datetime.now(UTC) + HOUR))
    assert [(change.key, change.kind) for change in found] == [
        ("a", ChangeKind.DELETED), ("b", ChangeKind.UPDATED), ("d", ChangeKind.CREATED)]
