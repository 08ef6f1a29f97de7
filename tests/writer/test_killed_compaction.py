"""A save of the mirror's state that compacts (the journal past a tenth of the snapshot, or a run
that read every record, as a baseline does: the Resource List is rewritten and the lookup index
rebuilt), killed for real (SIGKILL in a child process) just before each of its writes and
deletions in turn, then made again, on local disk and on S3 (moto's server over HTTP): every
document validates, the Resource List and the Change Lists after its ``at`` are the collection,
the journal lists each change once, so a Destination following it across the compaction ends
with the collection too, and the lookup index agrees with the documents; a split Resource List
(past 50,000 entries) killed between its parts loses no record (docs/design.md, "The Source
writer"; issue 14)."""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from airflow_provider_resourcesync.protocol.model import Change
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.validate import has_errors, validate_source
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.writer import (
    CAPABILITY_LIST,
    CHANGE_LIST_INDEX,
    RESOURCE_LIST,
    MirrorState,
    ObjectRecord,
    ShardIndex,
)

from ..killing import run_child
from .records import kill_before_write, opened
from .test_run_costs import T0, collection, expected, item, mirror_of, run

SIZE = 300
#: A run before the killed one, so the journal and the index's delta hold something already.
BEFORE = (range(30, 33), 1, 1)

Run = Callable[..., None]


def read_everything(destination: Destination, changes: range, version: int, hour: int, *,
                    later: int = 0) -> None:
    """The changes of :func:`~.test_run_costs.run`, made by a run that reads every record (as a
    baseline does): what the Source lists is put, what it no longer lists removed."""
    clock = iter(T0 + timedelta(hours=hour, minutes=later, microseconds=n)
                 for n in range(10_000))
    with MirrorState.load(destination, clock=lambda: next(clock)) as state:
        listed = {record.uri: record for record in state.records()}
        for n in changes:
            if n % 3:
                listed[item(n).uri] = item(n, version)
            else:
                listed.pop(item(n).uri, None)
        listed[item(10_000 + hour).uri] = item(10_000 + hour)
        for uri in listed:
            state.mark_seen(uri)
        for uri in list(state.unseen()):
            state.remove(uri)
        for record in listed.values():
            state.put(record)
        state.save(checkpoint={"hour": hour})


#: The saves that compact: 40 changes and a creation, past a tenth of 300; or 10 changes and a
#: creation, under it, by a run that read every record.
RUNS: dict[str, tuple[Run, range]] = {"past-a-tenth": (run, range(100, 140)),
                                      "reads-everything": (read_everything, range(10, 20))}

def killed_run(where: tuple[str, str], kill_at: int, kind: str, hour: int) -> None:
    """In a child: opens the destination ``where`` names (:func:`.records.opened`) and makes the
    run ``kind`` of RUNS at ``hour``, killing itself just before its ``kill_at``-th write or
    deletion under the mirror's folder."""
    destination = opened(*where)
    kill_before_write(destination, kill_at, deletes=True)
    made, changes = RUNS[kind]
    made(destination, changes, hour, hour)


def held(runs: list[tuple[range, int, int]]) -> dict[str, ObjectRecord | None]:
    """What the mirror holds for each URI after ``runs`` (None: removed)."""
    records: dict[str, ObjectRecord | None] = {item(n).uri: item(n) for n in range(SIZE)}
    for changes, version, hour in runs:
        for n in changes:
            records[item(n).uri] = item(n, version) if n % 3 else None
        records[item(10_000 + hour).uri] = item(10_000 + hour)
    return records


def journal(destination: Destination) -> list[tuple[str, Change, int | None]]:
    """Every change the Change Lists listed in the index make, in order: loc, change, length."""
    changes = []
    for listed in read_document(destination.read_bytes(CHANGE_LIST_INDEX) or b""):
        for entry in read_document(destination.read_bytes(listed.loc[len(destination.url):])
                                   or b""):
            assert entry.md is not None and entry.md.change is not None
            changes.append((entry.loc, entry.md.change, entry.md.length))
    return changes


