"""A local directory as an inventory: keys in S3's order, regular files only."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.errors import InventoryError
from airflow_provider_resourcesync.publish.inventory import Skipped, list_bucket, walk_directory

FILES = ["a/b", "a/b0/c", "a-b", "a.b", "a0", "ab/c", "a/.hidden", "é/x", "Z", "z z+", "日本"]


def make(root: Path, keys: list[str]) -> None:
    for key in keys:
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(key.encode())


def test_keys_come_in_the_order_s3_lists_them(tmp_path: Path, s3_client: Any,
                                              bucket: str) -> None:
    make(tmp_path, FILES)
    for key in FILES:
        s3_client.put_object(Bucket=bucket, Key=key, Body=b"")
    walked = [item.key for item in walk_directory(tmp_path)]
    assert walked == [item.key for item in list_bucket(s3_client, bucket)]
    assert walked == sorted(FILES, key=str.encode)


def test_size_change_token_and_mtime_describe_each_file(tmp_path: Path) -> None:
    make(tmp_path, ["d/f"])
    path = tmp_path / "d" / "f"
    os.utime(path, ns=(0, 1_700_000_000_123_456_789))
    [item] = walk_directory(tmp_path)
    assert item.size == 3 and item.etag == f"3-{1_700_000_000_123_456_789:x}"
    assert item.last_modified == datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)
    path.write_bytes(b"new")  # same size, new mtime: a new token
    assert next(walk_directory(tmp_path)).etag != item.etag


def test_links_and_special_files_are_skipped(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make(outside, ["secret"])
    root = tmp_path / "root"
    make(root, ["kept"])
    (root / "link-to-file").symlink_to(outside / "secret")
    (root / "link-to-dir").symlink_to(outside, target_is_directory=True)
    os.mkfifo(root / "fifo")
    assert [item.key for item in walk_directory(root)] == ["kept"]


def test_prefix_and_exclude_prefix(tmp_path: Path) -> None:
    make(tmp_path, ["data/a", "data/pub/changedump.xml", "data/pub/x/y", "other"])
    assert [item.key for item in walk_directory(tmp_path, "data/",
                                                exclude_prefix="data/pub/")] == ["data/a"]


def test_names_that_cannot_become_urls_are_skipped_and_counted(tmp_path: Path) -> None:
    make(tmp_path, ["d/a", "d/z", "e"])
    for name in (b"bad\xff.txt", b"line\nbreak"):
        with open(os.fsencode(tmp_path / "d") + b"/" + name, "wb") as file:
            file.write(b"x")
    skipped = Skipped(share=0.5)
    assert [item.key for item in walk_directory(tmp_path, skipped=skipped)] == ["d/a", "d/z",
                                                                                 "e"]
    assert skipped.as_dict() == {"count": 2, "examples": [
        "'d/bad\\udcff.txt' is not valid UTF-8",
        "'d/line\\nbreak' holds a control character, which no URL can carry"]}
    with pytest.raises(InventoryError, match="2 of 5 keys cannot be published") as caught:
        list(walk_directory(tmp_path))  # the default share: 1%
    assert str(tmp_path) in str(caught.value) and "rename" in str(caught.value)
    assert not caught.value.rerun_helps


def test_a_missing_root_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="cannot be read"):
        list(walk_directory(tmp_path / "missing"))
