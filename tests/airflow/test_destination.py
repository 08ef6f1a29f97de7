"""The destination factory: URLs to local and S3 destinations, the S3 client from the user's AWS
connection (its ``endpoint_url`` honoured), and the Asset URI of each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.errors import ConfigurationError
from airflow_provider_resourcesync.hooks.destination import (
    MAX_POOL,
    DestinationURL,
    destination_asset_uri,
    destination_from_url,
)
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination

from .conftest import AWS_CONN_ID


@pytest.mark.parametrize(("url", "parsed"), [
    ("/data/mirror", DestinationURL("file", "/data/mirror")),
    ("/data/mirror/", DestinationURL("file", "/data/mirror")),
    ("file:///data/my%20mirror/", DestinationURL("file", "/data/my mirror")),
    ("file://localhost/data/mirror", DestinationURL("file", "/data/mirror")),
    ("s3://bucket/mirror/", DestinationURL("s3", "mirror/", bucket="bucket")),
    ("s3://bucket", DestinationURL("s3", "", bucket="bucket")),
    (" s3://bucket/a/b ", DestinationURL("s3", "a/b", bucket="bucket")),
])
def test_destination_urls_are_read(url: str, parsed: DestinationURL) -> None:
    assert DestinationURL.parse(url) == parsed


@pytest.mark.parametrize("url", [
    "", "mirror", "./mirror", "file:mirror", "file://server/share", "s3:///prefix",
    "s3://bucket/prefix?versionId=1", "gs://bucket/prefix", "https://example.org/",
])
def test_other_urls_are_refused_with_the_accepted_forms(url: str) -> None:
    with pytest.raises(ConfigurationError, match="expected file:///absolute/path"):
        destination_from_url(url)


@pytest.mark.parametrize(("url", "uri"), [
    ("/data/mirror/", "file:///data/mirror"),
    ("file:///data/my%20mirror", "file:///data/my%20mirror"),
    ("s3://bucket/mirror/", "s3://bucket/mirror"),
    ("s3://bucket", "s3://bucket/"),
])
def test_the_asset_uri_names_the_destination_as_airflow_normalises_it(url: str, uri: str) -> None:
    from airflow.sdk import Asset

    assert destination_asset_uri(url) == uri
    assert Asset(uri).uri == uri


def test_a_local_destination_is_created(tmp_path: Path) -> None:
    destination = destination_from_url((tmp_path / "mirror").as_uri())
    assert isinstance(destination, LocalDestination)
    assert (tmp_path / "mirror").is_dir()
    assert destination.url == (tmp_path / "mirror").as_uri() + "/"


def test_s3_goes_through_the_aws_connection_and_its_endpoint_url(
        bucket: str, s3_client: Any) -> None:
    destination = destination_from_url(f"s3://{bucket}/mirror/", aws_conn_id=AWS_CONN_ID)
    assert isinstance(destination, S3Destination)
    destination.write_bytes("a/b.txt", b"hello", "text/plain")
    stored = s3_client.get_object(Bucket=bucket, Key="mirror/a/b.txt")
    assert stored["Body"].read() == b"hello"


def test_the_s3_client_has_room_for_a_syncs_threads_and_keeps_the_connections_config(
        bucket: str, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore keeps 10 connections; a sync runs 16 threads by default (issue 16)."""
    destination = destination_from_url(f"s3://{bucket}/mirror/", aws_conn_id=AWS_CONN_ID)
    assert isinstance(destination, S3Destination)
    assert destination.client.meta.config.max_pool_connections == MAX_POOL >= 16
    monkeypatch.setenv(f"AIRFLOW_CONN_{AWS_CONN_ID.upper()}", json.dumps({
        "conn_type": "aws", "login": "test", "password": "test",
        "extra": {"endpoint_url": s3_endpoint, "region_name": "us-east-1", "config_kwargs": {
            "retries": {"mode": "standard", "max_attempts": 7}, "connect_timeout": 3}}}))
    configured = destination_from_url(f"s3://{bucket}/mirror/", aws_conn_id=AWS_CONN_ID)
    assert isinstance(configured, S3Destination)
    config = configured.client.meta.config
    assert (config.max_pool_connections, config.connect_timeout) == (MAX_POOL, 3)
    assert config.retries == {"mode": "standard", "total_max_attempts": 8}  # 7 retries
    configured.write_bytes("a.txt", b"a", "text/plain")  # still works
