"""An incremental save of the mirror's state that does not compact (it appends a Change List
and folds it into the lookup index), killed for real (SIGKILL in a child process) just before
each of its writes in turn, then made again: the documents hold every change once, and the
lookups agree with them (docs/design.md, "The journal is the truth")."""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pytest

from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.writer import CHANGE_LIST_INDEX, RESOURCE_LIST, ShardIndex

from ..killing import run_child
from .records import kill_before_write
from .test_run_costs import collection, expected, item, mirror_of, run


def killed_run(root: Path, kill_at: int, hour: int) -> None:
    """In a child: makes the run of ``hour`` of the mirror at ``root``, killing itself just
    before its ``kill_at``-th write under the mirror's folder."""
    destination = LocalDestination(root)
    kill_before_write(destination, kill_at)
    run(destination, range(10, 20), hour, hour)


def listed_changes(destination: LocalDestination) -> Counter[str]:
    """How many times the Change Lists the index lists, after the Resource List's ``at``, list
    each loc."""
    snapshot = read_document(destination.read_bytes(RESOURCE_LIST) or b"")
    assert snapshot.head.md is not None and snapshot.head.md.at is not None
    counted: Counter[str] = Counter()
    for listed in read_document(destination.read_bytes(CHANGE_LIST_INDEX) or b""):
        for entry in read_document(destination.read_bytes(listed.loc[len(destination.url):])
                                   or b""):
            assert entry.md is not None and entry.md.datetime is not None
            if entry.md.datetime > snapshot.head.md.at:
                counted[entry.loc] += 1
    return counted


def unlisted(destination: LocalDestination) -> set[str]:
    """The Change Lists under ``changes/`` that the Change List Index does not list."""
    index = read_document(destination.read_bytes(CHANGE_LIST_INDEX) or b"")
    listed = {entry.loc[len(destination.url):] for entry in index}
    return set(destination.keys(RESERVED_PREFIX + "changes/")) - listed


@pytest.mark.parametrize("runs_before", [0, 1], ids=["first-list", "later-list"])
def test_a_save_killed_before_any_write_and_made_again_records_each_change_once(
        tmp_path: Path, runs_before: int) -> None:
    killed_at: list[str] = []
    hour = 1 + runs_before
    for trial in range(1, 20):  # one kill per write of the save, until a run is not killed
        destination = LocalDestination(tmp_path / f"mirror-{trial}")
        mirror_of(destination, 300)
        runs = [(range(30, 33), 1, 1)][:runs_before]
        for changes, version, before in runs:
            run(destination, changes, version, before)
        killed = run_child(killed_run, destination.root, trial, hour)
        if killed.exitcode == 0:
            break
        assert killed.exitcode == -signal.SIGKILL, killed.traceback
        killed_at.append(killed.said)
        run(destination, range(10, 20), hour, hour, later=30)  # made again
        runs.append((range(10, 20), hour, hour))
        held = expected(destination, 300, iter(runs))
        assert collection(destination) == held, killed_at[-1]
        assert max(listed_changes(destination).values()) == 1, killed_at[-1]
        assert unlisted(destination) == set(), killed_at[-1]  # no list a rebuild would replay
        index = ShardIndex.open(destination, RESERVED_PREFIX + "index/")
        assert index.delta_records > 0, killed_at[-1]  # no compaction: the journal holds them
        assert {destination.object_url(record.key): record.length
                for record in index.lookup([item(n).uri for n in range(300)]).values()
                if record is not None} == {loc: length for loc, length in held.items()
                                           if "/r/000" in loc}, killed_at[-1]
    else:
        pytest.fail("every run was killed: the save writes more than 19 documents?")
    assert [key.rpartition("/")[2] for key in killed_at[-3:]] == [
        "capabilitylist.xml", "description.xml", "checkpoint.json"]
    assert any("/changes/" in key for key in killed_at) and any(
        "/index/" in key for key in killed_at), killed_at
