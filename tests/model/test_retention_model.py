"""Retention in the model (issue 28, item 2): a publisher keeping its changes for no time at
all (``keep_changes_for=timedelta(0)``: at each compaction, every Change List and Change Dump
the Resource List no longer lacks is retired, the newest excepted), over any sequence of
changes, quiet runs, compactions, runs killed at any write (deletions included) and made
again: followers that run after every step and followers joining at any step by each route
never meet a gap and equal the collection, every document validates and is reached (nothing
left unlisted), and each URI's changes still listed are the latest of those published, once
each."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis.stateful import invariant, run_state_machine_as_test

from .machine import World, WriterModel, bounded
from .test_writer_model import SIZES, worlds


class RetainingModel(WriterModel):
    """The model, each change listed at most once and the ones listed the latest."""

    @invariant()
    def documents_list_each_change_once(self) -> None:
        listed = self.audit.check()
        for series in self.source.series:
            for uri, changes in listed.get(series, {}).items():
                assert changes == self.expected[uri][-len(changes):], (series, uri)


@pytest.mark.parametrize("storage", ["local", "s3"])
def test_followers_of_a_publication_keeping_no_old_changes_meet_no_gap(
        storage: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    examples, steps = SIZES[storage]
    world = worlds("publisher", storage, tmp_path, request)

    def retaining(initial: dict[str, bytes]) -> World:
        made = world(initial)
        made.source.keep_changes_for = timedelta(0)  # type: ignore[attr-defined]
        return made

    model = type("RetainingPublisherModel", (RetainingModel,),
                 {"world": staticmethod(retaining)})
    run_state_machine_as_test(model, settings=bounded(examples, steps))
