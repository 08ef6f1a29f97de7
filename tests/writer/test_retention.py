"""The Source writer's retention (issue 28, item 2; docs/design.md, "Retention"): with
``keep_changes_for`` it retires the Change Lists that end before that long ago, never one
holding changes the Resource List lacks, nor the newest; the mirror keeps every one."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from airflow_provider_resourcesync.errors import InvalidValueError
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.writer import (
    CHANGE_LIST_INDEX,
    CHANGES,
    RESOURCE_LIST,
    MirrorState,
    SourceWriter,
)

from .test_run_costs import T0, item, mirror_of

SIZE = 1_000  # a change or two a run: the size rule (a tenth of the list) never trips
DAY = timedelta(days=1)


def lists(destination: Destination) -> list[datetime]:
    """The ``until`` of each Change List the index lists; each one listed is there, and no
    other is under ``changes/``."""
    index = read_document(destination.read_bytes(CHANGE_LIST_INDEX) or b"")
    names = {entry.loc.rpartition("/")[2] for entry in index}
    assert {key.removeprefix(CHANGES) for key in destination.keys(CHANGES)} == names
    return [entry.md.until for entry in index if entry.md and entry.md.until]


def snapshot_at(destination: Destination) -> datetime | None:
    md = read_document(destination.read_bytes(RESOURCE_LIST) or b"").head.md
    return md.at if md else None


def save(destination: Destination, day: int, changed: range, **options: object) -> None:
    """A save on ``day`` after the first updating the records ``changed``."""
    when = T0 + day * DAY
    options = {"resource_list_max_age": None, **options}
    with SourceWriter.load(destination, clock=lambda: when, **options) as writer:
        for n in changed:
            writer.put(item(n, day))
        writer.save(checkpoint={"day": day})


def test_changes_the_resource_list_lacks_are_kept_however_old_then_retired_after_it(
        destination: Destination) -> None:
    mirror_of(destination, SIZE)
    for day in range(1, 11):
        save(destination, day, range(day, day + 1), keep_changes_for=DAY)
    assert snapshot_at(destination) == T0  # no compaction: every list holds what it lacks
    assert len(lists(destination)) == 10
    save(destination, 11, range(100, 300), keep_changes_for=DAY)  # a compaction
    assert snapshot_at(destination) == T0 + 11 * DAY
    assert lists(destination) == [T0 + 10 * DAY, T0 + 11 * DAY]  # ending a day ago or later
    save(destination, 20, range(1), keep_changes_for=DAY)
    assert lists(destination) == [T0 + 11 * DAY, T0 + 20 * DAY]  # not after the Resource List
    # a quiet save compacts, the list of day 20 being a day old: the Resource List lacks
    # nothing then, yet the newest list stays, so a follower from before it meets the gap
    save(destination, 22, range(0), keep_changes_for=DAY, resource_list_max_age=DAY)
    assert snapshot_at(destination) == T0 + 22 * DAY
    save(destination, 40, range(0), keep_changes_for=DAY)
    assert lists(destination) == [T0 + 20 * DAY]


def test_the_mirror_and_a_writer_without_keep_changes_for_keep_every_change_list(
        destination: Destination) -> None:
    mirror_of(destination, SIZE)
    for day in range(1, 6):
        save(destination, 10 * day, range(100 * day, 100 * day + 200))  # each compacts
    assert len(lists(destination)) == 5
    with MirrorState.load(destination, clock=lambda: T0 + 100 * DAY) as state:
        state.put(item(1, 100))
        state.save(checkpoint={})
    assert len(lists(destination)) == 6


def test_a_negative_keep_changes_for_is_refused(destination: Destination) -> None:
    with pytest.raises(InvalidValueError, match="keep_changes_for"):
        SourceWriter(destination, keep_changes_for=-DAY)
