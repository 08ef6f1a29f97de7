"""A run's plan: changes ordered by time then key, dated apart where times are shared (a bulk
upload at one second, deletions at the inventory's time), kept and read back whole."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from airflow_provider_resourcesync.errors import DocumentError
from airflow_provider_resourcesync.protocol.model import Change
from airflow_provider_resourcesync.publish.packages import Planned
from airflow_provider_resourcesync.publish.plan import (
    DatedApart,
    Plan,
    read_plan,
    write_plan,
)
from airflow_provider_resourcesync.storage.local import LocalDestination

T = datetime(2026, 1, 1, tzinfo=UTC)
TICK = timedelta(microseconds=1)


def change(key: str, when: datetime, kind: Change = Change.UPDATED) -> Planned:
    return Planned(key, f"https://cdn.example.org/{key}", kind, when, 3, "etag", None)


def test_changes_are_ordered_by_time_then_key_and_dated_apart() -> None:
    second = T + timedelta(seconds=1)
    given = [change("c", second), change("a", second), change("z", T),
             change("b", second), change("late", second + 2 * TICK)]
    with DatedApart(given) as apart:
        ordered = list(apart)
        assert apart.last == second + 3 * TICK
    assert [(item.key, item.when) for item in ordered] == [
        ("z", T), ("a", second), ("b", second + TICK), ("c", second + 2 * TICK),
        ("late", second + 3 * TICK)]  # pushed on by the crowd before it, order kept


def test_a_plan_is_read_back_as_written_and_a_broken_one_is_named(tmp_path: Path) -> None:
    destination = LocalDestination(tmp_path)
    plan = Plan(T, T + timedelta(days=1), T + timedelta(days=1), "objects/x.jsonl.gz")
    changes = [change("a b/é", T + TICK, Change.CREATED), change("gone", T + 2 * TICK,
                                                                  Change.DELETED)]
    assert write_plan(destination, "plans/p.jsonl.gz", plan, iter(changes)) == 2
    read, streamed = read_plan(destination, "plans/p.jsonl.gz")
    assert read == plan and list(streamed) == changes
    destination.write_bytes("plans/bad.jsonl.gz", b"not gzip", "application/gzip")
    with pytest.raises(DocumentError, match="not a publication plan"):
        read_plan(destination, "plans/bad.jsonl.gz")
