"""Keys no URL can carry (issue 27, item 8): one such key in the bucket, which anyone who can
write into the prefix can make, is skipped and counted, not fatal; it is never published by a
later run, nor breaks one; the run fails only past a set share of the keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.errors import ConfigurationError, InventoryError
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.publish.bucket import LocalBucket, S3Bucket
from airflow_provider_resourcesync.publish.inventory import (
    DEFAULT_SHARE,
    Skipped,
    list_bucket,
    walk_directory,
)
from airflow_provider_resourcesync.publish.run import Publication, publish
from airflow_provider_resourcesync.storage.local import LocalDestination

from .test_publish_run import validate_all, write

T0 = datetime(2026, 3, 1, tzinfo=UTC)
BAD = ["bad\x01key.txt", "dir/./dot.txt", "x/../y.txt"]


def test_bad_keys_in_a_bucket_are_never_published_and_break_no_later_run(
        s3_client: Any, bucket: str, tmp_path: Path) -> None:
    for key in ["a.txt", "b.txt", *BAD]:
        s3_client.put_object(Bucket=bucket, Key=key, Body=key.encode())
    out = tmp_path / "published"
    publication = Publication(LocalDestination(out), base_url="https://objects.example.org/")

    def run(when: datetime) -> tuple[int, Skipped]:
        skipped = Skipped(share=0.75)
        done = publish(publication, list_bucket(s3_client, bucket, skipped=skipped), when,
                       S3Bucket(s3_client, bucket))
        return done.changes, skipped

    changes, skipped = run(T0)
    assert (changes, skipped.count) == (2, 3)
    s3_client.put_object(Bucket=bucket, Key="a.txt", Body=b"changed")
    s3_client.put_object(Bucket=bucket, Key=BAD[0], Body=b"changed too")
    changes, skipped = run(T0 + timedelta(days=1))
    assert (changes, skipped.count) == (1, 3)  # a.txt; the bad keys skipped again
    locs = {entry.loc for document in out.rglob("*.xml")
            for entry in read_document(document.read_bytes(), url=str(document)).entries}
    assert {loc.rsplit("/", 1)[1] for loc in locs if "objects.example.org" in loc} == {
        "a.txt", "b.txt"}
    records = b"".join(path.read_bytes() for path in out.glob("objects/*"))
    assert records and not any(key.encode() in records for key in BAD)
    validate_all(out)


def test_the_run_fails_only_past_the_share_of_keys_skipped(tmp_path: Path) -> None:
    """The default share is 1%: one bad name among 100 is skipped, two fail the run before
    anything is published, the count and a few names in the message."""
    root, out = tmp_path / "collection", tmp_path / "published"
    for number in range(99):
        write(root, f"{number:02d}.txt", b"x")
    write(root, BAD[0], b"x")
    publication = Publication(LocalDestination(out), base_url="https://objects.example.org/")
    assert DEFAULT_SHARE == 0.01
    skipped = Skipped()
    assert publish(publication, walk_directory(root, skipped=skipped), T0,
                   LocalBucket(root)).changes == 99
    assert skipped.count == 1
    (root / "00.txt").unlink()
    write(root, BAD[0].replace("bad", "worse"), b"x")
    with pytest.raises(InventoryError, match=r"2 of 100 keys cannot be published as URLs, "
                                             r"more than the 1\.00%") as caught:
        publish(publication, walk_directory(root), T0 + timedelta(days=1),
                LocalBucket(root))
    assert "'bad\\x01key.txt' holds a control character" in str(caught.value)
    assert len(list(out.glob("changes/*"))) == 0 and not list(out.glob("plans/*"))


@pytest.mark.parametrize("share", [-0.1, 1.5, "1%", True])
def test_a_share_outside_0_to_1_is_refused(share: object) -> None:
    with pytest.raises(ConfigurationError, match="give a number from 0 to 1"):
        Skipped(share)  # type: ignore[arg-type]