def offered(destination: Destination) -> dict[str, int | None]:
    """What a Destination reading the mirror finds as the collection: the Resource List, and the
    Change Lists after its ``at`` if the Capability List offers them."""
    capabilities = read_document(destination.read_bytes(CAPABILITY_LIST) or b"")
    if any(entry.md is not None and entry.md.capability == "changelist"
           for entry in capabilities):
        return collection(destination)
    snapshot = read_document(destination.read_bytes(RESOURCE_LIST) or b"")
    return {entry.loc: entry.md.length for entry in snapshot if entry.md is not None}


def assert_valid(destination: Destination, killed_at: str) -> None:
    """Every document of the mirror validates."""
    for key in sorted(destination.keys(RESERVED_PREFIX)):
        if key.endswith(".xml"):
            findings = validate_source(destination.read_bytes(key) or b"",
                                       url=destination.object_url(key))
            assert not has_errors(findings), (killed_at, key, [str(f) for f in findings])


def assert_whole(destination: Destination, runs: list[tuple[range, int, int]],
                 killed_at: str) -> None:
    """The documents validate and are the collection, for a Destination that baselines from
    them and for one that follows the journal from the first Resource List; the lookup index
    and a run that reads everything agree with them."""
    assert_valid(destination, killed_at)
    now = expected(destination, SIZE, iter(runs))
    assert collection(destination) == now, killed_at

    changes = journal(destination)
    assert max(Counter(loc for loc, _, _ in changes).values()) == 1, (killed_at, changes)
    followed = expected(destination, SIZE, iter([]))
    for loc, change, length in changes:
        if change == Change.DELETED:
            followed.pop(loc, None)
        else:
            followed[loc] = length
    assert followed == now, killed_at

    records = held(runs)
    index = ShardIndex.open(destination, RESERVED_PREFIX + "index/")
    assert (index.snapshot_records, index.delta_records) == (len(now), 0), killed_at
    assert index.lookup(records) == records, killed_at
    with MirrorState.load(destination) as state:
        assert {record.uri: record for record in state.records()} == {
            uri: record for uri, record in records.items() if record is not None}, killed_at


def fresh(request: pytest.FixtureRequest, tmp_path: Path, where: str, trial: int
          ) -> tuple[Destination, tuple[str, str]]:
    """A new, empty destination on local disk or S3, and how a child opens it (its name and the
    S3 endpoint, for :func:`.records.opened`)."""
    if where == "local":
        name = (str(tmp_path / f"mirror-{trial}"), "")
    else:
        name = (f"s3://{request.getfixturevalue('bucket')}/mirror-{trial}/",
                request.getfixturevalue("s3_endpoint"))
    return opened(*name), name


@pytest.mark.parametrize(("where", "kind", "runs_before"), [
    ("local", "past-a-tenth", 1), ("local", "past-a-tenth", 0), ("local", "reads-everything", 1),
    ("s3", "past-a-tenth", 1), ("s3", "reads-everything", 1)])
def test_a_compacting_save_killed_before_any_write_and_made_again_keeps_the_mirror_whole(
        request: pytest.FixtureRequest, tmp_path: Path, where: str, kind: str,
        runs_before: int) -> None:
    made, changes = RUNS[kind]
    hour = 1 + runs_before
    killed_at: list[str] = []
    for trial in range(1, 40):  # one kill per write of the save, until a run is not killed
        destination, name = fresh(request, tmp_path, where, trial)
        mirror_of(destination, SIZE)
        runs = [BEFORE][:runs_before]
        for before in runs:
            run(destination, *before)
        killed = run_child(killed_run, name, trial, kind, hour)
        runs.append((changes, hour, hour))
        if killed.exitcode == 0:
            assert_whole(destination, runs, "not killed")
            break
        assert killed.exitcode == -signal.SIGKILL, killed.traceback
        killed_at.append(killed.said)
        # read between the kill and the next run: the collection before the run or after it
        assert_valid(destination, killed_at[-1])
        assert offered(destination) in (expected(destination, SIZE, iter(runs[:-1])),
                                        expected(destination, SIZE, iter(runs))), killed_at[-1]
        made(destination, changes, hour, hour, later=30)  # made again
        assert_whole(destination, runs, killed_at[-1])
    else:
        pytest.fail("every run was killed: the save writes more than 39 documents?")
    names = [key.removeprefix(RESERVED_PREFIX) for key in killed_at]
    assert "resourcelist.xml" in names and names[-3:] == [
        "capabilitylist.xml", "description.xml", "checkpoint.json"], names
    assert any(name.startswith("changes/") for name in names), names
    assert any(name.startswith("index/snapshot-") for name in names), names  # the rebuild
    assert names.count("index/manifest.json") == 2, names  # the apply's, and the rebuild's


