"""Defects the model found (issue 26, item 5), each the shortest sequence of its steps that
shows it, as a plain test (each failed on the package as the model found it)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.sync.incremental import run_incremental

from ..interop.resync import Resync
from .machine import WriterModel
from .sources import Publisher
from .test_resync_joins import resources, resync_baseline
from .test_writer_model import worlds


@pytest.fixture
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[WriterModel]:
    """The model of the Source named by the test's parameter, on local disk."""
    machine = type("Found", (WriterModel,),
                   {"world": staticmethod(worlds(request.param, "local", tmp_path, request))})
    made = machine()
    yield made
    made.teardown()


publisher = pytest.mark.parametrize("state", ["publisher"], indirect=True)
mirror = pytest.mark.parametrize("state", ["mirror"], indirect=True)


@pytest.mark.parametrize("state", ["publisher", "mirror"], indirect=True)
def test_found_1_a_follower_runs_before_the_source_has_published_a_change(
        state: WriterModel) -> None:
    """A follower baselines after the first run and runs incrementally, on its schedule,
    before the collection changes: the Capability List lists no Change List (nor Change Dump)
    yet, since the first save writes none and quiet runs write none, and the run fails with
    DocumentError "no Change List to read changes from" at every run until a change is
    published, instead of finding nothing new."""
    state.first_run()
    for route in range(len(state.source.routes)):
        state.join(route=route)
    state.quiet(kill=None)
    with state.made.client() as client:
        for follower in state.followers:
            run_incremental(client, follower.destination, checkpoint=follower.checkpoint,
                            capability_list_url=state.source.capability_list,
                            method=follower.route[1])


@publisher
def test_found_2_a_publication_stuck_after_two_killed_runs(state: WriterModel) -> None:
    """The first run killed after its Resource List (writing the Resource Dump) and made again:
    the run made again finds every object recorded, compacts nothing, and saves a checkpoint
    with no snapshot time ("snapshot_at": null). The first run with changes then compacts and
    is killed after its new Resource List: made again, its Change Dump starts at the new
    Resource List's ``at``, its own window's end, and carrying out the plan raises
    InvalidValueError ("the plan must date changes apart") on every try: the publication is
    stuck."""
    state.run(state.tick(), lambda _, key: key.startswith("resourcedump/"))
    state.change(changed=[(17, False), (0, False), (1, False)],
                 kill=lambda _, key: key.startswith("index/snapshot-"))
    state.documents_list_each_change_once()
    state.followers_hold_the_collection()


@publisher
def test_found_3_a_run_killed_deleting_the_last_resource_dump_leaves_it(
        state: WriterModel) -> None:
    """A compacting run killed at its first deletion of the last Resource Dump's packages and
    made again: the run made again finds the new Resource Dump written and deletes nothing, so
    the old dump's packages and their manifests stay, named by no document, for good. (Since
    issue 28 the replaced dump's packages are deleted by a run past the documents' cache
    lifetime: the model's next run, killed there and made again.)"""
    state.first_run()
    deleting = lambda action, key: action == "delete" and key.startswith("resourcedump/")  # noqa: E731
    state.change(changed=[(17, False), (0, False), (1, False)], kill=deleting)
    state.run(state.tick(), deleting)
    store = state.source.store
    named = {store.key_of(url) for entry in read_document(store.read("resourcedump.xml"))
             for url in (entry.loc, *(link.href for link in entry.links_for("contents")))}
    assert set(store.listing("resourcedump/")) == named


@mirror
def test_found_4_a_change_on_a_clock_behind_the_snapshot_is_dated_before_it(
        state: WriterModel) -> None:
    """A mirror's baseline made again that changes nothing compacts: the Resource List's
    ``at`` moves past the end of the last Change List. The next run, on a clock behind that
    ``at`` (another host's), dates its change at the start of its list, which is before the
    Resource List's ``at``: a follower standing at that snapshot, and a late joiner
    baselining from it, skip the change as older than the snapshot."""
    state.first_run()
    state.change(changed=[(10, True)], kill=None)
    state.rebaseline(changed=[], kill=None)
    state.join(route=0)
    state.apply([(10, False)])
    state.run(state.audit.snapshot_at() - timedelta(hours=1), None)
    state.join(route=0)
    state.followers_hold_the_collection()


@mirror
def test_found_5_a_baseline_made_again_before_the_first_change_list_opens_a_gap(
        state: WriterModel) -> None:
    """A mirror's baseline made again (or an audit) before any Change List, changing nothing,
    compacts: the Resource List's ``at`` moves on with no document covering the time since the
    last one. The first Change List then starts at the new ``at``, and a follower that
    baselined from the first Resource List meets a gap (ChangeGapError) at its next run."""
    state.first_run()
    state.join(route=0)
    state.rebaseline(changed=[], kill=None)
    state.change(changed=[(0, False)], kill=None)
    state.followers_hold_the_collection()


@publisher
def test_found_6_resync_joining_late_gets_what_the_age_bound_folded_in(
        state: WriterModel, resync: Resync) -> None:
    """resync reads no Change List Index: joining after a run whose changes stay under a tenth
    of the collection (no compaction), it takes the Resource List at its word, which does not
    list the object created since. The writer bounds the Resource List's age
    (``resource_list_max_age``, made short here): the first run past it, a quiet one too,
    rewrites the list, and resync joining then holds the collection."""
    assert isinstance(state.source, Publisher)
    state.source.max_age = timedelta(milliseconds=1)
    state.first_run()
    state.change(changed=[(0, False), (25, False)], kill=None)
    state.quiet(kill=None)
    assert resync_baseline(resync, state) == resources(state)
