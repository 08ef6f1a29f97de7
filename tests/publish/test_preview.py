"""A dry run's engine (issue 28, item 5): ``preview`` says what ``publish`` then does, a killed
run's plan included (which a run carries out first), and writes nothing."""

from __future__ import annotations

import shutil
import signal
from datetime import timedelta
from pathlib import Path

from airflow_provider_resourcesync.publish.bucket import LocalBucket
from airflow_provider_resourcesync.publish.inventory import walk_directory
from airflow_provider_resourcesync.publish.packages import PackageSize
from airflow_provider_resourcesync.publish.run import Publication, preview, publish
from airflow_provider_resourcesync.storage.local import LocalDestination
from tests.killing import run_child

from .test_killed_publish import T1, killed_publish
from .test_publish_run import write

BASE, PUB = "https://example.org/bucket/", "https://example.org/pub/"


def files(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes()
            for path in sorted(root.rglob("*")) if path.is_file()}


def test_a_preview_counts_a_killed_runs_plan_and_then_what_the_run_publishes(
        tmp_path: Path) -> None:
    root, start = tmp_path / "bucket", tmp_path / "published-before"
    for number in range(5):
        write(root, f"docs/{number}.txt", f"first {number}\n".encode())

    def publication(out: Path) -> Publication:
        return Publication(LocalDestination(out), base_url=BASE, publish_url=PUB,
                           size=PackageSize(entries=2), max_deletions=1)

    publish(publication(start), walk_directory(root), T1, LocalBucket(root), now=T1)
    write(root, "docs/0.txt", b"second\n")
    write(root, "new/one.txt", b"new\n")
    (root / "docs" / "3.txt").unlink()
    for trial in range(1, 20):  # the first kill that leaves a plan
        out = tmp_path / f"published-{trial}"
        shutil.copytree(start, out)
        child = run_child(killed_publish, root, out, trial, T1 + timedelta(days=1), BASE, PUB,
                          False, timeout=120)
        assert child.exitcode == -signal.SIGKILL, child.traceback
        if (out / "plans").is_dir() and any((out / "plans").iterdir()):
            break
    write(root, "docs/1.txt", b"third\n")
    (root / "new" / "one.txt").unlink()
    (root / "docs" / "4.txt").unlink()
    looked_at = publication(out)  # opening it sweeps the killed child's work folder
    before = files(out)
    later = T1 + timedelta(days=2)
    found = preview(looked_at, walk_directory(root), later, LocalBucket(root), now=later)
    assert files(out) == before
    assert found.pending is not None and found.pending["plan"].startswith("plans/")
    assert {kind: found.pending.get(kind) for kind in ("changes", "created", "updated",
                                                       "deleted")} == {
        "changes": 3, "created": 1, "updated": 1, "deleted": 1}
    # the diff from the objects as the killed run's plan publishes them
    assert (found.created, found.updated, found.deleted, found.unchanged) == (0, 1, 2, 2)
    assert found.examples == {"updated": ["docs/1.txt"], "deleted": ["docs/4.txt", "new/one.txt"]}
    assert found.since == T1 + timedelta(days=1) and found.refused is None
    done = publish(publication(out), walk_directory(root), later, LocalBucket(root), now=later)
    assert (done.created, done.updated, done.deleted, done.packages) == (
        found.created, found.updated, found.deleted, found.packages)
