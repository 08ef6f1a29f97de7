"""Retention (issue 28, item 2): a publication keeps its Change Lists, Change Dumps and their
packages for ``keep_changes_for``, never one the Resource List lacks, and retires older ones
with their index entries, the index first, so that no index names a missing file; a follower
within the window catches up by Change List and by Change Dump, one whose checkpoint is older
gets :class:`ChangeGapError`."""

from __future__ import annotations

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
from tests.sync.conftest import client_for, held

from .test_publish_run import METHODS, validate_all, write

#: After every file's modification time, as in test_killed_publish.
T1 = datetime(2030, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)
KEEP = 3 * DAY


def _name(url: str) -> str:
    return url.rpartition("/")[2]


def _files(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir()} if folder.is_dir() else set()


def named_and_there(out: Path) -> tuple[list[datetime], list[datetime]]:
    """Every file the Change List Index and the Change Dump Index name is there, with every
    package and manifest copy each Change Dump names; and nothing else is there under
    ``changes/``, ``changedumps/`` and ``packages/``: no file left unlisted. The ``until`` of
    each Change List and each Change Dump listed."""
    ends: dict[str, list[datetime]] = {}
    for index, folder in (("changelist.xml", "changes"), ("changedump.xml", "changedumps")):
        listed = read_document((out / index).read_bytes()).entries
        names = {_name(entry.loc) for entry in listed}
        assert names == _files(out / folder), index
        ends[index] = [entry.md.until for entry in listed if entry.md and entry.md.until]
    packages: set[str] = set()
    for name in _files(out / "changedumps"):
        for package in read_document((out / "changedumps" / name).read_bytes()).entries:
            packages.add(_name(package.loc))
            packages.update(_name(link.href) for link in package.links)
    assert packages == _files(out / "packages")
    return ends["changelist.xml"], ends["changedump.xml"]


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
