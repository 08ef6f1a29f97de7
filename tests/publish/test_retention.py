"""Retention (issue 28, item 2): a publication keeps its Change Lists, Change Dumps and their
packages for ``keep_changes_for``, never one the Resource List lacks, and retires older ones
with their index entries, the index first, so that no index names a missing file; a follower
within the window catches up by Change List and by Change Dump, one whose checkpoint is older
gets :class:`ChangeGapError`."""

from __future__ import annotations

import shutil
import signal
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from airflow_provider_resourcesync.errors import ChangeGapError
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.publish.bucket import LocalBucket
from airflow_provider_resourcesync.publish.inventory import walk_directory
from airflow_provider_resourcesync.publish.packages import PackageSize
from airflow_provider_resourcesync.publish.run import Publication, publish
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import ServedDirectory, SourceServer
from airflow_provider_resourcesync.writer import journal, stamp_at
from tests.killing import run_child
from tests.sync.conftest import client_for, held
from tests.writer.records import kill_before_write

from .test_publish_run import METHODS, validate_all, write

#: After every file's modification time, as in test_killed_publish.
T1 = datetime(2030, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)
KEEP = 3 * DAY


def _name(url: str) -> str:
    return url.rpartition("/")[2]


def _files(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir()} if folder.is_dir() else set()


def named_there(out: Path) -> tuple[list[datetime], list[datetime]]:
    """Every file the Change List Index and the Change Dump Index name is there, with every
    package and manifest copy each Change Dump named names; the ``until`` of each Change List
    and each Change Dump listed."""
    ends: dict[str, list[datetime]] = {}
    for index, folder in (("changelist.xml", "changes"), ("changedump.xml", "changedumps")):
        for entry in read_document((out / index).read_bytes()).entries:
            assert (out / folder / _name(entry.loc)).is_file(), entry.loc
            assert entry.md is not None and entry.md.until is not None
            ends.setdefault(index, []).append(entry.md.until)
    assert named_packages(out, listed_only=True) <= _files(out / "packages")
    return ends.get("changelist.xml", []), ends.get("changedump.xml", [])


def named_packages(out: Path, *, listed_only: bool) -> set[str]:
    """The packages and manifest copies the Change Dumps name: those the Change Dump Index
    lists, or all those under ``changedumps/``."""
    names = {_name(entry.loc) for entry in read_document(
        (out / "changedump.xml").read_bytes()).entries} if listed_only \
        else _files(out / "changedumps")
    packages: set[str] = set()
    for name in names:
        for package in read_document((out / "changedumps" / name).read_bytes()).entries:
            packages.add(_name(package.loc))
            packages.update(_name(link.href) for link in package.links)
    return packages


def named_and_there(out: Path) -> tuple[list[datetime], list[datetime]]:
    """:func:`named_there`, and nothing else is there under ``changes/``, ``changedumps/``
    and ``packages/``: no file is left unlisted."""
    ends = named_there(out)
    for index, folder in (("changelist.xml", "changes"), ("changedump.xml", "changedumps")):
        listed = read_document((out / index).read_bytes()).entries
        assert {_name(entry.loc) for entry in listed} == _files(out / folder), index
    assert named_packages(out, listed_only=False) == _files(out / "packages")
    return ends


def snapshot_at(out: Path) -> datetime:
    md = read_document((out / "resourcelist.xml").read_bytes()).head.md
    assert md is not None and md.at is not None
    return md.at


class Followed:
    """A directory published daily to ``out`` with ``keep_changes_for`` of three days,
    followed by our engines by Change List and by Change Dump."""

    def __init__(self, web: SourceServer, root: Path, out: Path) -> None:
        self.root, self.out = root, out
        self.publication = Publication(
            LocalDestination(out), base_url=web.url("/bucket/"), publish_url=web.url("/pub/"),
            size=PackageSize(entries=2), keep_changes_for=KEEP)
        self.bucket = ServedDirectory(web, root, "/bucket/")
        self.served = ServedDirectory(web, out, "/pub/")
        self.capability_list = web.url("/pub/capabilitylist.xml")

    def run(self, when: datetime) -> None:
        publish(self.publication, walk_directory(self.root), when, LocalBucket(self.root),
                now=when)
        self.bucket.refresh()
        self.served.refresh()


