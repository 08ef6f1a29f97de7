"""resync 2.0.1, the reference implementation, joins the model's Source late, as one of its
followers: after changes, kills, compactions and a clock gone back, its baseline from the
Resource List holds what the Source's documents describe. resync reads no Change List Index, so
it joins right after a run that compacts: between compactions the Resource List lacks the
latest changes, for at most its age bound (tests/model/test_found.py, found 6)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis.stateful import precondition, rule, run_state_machine_as_test

from ..interop.resync import Resync
from ..interop.test_resync_follows_our_mirror import files_under
from .machine import WriterModel, bounded, kills, many_changes
from .test_writer_model import worlds


class ResyncJoins(WriterModel):
    """The model, with resync joining once at most."""

    resync: ClassVar[Resync]

    def __init__(self) -> None:
        super().__init__()
        self.resynced = False

    @precondition(lambda self: not self.resynced and not self.pending)
    @rule(changed=many_changes, kill=kills)
    def resync_joins(self, changed: list[tuple[int, bool]], kill: int | None) -> None:
        """A run that compacts (killed at a write and made again, if drawn), then resync
        baselines."""
        self.resynced = True
        self.compact(changed, kill)
        assert self.snapshot_current()
        assert resync_baseline(self.resync, self) == resources(self)


def resync_baseline(resync: Resync, state: WriterModel) -> dict[str, bytes]:
    """What resync's baseline from the model's Source holds: each resource's bytes by its URL
    under the Source's resources (resync keeps a path's percent-escapes in its file names)."""
    into, cwd = state.made.folder / "resync", state.made.folder / "resync-status"
    into.mkdir()
    cwd.mkdir()
    resync.run("resync-sync", "--baseline", f"--capabilitylist={state.source.capability_list}",
               f"{state.source.resources}={into}", cwd=cwd)
    return files_under(into)


def resources(state: WriterModel) -> dict[str, bytes]:
    """What resync should hold: the published bytes by their URLs under the resources."""
    return {url.removeprefix(state.source.resources): body for url, body in state.view().items()}


@pytest.mark.parametrize("user", ["publisher", "mirror"])
def test_resync_joining_late_holds_the_collection(
        user: str, resync: Resync, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    model = type(f"Resync{user.title()}Model", (ResyncJoins,), {
        "world": staticmethod(worlds(user, "local", tmp_path, request)), "resync": resync})
    run_state_machine_as_test(model, settings=bounded(5, 8))
