"""What a publishing run refuses before it writes (issue 27, items 3 and 4): a run that would
delete more than ``max_deletions`` of the collection (an empty or truncated S3 Inventory report,
read from moto's S3 over HTTP), an inventory dated ahead of the machine's clock, and a
publication frozen by a window in the future; none of them wedges the publication."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.errors import DestinationError, InventoryError, PublishError
from airflow_provider_resourcesync.publish.bucket import LocalBucket, S3Bucket
from airflow_provider_resourcesync.publish.inventory import (
    InventoryObject,
    S3ReportReader,
    read_report,
    walk_directory,
)
from airflow_provider_resourcesync.publish.run import Publication, Published, publish
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination

from .reports import CREATED, s3_put, write_report
from .test_publish_run import write

#: A day ago, to the millisecond (a report's creationTimestamp).
DAY_AGO = (datetime.now(UTC) - timedelta(days=1)).replace(microsecond=0)


def stored(destination: Destination) -> dict[str, bytes | None]:
    """Every object under ``destination``, the publisher's own records too."""
    return {key: destination.read_bytes(key) for key in destination.keys("")}


class ReportPublishing:
    """A bucket's objects under ``src/`` published to ``pub/`` from S3 Inventory reports that
    list what each run is given, read from the same bucket (moto over HTTP)."""

    def __init__(self, client: Any, bucket: str) -> None:
        self.client, self.bucket = client, bucket
        self.destination = S3Destination(client, bucket, "pub/")
        self.publication = Publication(self.destination, base_url="https://example.org/",
                                       publish_url="https://example.org/pub/")
        self.reports = 0

    def run(self, keys: list[str], created: datetime, **options: Any) -> Published:
        self.reports += 1
        manifest = f"inventory/{self.bucket}/daily/{self.reports}/manifest.json"
        write_report(s3_put(self.client, self.bucket),
                     [[InventoryObject(key, 1, "e", CREATED) for key in keys]],
                     manifest_key=manifest, created=created, bucket=self.bucket)
        report = read_report(S3ReportReader(self.client, self.bucket), manifest, "src/",
                             bucket=self.bucket, exclude_prefix="pub/")
        return publish(replace(self.publication, **options), report.ordered(), report.created,
                       S3Bucket(self.client, self.bucket))


def test_an_empty_or_truncated_report_deletes_nothing_and_writes_nothing(
        s3_client: Any, bucket: str) -> None:
    """27 objects published; an empty report, then one holding 3 of them, would delete 27 and
    24: each run stops before it writes, naming the counts and the setting. The next honest
    report publishes as if they had not been; a real deletion of 20 goes with the setting the
    message gives."""
    keys = [f"src/{number:02d}" for number in range(27)]
    publishing = ReportPublishing(s3_client, bucket)
    assert publishing.run(keys, DAY_AGO).changes == 27  # the first publication: no deletions
    before = stored(publishing.destination)
    for hour, listed, deleted in ((1, [], 27), (2, keys[:3], 24)):
        with pytest.raises(PublishError) as caught:
            publishing.run(listed, DAY_AGO + timedelta(hours=hour))
        assert (f"would delete {deleted} of the 27 objects published, more than "
                "max_deletions=0.1 allows (3); nothing was written") in str(caught.value)
        assert not caught.value.rerun_helps and "\n" not in str(caught.value)
        assert stored(publishing.destination) == before
    assert publishing.run(keys, DAY_AGO + timedelta(hours=3)).changes == 0
    with pytest.raises(PublishError, match=r"run once with max_deletions=0\.75$"):
        publishing.run(keys[20:], DAY_AGO + timedelta(hours=4))
    done = publishing.run(keys[20:], DAY_AGO + timedelta(hours=5), max_deletions=0.75)
    assert done.changes == 20 and done.packages == 1


