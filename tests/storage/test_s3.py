"""The S3 destination against moto's server, over HTTP."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from airflow_provider_resourcesync.errors import DestinationError, UnstorableKeyError
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.storage.base import ObjectInfo
from airflow_provider_resourcesync.storage.s3 import S3Destination

INFO = ObjectInfo(
    uri="https://exämple.org/a b?q=%20", length=3,
    hashes=Hashes.parse("md5:900150983cd24fb0d6963f7d28e17f72 sha-256:ba7816bf"),
    lastmod=datetime(2024, 1, 2, 3, 4, 5, 678900, tzinfo=UTC), type="text/plain; charset=utf-8")
MIB = 1024 * 1024


def write(destination: S3Destination, key: str, data: bytes,
          info: ObjectInfo = INFO) -> None:
    with destination.stage(key) as staged:
        staged.file.write(data)
        staged.commit(info)


def head(s3: S3Destination, key: str) -> dict[str, Any] | None:
    try:
        return s3.client.head_object(Bucket=s3.bucket, Key=s3.prefix + key)
    except ClientError:
        return None


def test_staged_bytes_are_invisible_until_commit(s3: S3Destination) -> None:
    with s3.stage("https/h/a") as staged:
        staged.file.write(b"abc")
        assert not s3.exists("https/h/a")
        staged.commit(INFO)
        assert s3.read_bytes("https/h/a") == b"abc"
    assert head(s3, "https/h/a") is not None


def test_an_error_in_the_staged_block_keeps_the_old_object(s3: S3Destination) -> None:
    write(s3, "https/h/a", b"old")
    with pytest.raises(RuntimeError), s3.stage("https/h/a") as staged:
        staged.file.write(b"new, half written")
        raise RuntimeError("fetch failed")
    assert s3.read_bytes("https/h/a") == b"old"
    assert s3.info("https/h/a") == INFO


def test_metadata_travels_with_the_object(s3: S3Destination) -> None:
    write(s3, "https/h/a", b"abc")
    assert s3.info("https/h/a") == INFO
    stored = head(s3, "https/h/a")
    assert stored is not None
    assert stored["ContentType"] == INFO.type
    assert stored["Metadata"]["uri"] == "https://ex%C3%A4mple.org/a%20b?q=%2520"
    assert stored["Metadata"]["length"] == "3"
    assert stored["Metadata"]["lastmod"] == "2024-01-02T03:04:05.6789Z"
    bare = ObjectInfo("https://h/x", 0, Hashes(()))
    write(s3, "https/h/x", b"", bare)
    assert s3.info("https/h/x") == bare
    assert head(s3, "https/h/x")["ContentType"] == "application/octet-stream"  # type: ignore[index]
    s3.write_bytes("doc.xml", b"<x/>", "application/xml")
    assert s3.info("doc.xml") is None
    assert head(s3, "doc.xml")["ContentType"] == "application/xml"  # type: ignore[index]
    assert s3.info("missing") is None and not s3.exists("missing")


def test_metadata_too_large_for_s3_is_unstorable(s3: S3Destination) -> None:
    info = ObjectInfo("https://h/" + "x" * 3000, 1, Hashes(()))
    with pytest.raises(UnstorableKeyError, match="2048") as caught:
        write(s3, "k", b"x", info)
    assert not caught.value.rerun_helps and "re-run" not in str(caught.value)
    assert f"{info.uri[:100]!r}... (3010 characters)" in str(caught.value)
    assert not s3.exists("k")


def test_a_key_over_1024_bytes_is_unstorable(s3: S3Destination) -> None:
    key = "https/h/" + "/".join(["é" * 100] * 6)  # 613 characters, 1213 bytes in UTF-8
    with pytest.raises(UnstorableKeyError, match="1024") as caught:
        write(s3, key, b"x")
    message = str(caught.value)
    assert not caught.value.rerun_helps and "re-run" not in message
    assert "key_prefixes" in message and s3.url in message
    assert f"{key[:100]!r}... (613 characters)" in message and key not in message
    fits = "https/h/" + "é" * ((1024 - len(s3.prefix) - 8) // 2)  # 1023 bytes with the prefix
    write(s3, fits, b"x")
    assert list(s3.keys()) == [fits]


def test_a_large_object_goes_up_as_multipart_with_its_metadata(s3: S3Destination) -> None:
    data = bytes(range(256)) * (12 * MIB // 256)
    info = ObjectInfo("https://h/big.gz", len(data),
                      Hashes.of(md5=hashlib.md5(data).hexdigest()), type="application/gzip")
    write(s3, "https/h/big.gz", data, info)
    stored = head(s3, "https/h/big.gz")
    assert stored is not None
    assert stored["ETag"].strip('"').endswith("-2")  # two parts of 8 MiB and 4 MiB
    assert stored["ContentLength"] == len(data)
    assert stored["ContentType"] == "application/gzip"
    assert s3.info("https/h/big.gz") == info
    with s3.open("https/h/big.gz") as body:
        assert hashlib.md5(body.read()).hexdigest() == info.hashes.get("md5")  # not re-gzipped


@pytest.mark.parametrize("failing_part", [1, 2], ids=["while-writing", "on-close"])
def test_a_multipart_upload_failing_midway_leaves_no_object(s3: S3Destination,
                                                            failing_part: int) -> None:
    write(s3, "https/h/kept", b"old")
    data = b"y" * (12 * MIB)

    def fail_a_part(params: dict[str, Any], **_: Any) -> None:
        if params.get("PartNumber") == failing_part:
            raise ClientError({"Error": {"Code": "InternalError", "Message": "injected"}},
                              "UploadPart")

    events = s3.client.meta.events
    events.register("provide-client-params.s3.UploadPart", fail_a_part)
    try:
        with pytest.raises(DestinationError, match="InternalError"):
            write(s3, "https/h/new", data)
        with pytest.raises(DestinationError, match="InternalError"):
            write(s3, "https/h/kept", data)
    finally:
        events.unregister("provide-client-params.s3.UploadPart", fail_a_part)
    assert not s3.exists("https/h/new")
    assert s3.read_bytes("https/h/kept") == b"old"
    uploads = s3.client.list_multipart_uploads(Bucket=s3.bucket)
    assert uploads.get("Uploads", []) == []  # aborted, no parts left behind


def test_listing_reads_every_page(s3_client: Any, bucket: str) -> None:
    s3 = S3Destination(s3_client, bucket, "mirror", page_size=2)
    keys = [f"https/h/{n}" for n in range(7)]
    for key in keys:
        s3.write_bytes(key, b"x", "text/plain")
    s3.write_bytes(".resourcesync/resourcelist.xml", b"<x/>", "application/xml")
    s3_client.put_object(Bucket=bucket, Key="elsewhere/x", Body=b"x")
    requests: list[dict[str, Any]] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        requests.append(params)

    s3_client.meta.events.register("provide-client-params.s3.ListObjectsV2", count)
    try:
        assert sorted(s3.keys()) == keys
    finally:
        s3_client.meta.events.unregister("provide-client-params.s3.ListObjectsV2", count)
    assert len(requests) >= 4 and all(r["MaxKeys"] == 2 for r in requests)
    assert all(r["Prefix"] == "mirror/" for r in requests)
    assert list(s3.keys("https/h/1")) == ["https/h/1"]
    assert list(s3.keys(".resourcesync/")) == [".resourcesync/resourcelist.xml"]


def test_prefix_and_urls(s3_client: Any, bucket: str) -> None:
    s3 = S3Destination(s3_client, bucket, "/deep/mirror")
    assert s3.prefix == "deep/mirror/"
    assert s3.url == f"s3://{bucket}/deep/mirror/"
    assert s3.object_url("https/h/a%2Fb") == f"s3://{bucket}/deep/mirror/https/h/a%2Fb"
    s3.write_bytes("k", b"x", "text/plain")
    assert s3_client.get_object(Bucket=bucket, Key="deep/mirror/k")["Body"].read() == b"x"
    with pytest.raises(DestinationError):
        S3Destination(s3_client, bucket, "a/../b")


def test_delete_and_move(s3: S3Destination) -> None:
    write(s3, "a/1", b"one")
    s3.move("a/1", "b/2")
    assert s3.read_bytes("b/2") == b"one"
    assert s3.info("b/2") == INFO
    assert head(s3, "b/2")["ContentType"] == INFO.type  # type: ignore[index]
    assert not s3.exists("a/1")
    s3.delete("b/2")
    assert not s3.exists("b/2")
    s3.delete("b/2")  # nothing to do
    assert list(s3.keys()) == []
    with pytest.raises(DestinationError, match="NoSuchKey"):
        s3.move("missing", "x")
    with pytest.raises(DestinationError, match="NoSuchKey"):
        s3.open("missing")
    assert s3.read_bytes("missing") is None


@pytest.mark.parametrize("key", ["", "/abs", "../up", "a/../b", "a//b", "a/./b"])
def test_keys_are_relative(s3: S3Destination, key: str) -> None:
    with pytest.raises(DestinationError):
        s3.stage(key)
    with pytest.raises(DestinationError):
        s3.write_bytes(key, b"x", "text/plain")
    with pytest.raises(DestinationError):
        s3.object_url(key)


def test_a_missing_bucket_is_named(s3_client: Any) -> None:
    s3 = S3Destination(s3_client, "no-such-bucket")
    with pytest.raises(DestinationError, match="NoSuchBucket") as caught:
        write(s3, "k", b"x")
    assert "'no-such-bucket'" in str(caught.value)
    with pytest.raises(DestinationError, match="NoSuchBucket") as caught:
        s3.read_bytes("k")
    assert "'no-such-bucket'" in str(caught.value)
    with pytest.raises(DestinationError, match="NoSuchBucket"):
        list(s3.keys())
    big = b"z" * (9 * MIB)
    with pytest.raises(DestinationError, match="no-such-bucket"):
        write(s3, "big", big)
