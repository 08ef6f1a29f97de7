"""What a published resource's ``lastmod`` is (issue 27): the object's LastModified as the
inventory gives it, S3's own time, to the second in a report. Changes sharing a second are
dated a microsecond apart so that packages can be cut between any two (13.2): that is the
change's ``datetime``, never its ``lastmod``; the first run, which has no changes, invented
``.000001Z``, ``.000002Z`` lastmods for objects of one second."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.publish.bucket import LocalBucket, S3Bucket
from airflow_provider_resourcesync.publish.inventory import (
    InventoryObject,
    S3ReportReader,
    list_bucket,
    read_report,
    walk_directory,
)
from airflow_provider_resourcesync.publish.run import Publication, publish
from airflow_provider_resourcesync.storage.local import LocalDestination

from .reports import s3_put, write_report

T1 = datetime(2026, 3, 1, 12, 0, 7, tzinfo=UTC)
T2 = T1 + timedelta(days=1)


def test_lastmod_is_the_inventorys_last_modified_and_change_times_are_dated_apart(
        s3_client: Any, bucket: str, tmp_path: Path) -> None:
    source, reports = bucket, f"{bucket}-inv"
    s3_client.create_bucket(Bucket=reports)
    out = tmp_path / "published"
    publication = Publication(LocalDestination(out), base_url="https://objects.example.org/")

    def run(day: int, modified: datetime) -> None:
        """A report of the bucket (every object written in the second ``modified``)."""
        listed = s3_client.list_objects_v2(Bucket=source)["Contents"]
        manifest = f"cfg/daily/{day}/manifest.json"
        write_report(s3_put(s3_client, reports), [[
            InventoryObject(item["Key"], item["Size"], item["ETag"].strip('"'), modified)
            for item in listed]], manifest_key=manifest, created=modified + timedelta(hours=1),
            bucket=source)
        report = read_report(S3ReportReader(s3_client, reports), manifest, bucket=source)
        publish(publication, report.ordered(), report.created, S3Bucket(s3_client, source))

    for key in ("a.txt", "b.txt", "c.txt"):
        s3_client.put_object(Bucket=source, Key=key, Body=key.encode())
    run(1, T1)
    listed = read_document((out / "resourcelist.xml").read_bytes()).entries
    assert [entry.lastmod for entry in listed] == [T1] * 3
    for key in ("a.txt", "b.txt"):
        s3_client.put_object(Bucket=source, Key=key, Body=b"v2")
    run(2, T2)
    (manifest,) = out.glob("packages/*-manifest.xml")
    (changes,) = out.glob("changes/*.xml")
    for document in (manifest, changes):
        entries = read_document(document.read_bytes()).entries
        assert [entry.lastmod for entry in entries] == [T2, T2], document.name
        assert [entry.md.datetime for entry in entries if entry.md] == [
            T2, T2 + timedelta(microseconds=1)], document.name


def test_a_packaged_objects_type_is_the_content_type_s3_serves_it_with(
        s3_client: Any, bucket: str, tmp_path: Path) -> None:
    """Not a guess from its name: a ``.json`` key stored as text/plain is described so."""
    out = tmp_path / "published"
    publication = Publication(LocalDestination(out), base_url="https://objects.example.org/")
    s3_client.put_object(Bucket=bucket, Key="first.txt", Body=b"1")
    publish(publication, list_bucket(s3_client, bucket), T1, S3Bucket(s3_client, bucket))
    s3_client.put_object(Bucket=bucket, Key="data.json", Body=b"{}",
                         ContentType="text/plain; charset=utf-8")
    s3_client.put_object(Bucket=bucket, Key="noname", Body=b"x")
    publish(publication, list_bucket(s3_client, bucket), datetime.now(UTC),
            S3Bucket(s3_client, bucket))
    (manifest,) = out.glob("packages/*-manifest.xml")
    assert {entry.loc.rsplit("/", 1)[1]: entry.md.type
            for entry in read_document(manifest.read_bytes()).entries if entry.md} == {
        "data.json": "text/plain; charset=utf-8", "noname": "binary/octet-stream"}


def test_a_first_runs_type_is_the_buckets_where_known_unread_and_never_a_guess(
        s3_client: Any, bucket: str, tmp_path: Path) -> None:
    """A first run reads nothing: an S3 object's Content-Type is its own (a ``.json`` key may
    be stored as text/plain), so its Resource List entry carries no type rather than a guess
    from the name (issue 27); a file's type is what a server of the folder gives it, by name."""
    s3_client.put_object(Bucket=bucket, Key="data.json", Body=b"{}",
                         ContentType="text/plain; charset=utf-8")
    on_s3 = tmp_path / "from-s3"
    publish(Publication(LocalDestination(on_s3), base_url="https://objects.example.org/"),
            list_bucket(s3_client, bucket), T1, S3Bucket(s3_client, bucket))
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "data.json").write_bytes(b"{}")
    from_folder = tmp_path / "from-folder"
    publish(Publication(LocalDestination(from_folder), base_url="https://files.example.org/"),
            walk_directory(folder), T1, LocalBucket(folder))
    types = [{entry.loc.rsplit("/", 1)[1]: entry.md.type if entry.md else None
              for entry in read_document((out / "resourcelist.xml").read_bytes()).entries}
             for out in (on_s3, from_folder)]
    assert types == [{"data.json": None}, {"data.json": "application/json"}]
