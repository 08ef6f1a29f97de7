"""A Change Dump's gap (issue 28, item 2): the first package ending after a position must start
no later than what the position covers, else the packages between were retired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_resourcesync.errors import ChangeGapError
from airflow_provider_resourcesync.protocol.gap import check_no_package_gap
from airflow_provider_resourcesync.protocol.position import ChangeListRef, ChangePosition

T = datetime(2030, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
DUMP = "https://example.org/changedump.xml"


def package(start: datetime, end: datetime) -> ChangeListRef:
    return ChangeListRef(f"https://example.org/packages/{start:%H}.zip", start, end)


def read_whole(until: datetime) -> ChangePosition:
    """Standing at the end of a package read whole, as the incremental engine leaves it."""
    return ChangePosition(until, package(until - H, until).url, None, 3, "x", until, True)


@pytest.mark.parametrize("position", [
    read_whole(T),  # the next package starts where it ended
    ChangePosition(T),  # a baseline's snapshot at the package's start
    ChangePosition(T + H / 2, "https://example.org/changes/a.xml", T, 2, "x"),  # within a list
    ChangePosition(T + H / 2, package(T, T + H).url, None, 1, "x"),  # within the package
])
def test_no_gap_where_the_package_starts_by_what_the_position_covers(
        position: ChangePosition) -> None:
    check_no_package_gap(DUMP, package(T, T + H), position)


@pytest.mark.parametrize("position", [read_whole(T - H), ChangePosition(T - H)])
def test_a_package_starting_after_what_the_position_covers_is_a_gap(
        position: ChangePosition) -> None:
    with pytest.raises(ChangeGapError, match="no longer offers every change"):
        check_no_package_gap(DUMP, package(T, T + H), position)
