"""A directory published as a ResourceSync Source, changed three times and published again after
each change, is followed exactly over HTTP by our own engines, by Change Dump and by Change List
(issue 15); every document written validates; a run with no changes publishes nothing new."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.client.watch import drive, new_changes
from airflow_provider_resourcesync.errors import DocumentError
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.validate import has_errors, validate_source
from airflow_provider_resourcesync.publish.bucket import LocalBucket
from airflow_provider_resourcesync.publish.inventory import walk_directory
from airflow_provider_resourcesync.publish.packages import PackageSize
from airflow_provider_resourcesync.publish.run import Publication, Published, publish
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import ServedDirectory, SourceServer
from tests.sync.conftest import client_for, held

METHODS = ("changedump", "changelist")


def write(root: Path, key: str, body: bytes) -> None:
    (root / key).parent.mkdir(parents=True, exist_ok=True)
    (root / key).write_bytes(body)


def validate_all(out: Path) -> None:
    """Every document under ``out`` passes our validator."""
    for document in out.rglob("*.xml"):
        with document.open("rb") as stream:
            assert not has_errors(validate_source(stream, url=str(document))), document


class Publishing:
    """A directory at ``root`` published to ``out`` by our engine, both served by ``web``
    (objects under ``/bucket/``, the publication under ``/pub/``) after each run."""

    def __init__(self, web: SourceServer, root: Path, out: Path, **options: Any) -> None:
        self.publication = Publication(LocalDestination(out), base_url=web.url("/bucket/"),
                                       publish_url=web.url("/pub/"), **options)
        self.root = root
        self.bucket = ServedDirectory(web, root, "/bucket/")
        self.served = (self.bucket, ServedDirectory(web, out, "/pub/"))
        self.capability_list = web.url("/pub/capabilitylist.xml")

    def run(self, when: datetime | None = None) -> Published:
        """A run on the inventory of now (or of ``when``)."""
        done = publish(self.publication, walk_directory(self.root), when or datetime.now(UTC),
                       LocalBucket(self.root))
        for directory in self.served:
            directory.refresh()
        return done


def test_a_published_directory_is_followed_exactly_by_change_dump_and_by_change_list(
        tmp_path: Path) -> None:
    root, out = tmp_path / "bucket", tmp_path / "published"
    for number in range(6):
        write(root, f"docs/{number}.txt", f"first {number}\n".encode())
    write(root, "a b/é.txt", b"spaces and accents\n")
    mirrors = {method: LocalDestination(tmp_path / method) for method in METHODS}
    with SourceServer(max_lifetime=300) as web, client_for(web) as reader:
        publishing = Publishing(web, root, out, size=PackageSize(entries=2))
        run = publishing.run
        first = run()
        assert first.changes == 7 and first.packages == 0  # a Resource List, no Change Dump
        capability_list = web.url("/pub/capabilitylist.xml")
        points = {method: run_baseline(reader, mirrors[method],
                                       capability_list_url=capability_list)
                  for method in METHODS}
        rounds: list[Callable[[], None]] = [
            lambda: (write(root, "docs/0.txt", b"second\n"), write(root, "new.txt", b"new\n"),
                     (root / "docs" / "1.txt").unlink()),
            lambda: (write(root, "docs/0.txt", b"third\n"), write(root, "deep/er/x.bin",
                                                                  os.urandom(5000)),
                     (root / "a b" / "é.txt").unlink(), write(root, "docs/1.txt", b"back\n")),
            lambda: [write(root, f"docs/{number}.txt", b"fourth\n") for number in range(6)],
        ]
        for change in rounds:
            change()
            done = run()
            assert done.changes and done.packages and not done.left
            for method in METHODS:
                points[method] = run_incremental(reader, mirrors[method],
                                                 capability_list_url=capability_list,
                                                 checkpoint=points[method], method=method)
                assert held(mirrors[method]) == publishing.bucket.files(), method
        quiet = run()
        assert (quiet.changes, quiet.packages) == (0, 0)
    validate_all(out)
    dumps = read_document((out / "changedump.xml").read_bytes())
    assert dumps.head.md is not None and dumps.head.md.capability == "changedump"
    assert len(dumps.entries) == 3  # one Change Dump per run that found changes
    assert not list(out.glob("plans/*")) and len(list(out.glob("objects/*"))) == 1


def test_a_mirror_following_by_change_dump_is_watched_on_the_change_list_with_no_gap(
        tmp_path: Path) -> None:
    """A checkpoint in a Change Dump package, read whole, covers the package's window: the
    Change List sensor's watch from it finds the later changes, not a gap (protocol/gap.py)."""
    root, out = tmp_path / "bucket", tmp_path / "published"
    write(root, "a.txt", b"a\n")
    with SourceServer(max_lifetime=120) as web, client_for(web) as reader:
        run = Publishing(web, root, out).run

        run()
        mirror = LocalDestination(tmp_path / "mirror")
        capability_list = web.url("/pub/capabilitylist.xml")
        standing = run_baseline(reader, mirror, capability_list_url=capability_list)
        write(root, "a.txt", b"a again\n")
        run()
        standing = run_incremental(reader, mirror, capability_list_url=capability_list,
                                   checkpoint=standing, method="changedump")
        write(root, "b.txt", b"b\n")
        run()
        seen = drive(reader, new_changes(web.url("/pub/changelist.xml"), standing.position))
        assert (web.url("/bucket/b.txt"), "created") in seen.samples


