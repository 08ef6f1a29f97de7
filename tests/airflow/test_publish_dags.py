"""The publishing example DAG in real runs, day after day, with a Destination's DAGs following the
publication over HTTP: ``mirror_to_local`` once, then ``incremental_mirror`` by Change Dump and by
Change List; after each day the mirror equals the directory published (issue 15, items 6, 7)."""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.demo_publish import run_publish_demo
from airflow_provider_resourcesync.protocol.model import Change
from airflow_provider_resourcesync.protocol.package import open_package
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.publish.inventory import InventoryObject
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination
from airflow_provider_resourcesync.testing import ServedDirectory, SourceServer
from tests.publish.reports import s3_put, write_report
from tests.publish.test_publish_run import write
from tests.sync.conftest import held

from .conftest import AWS_CONN_ID
from .runs import asset_events, run_example, states, xcom

DAY = timedelta(days=1)
FIRST = datetime(2026, 3, 1, tzinfo=UTC)


def test_a_directory_published_daily_is_followed_by_a_destinations_dags(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, published, mirror = tmp_path / "collection", tmp_path / "published", tmp_path / "mirror"
    for number in range(4):
        write(root, f"records/{number}.json", f'{{"id": {number}}}\n'.encode())
    with SourceServer(max_lifetime=600) as web:
        for name, value in {"RESOURCESYNC_PUBLISH_DIR": str(root),
                            "RESOURCESYNC_PUBLISHED_DIR": str(published),
                            "RESOURCESYNC_PUBLISH_BASE_URL": web.url("/collection/"),
                            "RESOURCESYNC_PUBLISH_URL": web.url("/published/"),
                            "RESOURCESYNC_MIRROR_DIR": str(mirror)}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("AIRFLOW_CONN_RESOURCESYNC_DEFAULT", json.dumps({
            "conn_type": "resourcesync", "host": web.url("/published/"),
            "extra": {"allow_private": True, "max_tries": 2, "backoff": 0.01}}))
        served = ServedDirectory(web, root, "/collection/"), ServedDirectory(web, published,
                                                                             "/published/")

        def publish_day(day: int) -> dict[str, object]:
            run = run_example("publish_directory", FIRST + day * DAY)
            assert states(run) == {"publish": "success"}
            for directory in served:
                directory.refresh()
            # served at the host's root, a Destination discovers it there (spec 6.3.2)
            web.put("/.well-known/resourcesync", (published / "description.xml").read_bytes(),
                    "application/xml")
            assert [uri for uri, _ in asset_events(run)] == [published.as_uri()]
            checkpoint: dict[str, object] = xcom(run, "publish")
            return checkpoint

        first = publish_day(0)
        assert first["left"] == [] and first["version"] == 1
        assert run_example("mirror_to_local").state == "success"
        assert held(LocalDestination(mirror)) == served[0].files()
        days = [
            ("changedump", lambda: (write(root, "records/0.json", b'{"id": 0, "v": 2}\n'),
                                    write(root, "records/new.json", b"{}\n"),
                                    (root / "records" / "3.json").unlink())),
            ("changelist", lambda: (write(root, "records/1.json", b'{"id": 1, "v": 2}\n'),
                                    (root / "records" / "new.json").unlink())),
        ]
        for day, (method, change) in enumerate(days, start=1):
            change()
            checkpoint = publish_day(day)
            assert checkpoint["time"] != first["time"]
            monkeypatch.setenv("RESOURCESYNC_CHANGES_FROM", method)
            run = run_example("incremental_mirror", FIRST + day * DAY)
            assert states(run) == {"changes": "success", "sync": "success"}, method
            assert held(LocalDestination(mirror)) == served[0].files(), method


def inventoried(s3_client: Any, bucket: str) -> list[InventoryObject]:
    """The objects of ``bucket`` as an S3 Inventory report lists them (ETag without quotes)."""
    listed = s3_client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return [InventoryObject(item["Key"], item["Size"], item["ETag"].strip('"'),
                            item["LastModified"]) for item in listed]


def test_a_bucket_is_published_daily_from_its_s3_inventory_reports(
        s3_client: Any, bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``publish_bucket`` against moto's S3 server: the sensor finds the day's report, the
    publisher reads it and the objects, and writes the publication to S3; the second day's
    Change Dump package holds the day's changes, read back by our reader."""
    source, inventory, target = f"{bucket}-src", f"{bucket}-inv", f"{bucket}-pub"
    for name in (source, inventory, target):
        s3_client.create_bucket(Bucket=name)
    for number in range(3):
        s3_client.put_object(Bucket=source, Key=f"data/{number}.txt", Body=b"v1 %d" % number)
    for name, value in {"RESOURCESYNC_PUBLISH_S3_SOURCE": f"s3://{source}/",
                        "RESOURCESYNC_INVENTORY_S3_URL": f"s3://{inventory}/cfg/daily/",
                        "RESOURCESYNC_PUBLISH_S3_URL": f"s3://{target}/rs/",
                        "RESOURCESYNC_PUBLISH_BASE_URL": "https://data.example.org/",
                        "RESOURCESYNC_PUBLISH_URL": "https://data.example.org/rs/",
                        "RESOURCESYNC_AWS_CONN_ID": AWS_CONN_ID}.items():
        monkeypatch.setenv(name, value)
    published = S3Destination(s3_client, target, "rs/")

    def day(number: int) -> Any:
        when = FIRST + number * DAY
        write_report(s3_put(s3_client, inventory), [inventoried(s3_client, source)],
                     manifest_key=f"cfg/daily/{when:%Y-%m-%d}T01-00Z/manifest.json",
                     created=when + timedelta(hours=1))
        run = run_example("publish_bucket", when)
        assert states(run) == {"report": "success", "manifest": "success",
                               "publish": "success"}
        return xcom(run, "publish")

    day(0)
    listed = read_document(published.read_bytes("resourcelist.xml") or b"").entries
    assert [entry.loc for entry in listed] == [f"https://data.example.org/data/{n}.txt"
                                               for n in range(3)]
    s3_client.put_object(Bucket=source, Key="data/0.txt", Body=b"v2 0")
    s3_client.put_object(Bucket=source, Key="data/new.txt", Body=b"new")
    s3_client.delete_object(Bucket=source, Key="data/2.txt")
    assert day(1)["left"] == []
    dumps = read_document(published.read_bytes("changedump.xml") or b"").entries
    (package,) = read_document(published.read_bytes(
        "changedumps/" + dumps[0].loc.rpartition("/")[2]) or b"").entries
    with tempfile.TemporaryFile() as file:
        file.write(published.read_bytes("packages/" + package.loc.rpartition("/")[2]) or b"")
        with open_package(file, url=package.loc) as opened:
            changes = {entry.loc.rpartition("/")[2]: entry for entry in opened.manifest.entries}
            assert {name: entry.change for name, entry in changes.items()} == {
                "0.txt": Change.UPDATED, "new.txt": Change.CREATED, "2.txt": Change.DELETED}
            with opened.open(changes["0.txt"].md.path) as member:  # type: ignore[union-attr]
                assert member.read() == b"v2 0"


def test_the_publishing_demo_publishes_follows_and_ends_with_the_mirror_equal(
        tmp_path: Path) -> None:
    """The README's second command, in the test session's Airflow: publish, follow, change,
    publish and follow by Change Dump; the mirror equals the directory."""
    assert run_publish_demo(tmp_path, log=False)
    assert (tmp_path / "published" / "changedump.xml").is_file()
    assert not (tmp_path / "collection" / "records" / "record-001.json").exists()
    assert any((tmp_path / "mirror").rglob("record-new.json"))
