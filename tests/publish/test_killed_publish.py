"""A publishing run killed for real (SIGKILL in a child process) just before each of its writes
in turn, then made again with a newer inventory: every change is published once, in the
Change Lists and in the Change Dump packages, every document validates, and our engines
following the publication by Change Dump and by Change List from before the killed run end
equal to the directory (issue 15, item 5). With a Resource Dump (the killed run compacts), the
dump never lists a package that is not there, and once the run is made again it is the new
snapshot's, whole: a baseline from it equals the directory."""

from __future__ import annotations

import shutil
import signal
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from airflow_provider_resourcesync.protocol.package import open_package
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.publish.bucket import LocalBucket
from airflow_provider_resourcesync.publish.inventory import walk_directory
from airflow_provider_resourcesync.publish.packages import PackageSize
from airflow_provider_resourcesync.publish.run import Publication, publish
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import ServedDirectory, SourceServer
from tests.killing import run_child
from tests.sync.conftest import client_for, held
from tests.writer.records import kill_before_write

from .test_publish_run import METHODS, validate_all, write

#: After every file's modification time; each run is made as if the machine's clock were at
#: the inventory's time (``publish(now=)``), later than the real one.
T1 = datetime(2030, 1, 1, tzinfo=UTC)

def killed_publish(root: Path, out: Path, kill_at: int, now: datetime, base: str, pub: str,
                   dump: bool) -> None:
    """In a child: publishes the directory ``root`` to ``out`` as of ``now``, killing itself just
    before its ``kill_at``-th write; with a Resource Dump if ``dump``."""
    destination = LocalDestination(out)
    kill_before_write(destination, kill_at, deletes=True, under="")
    publication = Publication(destination, base_url=base, publish_url=pub,
                              size=PackageSize(entries=2), resource_dump=dump)
    publish(publication, walk_directory(root), now, LocalBucket(root), now=now)


def published_changes(out: Path, after: datetime) -> tuple[Counter[str], Counter[str]]:
    """How often each change after ``after`` is listed: in the Change Lists, in the Change
    Dump packages' manifests (each package read by our reader)."""
    listed: Counter[str] = Counter()
    for part in read_document((out / "changelist.xml").read_bytes()).entries:
        for entry in read_document((out / "changes" / part.loc.rpartition("/")[2])
                                   .read_bytes()).entries:
            assert entry.md is not None and entry.md.datetime is not None
            if entry.md.datetime > after:
                listed[f"{entry.loc} {entry.md.change}"] += 1
    packaged: Counter[str] = Counter()
    for dump in read_document((out / "changedump.xml").read_bytes()).entries:
        for package in read_document((out / "changedumps" / dump.loc.rpartition("/")[2])
                                     .read_bytes()).entries:
            with open_package(out / "packages" / package.loc.rpartition("/")[2]) as opened:
                for entry in opened.manifest.entries:
                    assert entry.md is not None
                    packaged[f"{entry.loc} {entry.md.change}"] += 1
    return listed, packaged


def dumped_packages_there(out: Path) -> None:
    """The Resource Dump, if there is one, lists only packages that are there."""
    if (out / "resourcedump.xml").exists():
        for entry in read_document((out / "resourcedump.xml").read_bytes()).entries:
            assert (out / "resourcedump" / entry.loc.rpartition("/")[2]).is_file(), entry.loc