def test_an_objects_record_gone_is_rebuilt_and_a_corrupt_one_stops_the_run_naming_it(
        tmp_path: Path) -> None:
    """Bad input loses no change: a corrupt objects record fails the run before anything is
    published, naming it and its line; once deleted, the next run rebuilds it from the
    publication's own documents and publishes every object again, and a Destination following
    by Change List ends equal to the directory."""
    root, out = tmp_path / "bucket", tmp_path / "published"
    for name in ("a.txt", "b.txt", "c.txt"):
        write(root, name, name.encode())
    with SourceServer(max_lifetime=120) as web, client_for(web) as reader:
        publishing = Publishing(web, root, out)
        run = publishing.run

        run()
        mirror = LocalDestination(tmp_path / "mirror")
        capability_list = web.url("/pub/capabilitylist.xml")
        standing = run_baseline(reader, mirror, capability_list_url=capability_list)
        (record,) = out.glob("objects/*")
        record.write_bytes(b"\x1f\x8b not what it was")
        write(root, "a.txt", b"changed")
        lists = sorted(out.glob("changes/*"))
        with pytest.raises(DocumentError, match="delete it") as raised:
            run()
        assert record.name in str(raised.value)
        assert sorted(out.glob("changes/*")) == lists and not list(out.glob("plans/*"))
        record.unlink()
        (root / "c.txt").unlink()
        rebuilt = run()
        assert rebuilt.changes == 3  # a.txt and b.txt again as updated, c.txt deleted
        run_incremental(reader, mirror, capability_list_url=capability_list,
                        checkpoint=standing, method="changelist")
        assert held(mirror) == publishing.bucket.files()


@pytest.mark.parametrize("quiet_runs", [1, 2])
def test_quiet_runs_open_no_gap_for_followers_by_change_list_or_change_dump(
        tmp_path: Path, quiet_runs: int) -> None:
    """Runs that find nothing new write no Change List, yet the next list starts where the
    documents' covered time ended (the Resource List's ``at``, or the last list's ``until``):
    a follower from before the quiet runs gets the later changes, by either route (issue 26:
    a quiet run moved the next list's ``from`` past every follower's position). A follower
    that runs before anything changed finds nothing new: the first run writes a Change List
    Index and a Change Dump Index listing nothing yet (spec 12.2, 13.2: zero or more entries;
    before, each such run failed with "no Change List to read changes from", found by the
    model test)."""
    root, out = tmp_path / "bucket", tmp_path / "published"
    write(root, "a.txt", b"a\n")
    with SourceServer(max_lifetime=120) as web, client_for(web) as reader:
        publishing = Publishing(web, root, out)
        publishing.run()
        mirrors = {method: LocalDestination(tmp_path / method) for method in METHODS}
        points = {method: run_baseline(reader, mirrors[method],
                                       capability_list_url=publishing.capability_list)
                  for method in METHODS}

        def follow(changes: int, step: int) -> None:
            for method in METHODS:
                points[method] = run_incremental(
                    reader, mirrors[method], capability_list_url=publishing.capability_list,
                    checkpoint=points[method], method=method)
                assert held(mirrors[method]) == publishing.bucket.files(), (step, method)
                assert points[method].stats["changes"] == changes, (step, method)

        for step in range(2):  # from the baseline's snapshot, then from a Change List's end
            follow(0, step)
            for _ in range(quiet_runs):
                assert publishing.run().changes == 0
            write(root, f"new-{step}.txt", b"new\n")
            assert publishing.run().changes == 1
            follow(1, step)
    validate_all(out)


