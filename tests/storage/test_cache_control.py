"""A cache lifetime travels with a write (issue 28): S3 serves it as ``Cache-Control`` on a plain
HTTP GET, whichever way the object went up (one PUT, a multipart upload, a whole small write),
and reads it back; a local folder keeps none (its web server sets the header)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import httpx
import pytest

from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination

from .test_s3 import INFO, MIB, write

LIFETIME = "public, max-age=300"


def public(s3_client: Any, bucket: str) -> None:
    """Let anyone GET the bucket's objects, as a bucket served to followers is."""
    s3_client.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
            "Resource": f"arn:aws:s3:::{bucket}/*"}]}))


@pytest.mark.parametrize("size", [3, 6 * MIB], ids=["put", "multipart"])
def test_a_staged_object_is_served_over_http_with_its_cache_control(
        s3_client: Any, s3_endpoint: str, bucket: str, size: int) -> None:
    public(s3_client, bucket)
    s3 = S3Destination(s3_client, bucket, "rs/", multipart_threshold=MIB)
    info = replace(INFO, length=size, cache_control=LIFETIME)
    write(s3, "doc.xml", b"x" * size, info)
    served = httpx.get(f"{s3_endpoint}/{bucket}/rs/doc.xml")
    assert served.status_code == 200 and len(served.content) == size
    assert served.headers["cache-control"] == LIFETIME
    assert s3.info("doc.xml") == info


def test_a_small_write_is_served_with_its_cache_control_and_without_one_gets_none(
        s3_client: Any, s3_endpoint: str, bucket: str) -> None:
    public(s3_client, bucket)
    s3 = S3Destination(s3_client, bucket)
    s3.write_bytes("index.xml", b"<x/>", "application/xml", cache_control=LIFETIME)
    s3.write_bytes("plain.json", b"{}", "application/json")
    served = httpx.get(f"{s3_endpoint}/{bucket}/index.xml")
    assert (served.content, served.headers["content-type"], served.headers["cache-control"]) \
        == (b"<x/>", "application/xml", LIFETIME)
    assert "cache-control" not in httpx.get(f"{s3_endpoint}/{bucket}/plain.json").headers


def test_a_local_folder_keeps_the_object_and_no_cache_control(local: LocalDestination) -> None:
    local.write_bytes("index.xml", b"<x/>", "application/xml", cache_control=LIFETIME)
    with local.stage("https/h/a") as staged:
        staged.file.write(b"abc")
        staged.commit(replace(INFO, cache_control=LIFETIME))
    assert local.read_bytes("index.xml") == b"<x/>"
    assert local.info("https/h/a") == INFO
