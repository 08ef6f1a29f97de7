"""What a publication's documents say is what its URLs serve (issue 27, items 5 and 6): a bucket
on moto's S3, its objects served over HTTP by moto (a bucket policy lets anyone read), published
from S3 Inventory reports written as S3 writes them to a directory served by a loopback server
(moto answers a conditional GET 304 by its second-grained Last-Modified alone, though the ETag
differs: a document rewritten within the second would look unchanged), followed by our own
engines.

A first run lists an object's ETag as its MD5 only where S3 says it is one: a report's
EncryptionStatus NOT-SSE or SSE-S3 (and one part); otherwise no MD5 (before, every follower's
baseline refused every SSE-KMS, DSSE-KMS and SSE-C object, for ever).

An object written again between its report and the run (a status file rewritten daily) is
published as the run reads it, the packages and the Change List alike; on a versioned bucket,
the version the URL serves, not the one the report lists. Before, the first was left for the
next run, whose report was a day old again (``left: ["src/status.json"]`` for ever), and the
second was published as the report's version (``length mismatch: expected 17, got 52``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.publish.bucket import S3Bucket
from airflow_provider_resourcesync.publish.inventory import (
    InventoryObject,
    S3ReportReader,
    list_bucket,
    read_report,
)
from airflow_provider_resourcesync.publish.run import Publication, Published, publish
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import ServedDirectory, SourceServer
from tests.sync.conftest import held

from .reports import CSV_COLUMNS, s3_put, write_report

METHODS = ("changedump", "changelist")
#: How each object is stored (put_object's arguments), by its EncryptionStatus.
STORED: dict[str, dict[str, str]] = {
    "NOT-SSE": {}, "SSE-S3": {"ServerSideEncryption": "AES256"},
    "SSE-KMS": {"ServerSideEncryption": "aws:kms"},
    "DSSE-KMS": {"ServerSideEncryption": "aws:kms:dsse"},
    "SSE-C": {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": "k" * 32}}
#: The first report's time; each next one an hour later, the last still in the past.
START = (datetime.now(UTC) - timedelta(days=1)).replace(microsecond=0)


class ServedBucket:
    """Objects under ``src/`` of ``bucket``, served by moto at ``endpoint``, published from
    reports kept under its ``inventory/`` to ``out``, served by ``web`` under ``/pub/``."""

    def __init__(self, client: Any, endpoint: str, bucket: str, web: SourceServer,
                 out: Path) -> None:
        self.client, self.bucket = client, bucket
        client.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                "Resource": f"arn:aws:s3:::{bucket}/*"}]}))
        self.url = f"{endpoint}/{bucket}/"
        self.publication = Publication(LocalDestination(out), base_url=self.url,
                                       publish_url=web.url("/pub/"))
        self.documents = ServedDirectory(web, out, "/pub/")
        self.capability_list = web.url("/pub/capabilitylist.xml")
        self.reports = 0

    def put(self, key: str, body: bytes, **extra: Any) -> InventoryObject:
        """``body`` written at ``key``; the object as a report made now would list it."""
        self.client.put_object(Bucket=self.bucket, Key=key, Body=body, **extra)
        head = self.client.head_object(Bucket=self.bucket, Key=key)
        return InventoryObject(key, head["ContentLength"], head["ETag"].strip('"'),
                               head["LastModified"].astimezone(UTC), head.get("VersionId"))

    def run(self, listed: list[InventoryObject], columns: Sequence[str] = CSV_COLUMNS
            ) -> Published:
        """A run on a report listing ``listed`` (an hour after the report before), with
        ``columns``."""
        created = START + timedelta(hours=self.reports)
        self.reports += 1
        manifest = f"inventory/{self.bucket}/daily/{self.reports}/manifest.json"
        write_report(s3_put(self.client, self.bucket),
                     [[replace(item, last_modified=created - timedelta(minutes=1))
                       for item in listed]],
                     manifest_key=manifest, created=created, bucket=self.bucket,
                     columns=columns)
        report = read_report(S3ReportReader(self.client, self.bucket), manifest, "src/",
                             bucket=self.bucket)
        done = publish(self.publication, report.ordered(), report.created,
                       S3Bucket(self.client, self.bucket))
        self.documents.refresh()
        return done

    def run_on_listing(self) -> Published:
        """A run on a listing of ``src/``."""
        done = publish(self.publication, list_bucket(self.client, self.bucket, "src/"),
                       datetime.now(UTC), S3Bucket(self.client, self.bucket))
        self.documents.refresh()
        return done

    def served(self) -> dict[str, bytes]:
        """URI -> bytes of every object under ``src/``, as its URL serves it."""
        listed = self.client.list_objects_v2(Bucket=self.bucket, Prefix="src/")
        return {self.url + item["Key"]: self.client.get_object(
            Bucket=self.bucket, Key=item["Key"])["Body"].read()
            for item in listed.get("Contents", ())}

    def reader(self) -> ResourceSyncClient:
        return ResourceSyncClient(ClientPolicy(allow_private=True, backoff=0.01, max_backoff=1),
                                  source_urls=[self.capability_list, self.url])


@pytest.fixture
def served(s3_client: Any, s3_endpoint: str, bucket: str, server: SourceServer,
           tmp_path: Path) -> ServedBucket:
    return ServedBucket(s3_client, s3_endpoint, bucket, server, tmp_path / "published")


@pytest.fixture
def reader(served: ServedBucket) -> Iterator[ResourceSyncClient]:
    with served.reader() as opened:
        yield opened


@pytest.mark.parametrize("inventory", ["report", "report without EncryptionStatus", "listing"])
def test_a_first_run_lists_an_etag_as_md5_only_where_s3_says_it_is_one(
        served: ServedBucket, reader: ResourceSyncClient, tmp_path: Path, inventory: str) -> None:
    """moto gives every object its MD5 as ETag; S3 gives an SSE-KMS, DSSE-KMS or SSE-C one
    another 32 hex digits, which the report lists. A listing says no encryption status: it
    lists no MD5 (a HEAD per object would say, at a request per object, docs/design.md)."""
    listed = []
    for status, extra in STORED.items():
        item = served.put(f"src/{status}.txt", f"stored {status}\n".encode(), **extra)
        etag = item.etag if status in ("NOT-SSE", "SSE-S3") else hashlib.md5(
            b"what S3 makes of " + item.key.encode()).hexdigest()
        listed.append(replace(item, etag=etag, encryption=status))
    if inventory == "listing":
        done = served.run_on_listing()
    else:
        done = served.run(listed, (*CSV_COLUMNS, "EncryptionStatus")
                          if inventory == "report" else CSV_COLUMNS)
    assert done.changes == 5
    snapshot = read_document((served.documents.root / "resourcelist.xml").read_bytes())
    hashes = {entry.loc.removeprefix(served.url): entry.md.hash if entry.md else None
              for entry in snapshot.entries}
    assert hashes == {
        item.key: Hashes.of(md5=item.etag)
        if inventory == "report" and item.encryption in ("NOT-SSE", "SSE-S3") else None
        for item in listed}
    mirror = LocalDestination(tmp_path / "mirror")
    baselined = run_baseline(reader, mirror, capability_list_url=served.capability_list)
    assert baselined.stats["failed"] == 0 and held(mirror) == served.served()


@pytest.mark.parametrize("versioned", [False, True])
def test_an_object_written_again_since_its_report_is_published_as_its_url_serves_it(
        served: ServedBucket, reader: ResourceSyncClient, tmp_path: Path,
        versioned: bool) -> None:
    if versioned:
        served.client.put_bucket_versioning(Bucket=served.bucket,
                                            VersioningConfiguration={"Status": "Enabled"})
    steady = served.put("src/steady.txt", b"steady\n")
    status = served.put("src/status.json", b'{"day": 0}\n')
    assert served.run([steady, status]).changes == 2
    mirrors = {method: LocalDestination(tmp_path / method) for method in METHODS}
    points = {method: run_baseline(reader, mirrors[method],
                                   capability_list_url=served.capability_list)
              for method in METHODS}
    listed = served.put("src/status.json", b'{"day": 1, "ok": 1}\n')  # the report's
    served.put("src/status.json", b'{"day": 1, "ok": 1, "written": "after the report"}\n')
    done = served.run([steady, listed])
    assert (done.changes, done.left) == (1, ())
    for method in METHODS:
        points[method] = run_incremental(reader, mirrors[method],
                                         capability_list_url=served.capability_list,
                                         checkpoint=points[method], method=method)
        assert held(mirrors[method]) == served.served(), method
    # the next report lists what was read: published already, nothing new
    current = served.client.head_object(Bucket=served.bucket, Key="src/status.json")
    assert served.run([steady, replace(listed, size=current["ContentLength"],
                                       etag=current["ETag"].strip('"'),
                                       version_id=current.get("VersionId"))]).changes == 0
