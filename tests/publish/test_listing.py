"""A live inventory: ListObjectsV2 pages from moto's S3 over HTTP, in key order."""

from __future__ import annotations

from datetime import UTC
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from airflow_provider_resourcesync.errors import InventoryError
from airflow_provider_resourcesync.publish.inventory import Skipped, list_bucket

KEYS = ["a/b", "a-b", "a.b", "a0", "é", "z z+", "日本", "pub/changedump.xml", "pub/x"]


def put(s3_client: Any, bucket: str, keys: list[str]) -> None:
    for key in keys:
        s3_client.put_object(Bucket=bucket, Key=key, Body=key.encode())


def test_a_listing_reads_every_page_in_key_order(s3_client: Any, bucket: str) -> None:
    put(s3_client, bucket, KEYS)
    requests: list[dict[str, Any]] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        requests.append(params)

    s3_client.meta.events.register("provide-client-params.s3.ListObjectsV2", count)
    try:
        listed = list(list_bucket(s3_client, bucket, exclude_prefix="pub/", page_size=2))
    finally:
        s3_client.meta.events.unregister("provide-client-params.s3.ListObjectsV2", count)
    assert [item.key for item in listed] == sorted(
        (key for key in KEYS if not key.startswith("pub/")), key=str.encode)
    assert len(requests) == 5 and {request["MaxKeys"] for request in requests} == {2}
    head = s3_client.head_object(Bucket=bucket, Key="é")
    item = next(item for item in listed if item.key == "é")
    assert (item.size, item.etag) == (2, head["ETag"].strip('"'))
    assert item.last_modified == head["LastModified"] and item.last_modified.tzinfo is UTC


def test_a_prefix_lists_only_the_keys_under_it(s3_client: Any, bucket: str) -> None:
    put(s3_client, bucket, KEYS)
    assert [item.key for item in list_bucket(s3_client, bucket, "a")] == ["a-b", "a.b",
                                                                          "a/b", "a0"]


def test_folder_markers_are_not_published(s3_client: Any, bucket: str) -> None:
    """The S3 console makes a folder as an empty object named ``folder/``: no URL serves it as
    a file, and no Destination's directory can hold it beside ``folder/a``."""
    put(s3_client, bucket, ["folder/", "folder/a", "folder/sub/", "top"])
    assert [item.key for item in list_bucket(s3_client, bucket)] == ["folder/a", "top"]


def test_keys_no_url_can_carry_are_skipped_and_counted(s3_client: Any, bucket: str) -> None:
    """Anyone who can write into the prefix can make such a key: it is left out, not fatal."""
    put(s3_client, bucket, ["a", "b\x01c", "d/./e", "f"])
    skipped = Skipped(share=0.5)
    assert [item.key for item in list_bucket(s3_client, bucket, skipped=skipped)] == ["a", "f"]
    assert skipped.as_dict() == {"count": 2, "examples": [
        "'b\\x01c' holds a control character, which no URL can carry",
        "'d/./e' has a '.' or '..' segment, which a URL client resolves away"]}


def test_a_store_listing_out_of_order_is_an_error_naming_both_keys(s3_client: Any,
                                                                   bucket: str) -> None:
    put(s3_client, bucket, ["a", "b", "c"])

    def swap(parsed: dict[str, Any], **_: Any) -> None:
        parsed["Contents"].reverse()

    s3_client.meta.events.register("after-call.s3.ListObjectsV2", swap)
    try:
        with pytest.raises(InventoryError, match="key 'b' comes after 'c', out of key order"
                           ) as caught:
            list(list_bucket(s3_client, bucket))
    finally:
        s3_client.meta.events.unregister("after-call.s3.ListObjectsV2", swap)
    assert f"s3://{bucket}/" in str(caught.value) and "S3 Inventory report" in str(caught.value)


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self) -> list[bytes]:
        return [self.body]


def test_access_denied_on_the_listing_names_bucket_prefix_and_action(s3_client: Any,
                                                                     bucket: str) -> None:
    body = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
            b"<Message>Access Denied</Message></Error>")

    def refuse(request: Any, **_: Any) -> AWSResponse:  # S3's answer, parsed by botocore
        return AWSResponse(request.url, 403, {"Content-Type": "application/xml"}, _Raw(body))

    s3_client.meta.events.register("before-send.s3.ListObjectsV2", refuse)
    try:
        with pytest.raises(InventoryError, match="AccessDenied") as caught:
            list(list_bucket(s3_client, bucket, "data/"))
    finally:
        s3_client.meta.events.unregister("before-send.s3.ListObjectsV2", refuse)
    message = str(caught.value)
    assert f"s3://{bucket}/ key 'data/'" in message and "allow s3:ListBucket" in message
    assert not caught.value.rerun_helps and "re-run" not in message


def test_a_missing_bucket_is_named(s3_client: Any) -> None:
    with pytest.raises(InventoryError, match="NoSuchBucket") as caught:
        list(list_bucket(s3_client, "no-such-bucket"))
    assert "s3://no-such-bucket/" in str(caught.value) and not caught.value.rerun_helps