def test_one_deletion_is_always_allowed(tmp_path: Path) -> None:
    """A tenth of a small collection, rounded up, is one object."""
    root, out = tmp_path / "bucket", LocalDestination(tmp_path / "published")
    for number in range(5):
        write(root, f"{number}.txt", b"x")
    publication = Publication(out, base_url="https://example.org/")

    def run() -> Published:
        return publish(publication, walk_directory(root), datetime.now(UTC), LocalBucket(root))

    run()
    (root / "0.txt").unlink()
    assert run().changes == 1
    (root / "1.txt").unlink()
    (root / "2.txt").unlink()
    with pytest.raises(PublishError, match="would delete 2 of the 4 objects"):
        run()


def test_a_failed_runs_plan_is_carried_out_whatever_the_guard(tmp_path: Path) -> None:
    """A run allowed to delete every object fails once its plan is written (its package
    cannot be stored); the next run, under the default guard, carries the plan out first."""
    root, out = tmp_path / "bucket", tmp_path / "published"
    for number in range(10):
        write(root, f"{number}.txt", b"x")
    publication = Publication(LocalDestination(out), base_url="https://example.org/")
    publish(publication, walk_directory(root), datetime.now(UTC), LocalBucket(root))
    shutil.rmtree(root)
    root.mkdir()
    (out / "packages").write_bytes(b"in the way")
    with pytest.raises(DestinationError):
        publish(replace(publication, max_deletions=1), walk_directory(root), datetime.now(UTC),
                LocalBucket(root))
    assert list((out / "plans").iterdir())
    (out / "packages").unlink()
    publish(publication, walk_directory(root), datetime.now(UTC), LocalBucket(root))
    assert not (out / "plans").exists()
    assert sum(path.read_text().count('change="deleted"')
               for path in (out / "changes").glob("*.xml")) == 10


def test_a_report_dated_in_the_future_is_refused_naming_both_times(
        s3_client: Any, bucket: str) -> None:
    """A report whose creationTimestamp is 2999 would end the run's window there, and no
    later report would be newer: it is refused, nothing is written, the next report
    publishes."""
    publishing = ReportPublishing(s3_client, bucket)
    publishing.run(["src/a", "src/b"], DAY_AGO)
    before = stored(publishing.destination)
    with pytest.raises(InventoryError) as caught:
        publishing.run(["src/a"], datetime(2999, 1, 1, tzinfo=UTC))
    message = str(caught.value)
    assert message.startswith("the inventory's time 2999-01-01T00:00:00Z is ahead of this "
                              "machine's clock (20")
    assert "by more than 1:00:00" in message and not caught.value.rerun_helps
    assert stored(publishing.destination) == before
    assert publishing.run(["src/a"], DAY_AGO + timedelta(hours=1)).changes == 1


def test_a_publication_frozen_by_a_clock_ahead_says_so_and_how_to_fix_it(
        tmp_path: Path) -> None:
    """A worker whose clock is three days ahead published (a directory walk, the inventory's
    time its clock's): every later run on a right clock is refused, naming both times and what
    to do. A window ahead by less than the bound is waited for, and said so."""
    root = tmp_path / "bucket"
    write(root, "a.txt", b"x")
    logged: list[str] = []

    def run(out: Path, ahead: timedelta) -> Published:
        clock = datetime.now(UTC) + ahead
        return publish(Publication(LocalDestination(out), base_url="https://example.org/"),
                       walk_directory(root), clock, LocalBucket(root), log=logged.append,
                       now=clock)

    frozen = tmp_path / "frozen"
    run(frozen, timedelta(days=3))
    with pytest.raises(PublishError) as caught:
        run(frozen, timedelta(0))
    message = str(caught.value)
    assert message.startswith("the last run's window ends at 20")
    assert "ahead of this machine's clock (20" in message and "by more than 1:00:00" in message
    assert f"delete the publication at {LocalDestination(frozen).url}" in message
    assert "have followers baseline again" in message and "\n" not in message
    ahead = tmp_path / "ahead"
    run(ahead, timedelta(minutes=30))
    assert run(ahead, timedelta(0)).changes == 0
    assert "the first inventory after that publishes" in logged[-1]
