"""Objects read as their URLs serve them now (issue 15, item 3; issue 27, item 6): on moto's S3
server over HTTP, an object overwritten since the inventory is read as it is now, with its ETag,
length and LastModified, and on a versioned bucket its latest version; one deleted since is not
read (left for the next run); a refusal names the bucket, key and action. In a directory, a link
swapped in for a folder since the walk leads nowhere."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.errors import InventoryError
from airflow_provider_resourcesync.publish import bucket as bucket_module
from airflow_provider_resourcesync.publish.bucket import LocalBucket, S3Bucket
from airflow_provider_resourcesync.publish.inventory.local import change_token, last_modified


def read(bucket: Any, key: str) -> bytes | None:
    with bucket.read(key) as chunks:
        return None if chunks is None else b"".join(chunks)


def state(bucket: Any, key: str) -> tuple[bytes, str, int, datetime] | None:
    """The bytes read and what the read says of them: ETag, length, LastModified."""
    with bucket.read(key) as chunks:
        return None if chunks is None else (b"".join(chunks), chunks.etag, chunks.length,
                                            chunks.modified)


def head(s3_client: Any, bucket: str, key: str) -> tuple[str, int, datetime]:
    got = s3_client.head_object(Bucket=bucket, Key=key)
    return got["ETag"].strip('"'), got["ContentLength"], got["LastModified"]


@pytest.mark.parametrize("versioned", [False, True])
def test_an_object_is_read_as_it_is_now_and_one_gone_is_not_read(
        s3_client: Any, bucket: str, versioned: bool) -> None:
    if versioned:
        s3_client.put_bucket_versioning(Bucket=bucket,
                                        VersioningConfiguration={"Status": "Enabled"})
    s3_client.put_object(Bucket=bucket, Key="a b/é.txt", Body=b"first")
    s3_client.put_object(Bucket=bucket, Key="gone.txt", Body=b"here")
    objects = S3Bucket(s3_client, bucket)
    assert state(objects, "a b/é.txt") == (b"first", *head(s3_client, bucket, "a b/é.txt"))
    s3_client.put_object(Bucket=bucket, Key="a b/é.txt", Body=b"second, longer")
    s3_client.delete_object(Bucket=bucket, Key="gone.txt")
    assert state(objects, "a b/é.txt") == (b"second, longer",
                                           *head(s3_client, bucket, "a b/é.txt"))
    assert read(objects, "gone.txt") is None  # on a versioned bucket, a delete marker


def test_a_missing_bucket_is_an_error_naming_the_bucket_key_and_action(s3_client: Any) -> None:
    with pytest.raises(InventoryError, match=r"s3://no-such-bucket/ key 'k': s3:GetObject"):
        read(S3Bucket(s3_client, "no-such-bucket"), "k")


def test_a_link_swapped_in_for_a_folder_since_the_walk_is_not_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "docs").mkdir(parents=True)
    outside.mkdir()
    (root / "docs" / "a.txt").write_bytes(b"inside")
    (outside / "a.txt").write_bytes(b"secret")
    files = LocalBucket(root)
    info = (root / "docs" / "a.txt").stat()
    assert state(files, "docs/a.txt") == (b"inside", change_token(info), 6, last_modified(info))
    (root / "docs" / "a.txt").unlink()
    (root / "docs").rmdir()
    os.symlink(outside, root / "docs")
    assert read(files, "docs/a.txt") is None


def test_a_link_anywhere_on_the_way_is_not_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "deep").mkdir(parents=True)
    outside.mkdir()
    (outside / "a.txt").write_bytes(b"secret")
    os.symlink(outside, root / "docs")
    os.symlink(outside, root / "deep" / "inner")
    os.symlink(outside / "a.txt", root / "a.txt")
    files = LocalBucket(root)
    for key in ("docs/a.txt", "deep/inner/a.txt", "a.txt", "/docs/a.txt", "deep//a.txt"):
        assert read(files, key) is None, key


def test_files_in_more_folders_than_are_kept_open_are_read_as_they_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Folders are kept open (bounded) while a bucket is used, and closed with it."""
    monkeypatch.setattr(bucket_module, "_FOLDERS", 2)
    keys = []
    for number in range(5):
        path = tmp_path / f"d{number}" / "e" / f"{number}.txt"
        path.parent.mkdir(parents=True)
        path.write_bytes(b"%d" % number)
        keys.append(path.relative_to(tmp_path).as_posix())
    (tmp_path / "top.txt").write_bytes(b"top")
    keys.append("top.txt")
    files = LocalBucket(tmp_path)
    for _ in range(2):
        for key in keys:
            assert read(files, key) == (b"top" if key == "top.txt" else key[1:2].encode())
        assert opened_under(tmp_path) <= 2
    del files
    assert opened_under(tmp_path) == 0


def opened_under(folder: Path) -> int:
    """This process's descriptors open on ``folder`` or below it: this test's only, whatever
    other threads of the process open or close meanwhile."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed since it was listed
            continue
        count += target == str(folder) or target.startswith(f"{folder}/")
    return count
