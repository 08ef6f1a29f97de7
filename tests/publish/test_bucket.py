"""Objects read pinned to what the inventory listed (issue 15, item 3): on moto's S3 server over
HTTP, an object overwritten or deleted since is not read (left for the next run), a version is
read as it was, a refusal names the bucket, key and action; in a directory, a link swapped in
for a folder since the walk leads nowhere."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.errors import InventoryError
from airflow_provider_resourcesync.publish import bucket as bucket_module
from airflow_provider_resourcesync.publish.bucket import LocalBucket, S3Bucket
from airflow_provider_resourcesync.publish.inventory.local import change_token


def etag(s3_client: Any, bucket: str, key: str) -> str:
    return str(s3_client.head_object(Bucket=bucket, Key=key)["ETag"]).strip('"')


def read(bucket: Any, key: str, tag: str, version: str | None = None) -> bytes | None:
    with bucket.read(key, tag, version) as chunks:
        return None if chunks is None else b"".join(chunks)


def test_an_object_changed_or_gone_since_the_inventory_is_not_read(
        s3_client: Any, bucket: str) -> None:
    s3_client.put_object(Bucket=bucket, Key="a b/é.txt", Body=b"first")
    s3_client.put_object(Bucket=bucket, Key="gone.txt", Body=b"here")
    listed = {key: etag(s3_client, bucket, key) for key in ("a b/é.txt", "gone.txt")}
    objects = S3Bucket(s3_client, bucket)
    assert read(objects, "a b/é.txt", listed["a b/é.txt"]) == b"first"
    s3_client.put_object(Bucket=bucket, Key="a b/é.txt", Body=b"second")
    s3_client.delete_object(Bucket=bucket, Key="gone.txt")
    assert read(objects, "a b/é.txt", listed["a b/é.txt"]) is None
    assert read(objects, "gone.txt", listed["gone.txt"]) is None


def test_a_version_is_read_as_it_was_listed(s3_client: Any, bucket: str) -> None:
    s3_client.put_bucket_versioning(Bucket=bucket,
                                    VersioningConfiguration={"Status": "Enabled"})
    first = s3_client.put_object(Bucket=bucket, Key="v.txt", Body=b"one")["VersionId"]
    s3_client.put_object(Bucket=bucket, Key="v.txt", Body=b"two")
    assert read(S3Bucket(s3_client, bucket), "v.txt", "", first) == b"one"


def test_a_missing_bucket_is_an_error_naming_the_bucket_key_and_action(s3_client: Any) -> None:
    with pytest.raises(InventoryError, match=r"s3://no-such-bucket/ key 'k': s3:GetObject"):
        read(S3Bucket(s3_client, "no-such-bucket"), "k", "x")


def test_a_link_swapped_in_for_a_folder_since_the_walk_is_not_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "docs").mkdir(parents=True)
    outside.mkdir()
    (root / "docs" / "a.txt").write_bytes(b"inside")
    (outside / "a.txt").write_bytes(b"secret")
    token = change_token((root / "docs" / "a.txt").stat())
    files = LocalBucket(root)
    assert read(files, "docs/a.txt", token) == b"inside"
    (root / "docs" / "a.txt").unlink()
    (root / "docs").rmdir()
    os.symlink(outside, root / "docs")
    # the token the file outside has: a read following the link would pass the pin
    assert read(files, "docs/a.txt", change_token((outside / "a.txt").stat())) is None


def test_a_link_anywhere_on_the_way_is_not_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "deep").mkdir(parents=True)
    outside.mkdir()
    (outside / "a.txt").write_bytes(b"secret")
    token = change_token((outside / "a.txt").stat())
    os.symlink(outside, root / "docs")
    os.symlink(outside, root / "deep" / "inner")
    os.symlink(outside / "a.txt", root / "a.txt")
    files = LocalBucket(root)
    for key in ("docs/a.txt", "deep/inner/a.txt", "a.txt", "/docs/a.txt", "deep//a.txt"):
        assert read(files, key, token) is None, key


def test_files_in_more_folders_than_are_kept_open_are_read_as_they_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Folders are kept open (bounded) while a bucket is used, and closed with it."""
    monkeypatch.setattr(bucket_module, "_FOLDERS", 2)
    tokens = {}
    for number in range(5):
        path = tmp_path / f"d{number}" / "e" / f"{number}.txt"
        path.parent.mkdir(parents=True)
        path.write_bytes(b"%d" % number)
        tokens[path.relative_to(tmp_path).as_posix()] = change_token(path.stat())
    (tmp_path / "top.txt").write_bytes(b"top")
    tokens["top.txt"] = change_token((tmp_path / "top.txt").stat())
    files = LocalBucket(tmp_path)
    for _ in range(2):
        for key, token in tokens.items():
            assert read(files, key, token) == (b"top" if key == "top.txt" else key[1:2].encode())
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