def test_old_changes_are_retired_and_followers_in_the_window_catch_up_older_ones_get_a_gap(
        tmp_path: Path) -> None:
    """Twelve daily runs, each changing two objects, with ``keep_changes_for`` of three days:
    after each, every document validates, every index entry resolves and no file is left
    unlisted, no list older than the window (nor than the Resource List's ``at``) is kept;
    followers that run every day, and followers that stop for two days, catch up by Change
    List and by Change Dump; followers from the first day get ``ChangeGapError`` once its
    changes are retired."""
    root, out = tmp_path / "bucket", tmp_path / "published"
    for number in range(40):
        write(root, f"docs/{number:02d}.txt", f"first {number}\n".encode())
    with SourceServer(max_lifetime=600) as web, client_for(web) as reader:
        followed = Followed(web, root, out)
        followed.run(T1)
        joined = {method: run_baseline(reader, LocalDestination(tmp_path / f"first-{method}"),
                                       capability_list_url=followed.capability_list)
                  for method in METHODS}
        daily = {method: LocalDestination(tmp_path / f"daily-{method}") for method in METHODS}
        lagging = {method: LocalDestination(tmp_path / f"lagging-{method}") for method in METHODS}
        points = {(mirror, method): run_baseline(reader, mirror,
                                                 capability_list_url=followed.capability_list)
                  for mirrors in (daily, lagging) for method, mirror in mirrors.items()}
        gaps = 0
        for day in range(1, 13):
            now = T1 + day * DAY
            write(root, f"docs/{day:02d}.txt", f"changed on day {day}\n".encode())
            write(root, f"new/{day:02d}.txt", f"new on day {day}\n".encode())
            followed.run(now)
            validate_all(out)
            lists, dumps = named_and_there(out)
            oldest = min(now - KEEP, snapshot_at(out))
            assert all(until >= oldest for until in lists + dumps), day
            assert lists and dumps, day  # today's changes are never retired
            # every day, and every other day (two days behind, within the three kept)
            for mirror, method in points:
                if mirror in daily.values() or day % 2 == 0:
                    points[mirror, method] = run_incremental(
                        reader, mirror, capability_list_url=followed.capability_list,
                        checkpoint=points[mirror, method], method=method)
                    assert held(mirror) == followed.bucket.files(), (day, method)
            if min(lists) > T1 + DAY:  # the first day's changes are retired
                for method in METHODS:
                    with pytest.raises(ChangeGapError):
                        run_incremental(reader, LocalDestination(tmp_path / f"first-{method}"),
                                        capability_list_url=followed.capability_list,
                                        checkpoint=joined[method], method=method)
                gaps += 1
        assert gaps >= 6


def killed_retiring_run(root: Path, out: Path, kill_at: int, now: datetime, base: str,
                        pub: str) -> None:
    """In a child: publishes ``root`` to ``out`` as of ``now`` with ``keep_changes_for`` of
    three days, killing itself just before its ``kill_at``-th write or deletion."""
    destination = LocalDestination(out)
    kill_before_write(destination, kill_at, deletes=True, under="")
    publish(Publication(destination, base_url=base, publish_url=pub,
                        size=PackageSize(entries=2), keep_changes_for=KEEP),
            walk_directory(root), now, LocalBucket(root), now=now)


