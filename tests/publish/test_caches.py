"""Caches in front of a publication (issue 28, Deliver 3 and the Resource Dump's part of 2):
each document a run rewrites is served with a short, settable ``Cache-Control``, what is named
by its time (closed Change Lists and Change Dumps, packages, manifest copies) as immutable; and
the packages of a replaced Resource Dump outlive the new ``resourcedump.xml`` by that lifetime,
so a follower reading a cached old one finds every package it lists (11.1)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.publish.bucket import LocalBucket
from airflow_provider_resourcesync.publish.inventory import walk_directory
from airflow_provider_resourcesync.publish.packages import PackageSize
from airflow_provider_resourcesync.publish.run import Publication, publish
from airflow_provider_resourcesync.storage.s3 import S3Destination
from airflow_provider_resourcesync.testing import SourceServer
from airflow_provider_resourcesync.writer import IMMUTABLE

from ..storage.test_cache_control import public
from .test_publish_run import Publishing, write

#: Named by their time, never written over.
TIMED = ("changes/", "changedumps/", "packages/", "resourcedump/")
#: Rewritten by runs.
REWRITTEN = ("capabilitylist.xml", "description.xml", "changelist.xml", "changedump.xml",
             "resourcelist.xml", "resourcedump.xml")
START = datetime(2026, 3, 1, tzinfo=UTC)


def test_documents_a_run_rewrites_are_served_short_lived_and_packages_immutable_from_s3(
        s3_client: Any, s3_endpoint: str, bucket: str, tmp_path: Path) -> None:
    """Published to S3 (moto over HTTP, a bucket anyone may GET from): every document and
    package a follower fetches at ``publish_url`` carries the header for its kind."""
    public(s3_client, bucket)
    root = tmp_path / "bucket"
    for number in range(4):
        write(root, f"{number}.txt", b"first %d" % number)
    publication = Publication(S3Destination(s3_client, bucket, "rs/"),
                              base_url="https://objects.example.org/",
                              publish_url=f"{s3_endpoint}/{bucket}/rs/",
                              size=PackageSize(entries=2), resource_dump=True,
                              documents_max_age=timedelta(minutes=2))
    for day, body in enumerate((b"first", b"second", b"third")):
        for number in range(4):
            write(root, f"{number}.txt", b"%s %d" % (body, number))
        when = START + timedelta(days=day)
        publish(publication, walk_directory(root), when, LocalBucket(root), now=when)
    keys = publication.destination.keys("")  # a destination, not a mapping
    served = {key: httpx.get(f"{publication.publish_url}{key}").headers.get("cache-control")
              for key in keys}
    assert all(served[key] == "public, max-age=120" for key in REWRITTEN)
    timed = {key: header for key, header in served.items() if key.startswith(TIMED)}
    assert {key.partition("/")[0] for key in timed} == {folder[:-1] for folder in TIMED}
    assert set(timed.values()) == {IMMUTABLE}, timed


def resolves(web: SourceServer, dump: bytes) -> bool:
    """Whether every package the Resource Dump ``dump`` lists is served, as it lists it."""
    for entry in read_document(dump).entries:
        got = httpx.get(entry.loc)
        if got.status_code != 200:
            return False
        assert entry.md is not None and entry.md.hash is not None
        assert hashlib.md5(got.content).hexdigest() == entry.md.hash.get("md5")
    return True


def test_a_cached_old_resource_dump_finds_its_packages_for_the_documents_cache_lifetime(
        tmp_path: Path) -> None:
    root, out = tmp_path / "bucket", tmp_path / "published"
    for number in range(4):
        write(root, f"{number}.txt", b"first %d" % number)
    lifetime = timedelta(minutes=10)
    with SourceServer(max_lifetime=300) as web:
        publishing = Publishing(web, root, out, size=PackageSize(entries=2),
                                resource_dump=True, documents_max_age=lifetime)
        lines: list[str] = []

        def run(when: datetime) -> None:
            publish(publishing.publication, walk_directory(root), when, LocalBucket(root),
                    now=when, log=lines.append)
            for directory in publishing.served:
                directory.refresh()

        run(START)
        cached = (out / "resourcedump.xml").read_bytes()  # as a cache in front keeps it
        for number in range(4):  # every object changed: a compaction, and a new dump
            write(root, f"{number}.txt", b"second %d" % number)
        replaced = START + timedelta(hours=1)
        run(replaced)
        current = (out / "resourcedump.xml").read_bytes()
        assert current != cached
        md = read_document(current).head.md
        assert md is not None and md.at is not None and md.completed is not None
        assert replaced <= md.at <= md.completed < replaced + timedelta(minutes=1)
        assert resolves(web, cached) and resolves(web, current)
        run(replaced + lifetime)  # a quiet run, as long after as a cache may keep it
        assert resolves(web, cached)
        assert any("kept until" in line for line in lines)
        run(replaced + lifetime + timedelta(minutes=2))  # and a minute of clock skew after
        assert not resolves(web, cached)
        assert resolves(web, current)
        assert sorted(path.name for path in (out / "resourcedump").glob("*.zip")) == [
            entry.loc.rpartition("/")[2] for entry in read_document(current).entries]
