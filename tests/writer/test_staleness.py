"""The Resource List's age bound (issue 26, item 2; docs/design.md, "Late joiners"): a follower
that reads the Resource List and no Change List (resync reads no Change List Index) finds in it
every change saved more than ``resource_list_max_age`` (a day by default) before the last save; the
writer rewrites it once the oldest save it lacks is that old, and not for a change after a quiet
spell."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from airflow_provider_resourcesync.errors import InvalidValueError
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.writer import RESOURCE_LIST, MirrorState

from .test_run_costs import T0, item, mirror_of

SIZE = 1_000  # one change a run: the size rule (a tenth of the list) never trips here


def listed(destination: Destination) -> tuple[datetime | None, dict[str, int | None]]:
    """The Resource List's ``at`` and what it lists: URI -> length."""
    document = read_document(destination.read_bytes(RESOURCE_LIST) or b"")
    assert document.head.md is not None
    return document.head.md.at, {entry.links[0].href if entry.links else entry.loc:
                                 entry.md.length if entry.md else None for entry in document}


def change(destination: Destination, hours: float, n: int, **options: object) -> datetime:
    """A run at ``hours`` after the collection's first save that updates record ``n``."""
    when = T0 + timedelta(hours=hours)
    with MirrorState.load(destination, clock=lambda: when, **options) as state:
        state.put(item(n, 1))
        state.save(checkpoint={"hours": hours})
    return when


def test_a_resource_list_lacks_no_change_saved_a_day_before(destination: Destination) -> None:
    mirror_of(destination, SIZE)
    for hour in range(1, 24):  # 23 hourly runs: the oldest lacked save is 22 hours old
        change(destination, hour, hour)
    at, entries = listed(destination)
    assert at == T0 and entries[item(1).uri] == item(1).length  # not rewritten yet

    rewritten = change(destination, 25, 25)  # the run at 1 h is now a day old
    at, entries = listed(destination)
    assert at == rewritten
    assert all(entries[item(n).uri] == item(n, 1).length for n in [*range(1, 24), 25])
    assert len(entries) == SIZE

    change(destination, 26, 26)  # the bound counts from the oldest save lacked: none was
    assert listed(destination)[0] == rewritten


def test_a_quiet_run_past_the_bound_rewrites_the_list_the_changes_stopped_short_of(
        destination: Destination) -> None:
    """The bound holds when changes stop: a quiet run (which writes no Change List) past it
    still rewrites the Resource List, once (found by the model test: resync joining after the
    last change, however long after, missed it)."""
    mirror_of(destination, SIZE)
    change(destination, 1, 1)

    def quiet(hours: float) -> None:
        when = T0 + timedelta(hours=hours)
        with MirrorState.load(destination, clock=lambda: when) as state:
            state.save(checkpoint={"hours": hours})

    quiet(20)
    assert listed(destination)[0] == T0
    quiet(26)
    at, entries = listed(destination)
    assert at == T0 + timedelta(hours=26) and entries[item(1).uri] == item(1, 1).length
    quiet(60)  # nothing lacked since: no rewrite
    assert listed(destination)[0] == at


def test_a_change_after_a_quiet_spell_does_not_rewrite_the_list(
        destination: Destination) -> None:
    """A list after a quiet spell starts where the last one ended, long ago: the bound counts
    from the oldest save whose changes the Resource List lacks, not from its ``from``."""
    mirror_of(destination, SIZE)
    change(destination, 24 * 30, 1)  # a month later: the first change since
    assert listed(destination)[0] == T0
    later = change(destination, 24 * 31 + 1, 2)
    assert listed(destination)[0] == later


def test_no_bound_leaves_the_size_rule_alone(destination: Destination) -> None:
    mirror_of(destination, SIZE)
    for hour in range(1, 50):
        change(destination, hour, hour, resource_list_max_age=None)
    assert listed(destination)[0] == T0


def test_a_negative_bound_is_refused(destination: Destination) -> None:
    with pytest.raises(InvalidValueError, match=r"age bound .* is negative"):
        MirrorState(destination, resource_list_max_age=timedelta(hours=-1))
