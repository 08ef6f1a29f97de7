"""Continuity, the writer's promise to followers (docs/design.md, "Continuity"; issue 26): the
Resource List's ``at`` and the Change Lists after it cover time with no hole, whatever saves
found nothing to list in between, so a follower standing at any earlier save (a baseline's
snapshot, or the end of a list it read whole) is offered every later change."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_provider_resourcesync.protocol.gap import first_after_gap
from airflow_provider_resourcesync.protocol.position import ChangeListRef, ChangePosition
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.writer import (
    CHANGE_LIST_INDEX,
    RESOURCE_LIST,
    MirrorState,
)

from .test_run_costs import T0, item, mirror_of


def offered(destination: Destination) -> tuple[ChangePosition, list[ChangeListRef]]:
    """A baseline's position (the Resource List's ``at``) and the lists the index offers."""
    snapshot = read_document(destination.read_bytes(RESOURCE_LIST) or b"").head.md
    assert snapshot is not None and snapshot.at is not None
    index = read_document(destination.read_bytes(CHANGE_LIST_INDEX) or b"")
    return ChangePosition.at(snapshot.at), [
        ChangeListRef(entry.loc, entry.md.from_, entry.md.until)
        for entry in index if entry.md is not None]


@pytest.mark.parametrize("quiet", [1, 3])
def test_saves_that_change_nothing_leave_no_hole_between_the_lists(
        destination: Destination, quiet: int) -> None:
    mirror_of(destination, 30)
    hour = 0
    for n in (1, 2):
        for _ in range(quiet):  # saves that found nothing: no list, the covered time kept
            hour += 1
            with MirrorState.load(destination, clock=lambda h=hour: T0 + timedelta(hours=h)
                                  ) as state:
                state.save(checkpoint={"hour": hour})
        hour += 1
        with MirrorState.load(destination, clock=lambda h=hour: T0 + timedelta(hours=h)
                              ) as state:
            state.put(item(n, 1))
            state.save(checkpoint={"hour": hour})
    baseline, lists = offered(destination)
    assert len(lists) == 2
    assert lists[0].from_ == baseline.time  # from the snapshot, not from a quiet save
    assert lists[1].from_ == lists[0].until  # each list from where the one before ended
    assert first_after_gap(lists, baseline) is None