def test_a_retiring_run_killed_at_any_write_leaves_every_index_whole_and_the_next_run_tidy(
        tmp_path: Path) -> None:
    """A run that retires two Change Lists and two Change Dumps with their packages (those of
    days 1 and 2, three days and an hour after day 2), killed
    for real before each of its writes and deletions in turn: every index then names only
    files that are there, and every document validates; the next run (carrying the killed
    one's plan out first) leaves no file unlisted, followers within the window catch up by
    Change List and by Change Dump, and followers from before it get ChangeGapError."""
    root, start = tmp_path / "bucket", tmp_path / "published-before"
    for number in range(8):
        write(root, f"docs/{number}.txt", f"first {number}\n".encode())
    with SourceServer(max_lifetime=900) as web, client_for(web) as reader:
        base, pub = web.url("/bucket/"), web.url("/pub/")
        followed = Followed(web, root, start)
        followed.run(T1)
        first = {method: run_baseline(reader, LocalDestination(tmp_path / f"first-{method}"),
                                      capability_list_url=followed.capability_list)
                 for method in METHODS}
        for day in range(1, 5):
            write(root, f"docs/{day}.txt", f"changed on day {day}\n".encode())
            write(root, f"new/{day}.txt", f"new on day {day}\n".encode())
            followed.run(T1 + day * DAY)
        recent = {method: run_baseline(reader, LocalDestination(tmp_path / f"recent-{method}"),
                                       capability_list_url=followed.capability_list)
                  for method in METHODS}
        (root / "docs" / "0.txt").unlink()
        write(root, "new/5.txt", b"new on day 5\n")
        lists, dumps = named_and_there(start)
        assert len(lists) == len(dumps) == 4
        served = ServedDirectory(web, start, "/pub/")
        killed_at: list[str] = []
        for trial in range(1, 80):  # one kill per write of the run, until a run is not killed
            out = tmp_path / f"published-{trial}"
            shutil.copytree(start, out)
            child = run_child(killed_retiring_run, root, out, trial,
                              T1 + 5 * DAY + timedelta(hours=1), base, pub, timeout=120)
            if child.exitcode == 0:
                assert len(named_and_there(out)[0]) == 3  # days 3, 4 and 5 kept
                break
            assert child.exitcode == -signal.SIGKILL, child.traceback
            killed_at.append(child.said)
            named_there(out)
            validate_all(out)
            write(root, f"new/after-{trial}.txt", b"after\n")
            publish(replace(followed.publication, destination=LocalDestination(out)),
                    walk_directory(root), T1 + 6 * DAY, LocalBucket(root), now=T1 + 6 * DAY)
            lists, dumps = named_and_there(out)
            assert min(lists) >= T1 + 3 * DAY and min(dumps) >= T1 + 3 * DAY, killed_at[-1]
            validate_all(out)
            followed.bucket.refresh()
            served.root = out
            served.refresh()
            for method in METHODS:
                mirror = tmp_path / f"recent-{method}-{trial}"
                shutil.copytree(tmp_path / f"recent-{method}", mirror)
                copied = LocalDestination(mirror)
                run_incremental(reader, copied, capability_list_url=followed.capability_list,
                                checkpoint=replace(recent[method], destination=copied.url),
                                method=method)
                assert held(copied) == followed.bucket.files(), (killed_at[-1], method)
                with pytest.raises(ChangeGapError):
                    run_incremental(reader, LocalDestination(tmp_path / f"first-{method}"),
                                    capability_list_url=followed.capability_list,
                                    checkpoint=first[method], method=method)
            (root / "new" / f"after-{trial}.txt").unlink()
        else:
            raise AssertionError("every run was killed")
    retired = {f"{folder}/{stamp_at(T1 + day * DAY)}.xml" for day in (1, 2)
               for folder in ("changes", "changedumps")}
    assert retired | {"changelist.xml", "changedump.xml"} <= set(killed_at), killed_at
    packages = [key for key in killed_at if key.startswith(
        tuple(f"packages/{stamp_at(T1 + day * DAY)}-" for day in (0, 1)))]
    assert len(packages) == 4, killed_at  # each retired package and its manifest copy


def test_past_the_index_cap_the_oldest_change_dumps_go_with_their_packages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Section 7's 50,000 entries an index holds at most, made 2 here: with nothing retired
    by age, the oldest Change Lists and Change Dumps dropped from their indexes are deleted,
    and a dropped Change Dump's packages and manifest copies with it (before, the packages
    stayed for ever)."""
    monkeypatch.setattr(journal, "MAX_ENTRIES", 2)
    root, out = tmp_path / "bucket", tmp_path / "published"
    write(root, "a.txt", b"a\n")
    publication = Publication(LocalDestination(out), base_url="https://example.org/",
                              keep_changes_for=None)
    for day in range(5):
        write(root, f"{day}.txt", f"day {day}\n".encode())
        publish(publication, walk_directory(root), T1 + day * DAY, LocalBucket(root),
                now=T1 + day * DAY)
    lists, dumps = named_and_there(out)
    assert lists == dumps == [T1 + 3 * DAY, T1 + 4 * DAY]
    assert len(_files(out / "packages")) == 4  # two packages, each with its manifest copy