#: The most entries in one of its documents: section 7's 50,000, made small (the mirror is
#: written with it and read with it).
MOST = 500
#: A mirror whose Resource List is split in two parts (10.2), published under :data:`BASE`.
SPLIT = MOST + 10
BASE = "https://mirror.example.net/data/"
#: An object whose URI sorts before every item's but the first: a Resource List written with
#: it moves the last entry of the first part into the second.
EARLY = ObjectRecord("https://example.org/r/000000a", "https/example.org/r/000000a", 7,
                     item(1).hashes, item(1).lastmod, "text/plain")

def killed_early(root: Path, kill_at: int) -> None:
    """In a child: makes :func:`add_early` at the mirror at ``root``, killing itself just before
    its ``kill_at``-th write of the Resource List (a part or the index)."""
    destination = LocalDestination(root)
    kill_before_write(destination, kill_at, under=".resourcesync/resourcelist")
    add_early(destination)


def add_early(destination: Destination, *, later: int = 0) -> None:
    """A run that reads every record (as a baseline does), so it compacts, and records
    :data:`EARLY` (``later`` minutes after the first time: the same run made again)."""
    clock = iter(T0 + timedelta(hours=1, minutes=later, microseconds=n) for n in range(10))
    with MirrorState.load(destination, clock=lambda: next(clock), max_entries=MOST) as state:
        assert len(state) >= SPLIT
        state.put(EARLY)
        state.save(checkpoint={"early": True})


def snapshot_locs(destination: Destination) -> Counter[str]:
    """How many times the Resource List, read as a Destination reads it (its parts, if it is
    an index), lists each loc."""
    listed: Counter[str] = Counter()
    snapshot = read_document(destination.read_bytes(RESOURCE_LIST) or b"")
    parts = [entry.loc[len(BASE):] for entry in snapshot] if snapshot.head.is_index else []
    for document in [snapshot] if not parts else (
            read_document(destination.read_bytes(part) or b"") for part in parts):
        listed.update(entry.loc for entry in document)
    return listed


def test_a_split_resource_list_rewritten_and_killed_between_its_parts_loses_no_record(
        tmp_path: Path) -> None:
    """The parts of a split Resource List are never written over while the index still lists
    them: killed before the second part of the new snapshot, the mirror still reads the old one
    whole, and the run made again loses no record (the entry pushed from the first part into
    the second was lost for good when parts were rewritten in place)."""
    destination = LocalDestination(tmp_path / "mirror")
    with MirrorState.load(destination, public_base_url=BASE, clock=lambda: T0,
                          max_entries=MOST) as state:
        for n in range(SPLIT):
            state.put(item(n))
        state.save(checkpoint={})
    assert read_document(destination.read_bytes(RESOURCE_LIST) or b"").head.is_index
    wanted = {record.uri: record for record in (*(item(n) for n in range(SPLIT)), EARLY)}
    killed = run_child(killed_early, destination.root, 2)
    assert killed.exitcode == -signal.SIGKILL, killed.traceback
    assert killed.said.startswith(RESERVED_PREFIX + "resourcelist-"), killed.said
    add_early(destination, later=30)  # made again
    with MirrorState.load(destination, max_entries=MOST) as state:
        held = {record.uri: record for record in state.records()}
    assert sorted(wanted.keys() - held.keys()) == []
    assert held == wanted
    assert snapshot_locs(destination) == Counter(BASE + record.key for record in wanted.values())