@pytest.mark.parametrize("dump", [False, True], ids=["changes", "with-resource-dump"])
def test_a_publishing_run_killed_before_any_write_and_made_again_publishes_each_change_once(
        tmp_path: Path, dump: bool) -> None:
    root, start = tmp_path / "bucket", tmp_path / "published-before"
    for number in range(5):
        write(root, f"docs/{number}.txt", f"first {number}\n".encode())
    with SourceServer(max_lifetime=600) as web, client_for(web) as reader:
        base, pub = web.url("/bucket/"), web.url("/pub/")

        def publication(out: Path) -> Publication:
            return Publication(LocalDestination(out), base_url=base, publish_url=pub,
                               size=PackageSize(entries=2), resource_dump=dump)

        publish(publication(start), walk_directory(root), T1, LocalBucket(root), now=T1)
        bucket = ServedDirectory(web, root, "/bucket/")
        bucket.refresh()
        served = ServedDirectory(web, start, "/pub/")
        served.refresh()
        capability_list = pub + "capabilitylist.xml"
        standing = {method: LocalDestination(tmp_path / f"{method}-before") for method in METHODS}
        points = {method: run_baseline(reader, standing[method],
                                       capability_list_url=capability_list)
                  for method in METHODS}
        write(root, "docs/0.txt", b"second\n")
        write(root, "new/one.txt", b"new\n")
        write(root, "new/two.txt", b"two\n")
        (root / "docs" / "3.txt").unlink()
        bucket.refresh()
        expected = {f"{base}docs/0.txt updated", f"{base}new/one.txt created",
                    f"{base}new/two.txt created", f"{base}docs/3.txt deleted"}
        killed_at: list[str] = []
        for trial in range(1, 60):  # one kill per write of the run, until a run is not killed
            out = tmp_path / f"published-{trial}"
            shutil.copytree(start, out)
            child = run_child(killed_publish, root, out, trial, T1 + timedelta(days=1), base,
                              pub, dump, timeout=120)
            if child.exitcode == 0:
                break
            assert child.exitcode == -signal.SIGKILL, child.traceback
            killed_at.append(child.said)
            dumped_packages_there(out)
            publish(publication(out), walk_directory(root), T1 + timedelta(days=2),
                    LocalBucket(root), now=T1 + timedelta(days=2))  # made again, newer
            listed, packaged = published_changes(out, T1)
            assert set(listed) == set(packaged) == expected, (killed_at[-1], listed)
            assert max(listed.values()) == max(packaged.values()) == 1, killed_at[-1]
            validate_all(out)
            served.root = out  # this trial's publication, in place of the one before
            served.refresh()
            for method in METHODS:
                mirror = tmp_path / f"{method}-{trial}"
                shutil.copytree(tmp_path / f"{method}-before", mirror)
                copied = LocalDestination(mirror)
                run_incremental(reader, copied, capability_list_url=capability_list,
                                checkpoint=replace(points[method], destination=copied.url),
                                method=method)
                assert held(LocalDestination(mirror)) == bucket.files(), (
                    killed_at[-1], method)
            if dump:
                dumped_packages_there(out)
                snapshot = read_document((out / "resourcelist.xml").read_bytes()).head.md
                dumped = read_document((out / "resourcedump.xml").read_bytes()).head.md
                assert snapshot and dumped and dumped.at == snapshot.at, killed_at[-1]
                baselined = LocalDestination(tmp_path / f"dump-{trial}")
                run_baseline(reader, baselined, capability_list_url=capability_list,
                             method="resourcedump")
                assert held(baselined) == bucket.files(), killed_at[-1]
        else:
            raise AssertionError("every run was killed")
    writes = {key.split("/")[0].split(".")[0] for key in killed_at}
    assert {"objects", "plans", "packages", "changedumps", "changedump", "changes",
            "changelist", "index", "capabilitylist", "description", "checkpoint"} <= writes
    assert ("resourcedump" in writes) is dump


def test_a_first_publication_killed_at_any_write_then_quiet_runs_leaves_followers_no_gap(
        tmp_path: Path) -> None:
    """The first run killed before each of its writes in turn, made again, then a run with a
    newer inventory that finds nothing new, then a change: followers that baselined once the
    first run was made again get the change by Change List and by Change Dump (issue 26: the
    quiet run moved the next list's ``from`` past their position)."""
    root = tmp_path / "bucket"
    for number in range(3):
        write(root, f"docs/{number}.txt", f"first {number}\n".encode())
    with SourceServer(max_lifetime=600) as web, client_for(web) as reader:
        base, pub = web.url("/bucket/"), web.url("/pub/")
        bucket = ServedDirectory(web, root, "/bucket/")
        bucket.refresh()
        served = ServedDirectory(web, tmp_path, "/pub/")
        kill_points = 0
        for trial in range(1, 40):  # one kill per write of the first run, until it is not
            out = tmp_path / f"published-{trial}"
            ended = run_child(killed_publish, root, out, trial, T1, base, pub, False)
            if ended.exitcode == 0:
                break
            assert ended.exitcode == -signal.SIGKILL, ended.traceback
            kill_points += 1
            publication = Publication(LocalDestination(out), base_url=base, publish_url=pub,
                                      size=PackageSize(entries=2))

            def run(days: int, publication: Publication = publication) -> int:
                done = publish(publication, walk_directory(root), T1 + timedelta(days=days),
                               LocalBucket(root), now=T1 + timedelta(days=days))
                served.refresh()
                return done.changes

            served.root = out
            run(1)  # made again: the killed run's plan carried out, or the run made anew
            points = {method: run_baseline(reader, LocalDestination(tmp_path / f"{method}-{trial}"),
                                           capability_list_url=pub + "capabilitylist.xml")
                      for method in METHODS}
            assert run(2) == 0  # a newer inventory, nothing new
            write(root, f"docs/new-{trial}.txt", b"new\n")
            bucket.refresh()
            assert run(3) == 1
            for method in METHODS:
                mirror = LocalDestination(tmp_path / f"{method}-{trial}")
                run_incremental(reader, mirror, capability_list_url=pub + "capabilitylist.xml",
                                checkpoint=points[method], method=method)
                assert held(mirror) == bucket.files(), (ended.said, method)
            (root / "docs" / f"new-{trial}.txt").unlink()
            bucket.refresh()
        else:
            raise AssertionError("every run was killed")
    assert kill_points >= 5