@pytest.mark.parametrize("method", ["resourcelist", "resourcedump"])
def test_a_late_joiner_baselines_from_a_resource_list_older_than_later_changes(
        tmp_path: Path, method: str) -> None:
    """The Resource List is rewritten only at a compaction, so it lists old lengths and hashes,
    objects deleted since, and misses new ones; a follower joining now baselines from it, then
    takes each resource changed after its ``at`` from its newest Change List entry, deleted ones
    left out, in one run (spec 10.1 with 12.1; issue 26): before, it refused each changed
    object, 404'd on each deleted one, and a re-run did the same until a compaction."""
    root, out = tmp_path / "bucket", tmp_path / "published"
    for number in range(30):
        write(root, f"docs/{number:02d}.txt", f"first {number}\n".encode())
    with SourceServer(max_lifetime=120) as web, client_for(web) as reader:
        publishing = Publishing(web, root, out, resource_dump=True)
        publishing.run()
        write(root, "docs/00.txt", b"second, and longer than the first\n")
        (root / "docs" / "01.txt").unlink()
        write(root, "new.txt", b"new\n")
        assert publishing.run().changes == 3  # under a tenth of 30: the snapshot stays
        snapshot = read_document((out / "resourcelist.xml").read_bytes())
        assert len(snapshot.entries) == 30  # it still lists docs/01.txt, and not new.txt
        late = LocalDestination(tmp_path / "late")
        joined = run_baseline(reader, late, capability_list_url=publishing.capability_list,
                              method=method)
        assert held(late) == publishing.bucket.files()
        assert joined.kind == "baseline" and joined.stats["failed"] == 0
        write(root, "docs/02.txt", b"after the late joiner\n")
        publishing.run()
        followed = run_incremental(reader, late, capability_list_url=publishing.capability_list,
                                   checkpoint=joined)
        assert held(late) == publishing.bucket.files()
        assert followed.stats["fetched"] == 1  # only what came after the joiner's checkpoint


@pytest.mark.parametrize("max_age", [None, timedelta(days=1), timedelta(hours=2)])
def test_the_resource_list_lacks_no_change_older_than_its_age_bound(
        tmp_path: Path, max_age: timedelta | None) -> None:
    """A follower that reads the Resource List and no Change List (resync reads no Change List
    Index) finds each change there once the oldest run it lacks is ``resource_list_max_age``
    old (issue 26): hourly runs of one change to 300 objects never pass the size rule's tenth
    within a day, so without a bound the list stays as the first run wrote it."""
    root, out = tmp_path / "bucket", tmp_path / "published"
    for number in range(300):
        write(root, f"docs/{number:03d}.txt", f"first {number}\n".encode())
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with SourceServer(max_lifetime=120) as web:
        publishing = Publishing(web, root, out, resource_list_max_age=max_age)
        publishing.run(start)
        for hour in range(1, 27):
            write(root, f"docs/{hour:03d}.txt", f"changed at hour {hour}\n".encode())
            publishing.run(start + timedelta(hours=hour))
            snapshot = read_document((out / "resourcelist.xml").read_bytes())
            assert snapshot.head.md is not None and snapshot.head.md.at is not None
            written = round((snapshot.head.md.at - start) / timedelta(hours=1))
            if max_age is None:
                assert written == 0
            else:  # the oldest run it lacks is the one after it was written
                oldest_lacked = timedelta(hours=hour - written - 1)
                assert oldest_lacked < max_age, (hour, written)
                assert written > 0 or timedelta(hours=hour - 1) < max_age
    validate_all(out)

