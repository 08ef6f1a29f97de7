"""Successive runs of a mirror can run on hosts whose clocks disagree (a container per task): a
save whose clock reads the last save's time, or earlier, still writes a Change List of its own
after the last one, so a Destination following the mirror's journal misses none of the changes
(docs/design.md, "The Source writer")."""

from __future__ import annotations

from datetime import timedelta

from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.writer import MirrorState

from .test_killed_compaction import journal
from .test_run_costs import T0, collection, expected, item, mirror_of


def test_a_save_whose_clock_is_behind_the_last_one_keeps_its_change_list(
        destination: Destination) -> None:
    mirror_of(destination, 300)
    for hour, n in ((2, 40), (2, 41), (1, 42)):  # the same time again, then an hour earlier
        now = T0 + timedelta(hours=hour)
        with MirrorState.load(destination, clock=lambda now=now: now) as state:
            state.put(item(n, 1))
            state.save(checkpoint={"n": n})
    assert len(list(destination.keys(RESERVED_PREFIX + "changes/"))) == 3
    changed = {destination.object_url(item(n).key): item(n, 1).length for n in (40, 41, 42)}
    assert [(loc, length) for loc, _, length in journal(destination)] == list(changed.items())
    assert collection(destination) == expected(destination, 300, iter([])) | changed
    with MirrorState.load(destination) as state:
        assert len(state) == 300  # read whole from the documents, so the save compacts
        state.put(item(43, 1))
        state.save(checkpoint={})
    with MirrorState.load(destination) as state:
        assert [state.get(item(n).uri) for n in (40, 41, 42, 43)] == [
            item(n, 1) for n in (40, 41, 42, 43)]
