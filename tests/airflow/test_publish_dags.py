"""The publishing example DAG in real runs, day after day, with a Destination's DAGs following the
publication over HTTP: ``mirror_to_local`` once, then ``incremental_mirror`` by Change Dump and by
Change List; after each day the mirror equals the directory published (issue 15, items 6, 7)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from airflow_provider_resourcesync.compat import BaseOperator
from airflow_provider_resourcesync.demo_publish import run_publish_demo
from airflow_provider_resourcesync.operators.baseline import ResourceSyncBaselineOperator
from airflow_provider_resourcesync.operators.incremental import ResourceSyncIncrementalOperator
from airflow_provider_resourcesync.protocol.validate import has_errors, validate_source
from airflow_provider_resourcesync.publish.inventory import InventoryObject
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination
from airflow_provider_resourcesync.testing import ServedDirectory, SourceServer
from tests.publish.reports import s3_put, write_report
from tests.publish.test_publish_run import write
from tests.sync.conftest import held

from .conftest import AWS_CONN_ID
from .runs import HOURLY, asset_events, error_lines, run_dag, run_example, states, xcom

DAY = timedelta(days=1)
FIRST = datetime(2026, 3, 1, tzinfo=UTC)


def test_a_directory_published_daily_is_followed_by_a_destinations_dags(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    root, published, mirror = tmp_path / "collection", tmp_path / "published", tmp_path / "mirror"
    for number in range(4):
        write(root, f"records/{number}.json", f'{{"id": {number}}}\n'.encode())
    with SourceServer(max_lifetime=600) as web:
        for name, value in {"RESOURCESYNC_PUBLISH_DIR": str(root),
                            "RESOURCESYNC_PUBLISHED_DIR": str(published),
                            "RESOURCESYNC_PUBLISH_BASE_URL": web.url("/collection/"),
                            "RESOURCESYNC_PUBLISH_URL": web.url("/published/"),
                            "RESOURCESYNC_MIRROR_DIR": str(mirror),
                            "RESOURCESYNC_PUBLISH_CHECK_CONN_ID": "resourcesync_default"}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("AIRFLOW_CONN_RESOURCESYNC_DEFAULT", json.dumps({
            "conn_type": "resourcesync", "host": web.url("/published/"),
            "extra": {"allow_private": True, "max_tries": 2, "backoff": 0.01}}))
        served = ServedDirectory(web, root, "/collection/"), ServedDirectory(web, published,
                                                                             "/published/")

        def publish_day(day: int) -> dict[str, object]:
            served[0].refresh()  # the files as the run's URL checks find them
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
            assert states(run) == HOURLY, method
            assert held(LocalDestination(mirror)) == served[0].files(), method
    assert error_lines(capfd.readouterr().out) == []  # first runs too (issue 29, item 4)


def inventoried(s3_client: Any, bucket: str) -> list[InventoryObject]:
    """The objects of ``bucket`` as an S3 Inventory report lists them (ETag without quotes)."""
    listed = s3_client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return [InventoryObject(item["Key"], item["Size"], item["ETag"].strip('"'),
                            item["LastModified"]) for item in listed]


def test_a_bucket_published_daily_is_followed_over_http_by_change_dump_and_by_change_list(
        s3_client: Any, s3_endpoint: str, bucket: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """``publish_bucket`` against moto's S3 server, its objects and its publication served by
    moto over HTTP (buckets anyone may GET from): each day the sensor finds the day's S3
    Inventory report and the publisher publishes, with a Resource Dump; a Destination's DAG
    baselines one mirror from the Resource Dump and one from the Resource List, then follows by
    Change Dump and by Change List; after three days of changes (created, updated, deleted, keys
    that need percent-encoding) both mirrors equal the bucket, and every document validates."""
    source, inventory, target = f"{bucket}-src", f"{bucket}-inv", f"{bucket}-pub"
    for name in (source, inventory, target):
        s3_client.create_bucket(Bucket=name)
    for name in (source, target):
        s3_client.put_bucket_policy(Bucket=name, Policy=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                "Resource": f"arn:aws:s3:::{name}/*"}]}))
    base_url, publish_url = f"{s3_endpoint}/{source}/", f"{s3_endpoint}/{target}/rs/"
    for name, value in {"RESOURCESYNC_PUBLISH_S3_SOURCE": f"s3://{source}/",
                        "RESOURCESYNC_INVENTORY_S3_URL": f"s3://{inventory}/cfg/daily/",
                        "RESOURCESYNC_PUBLISH_S3_URL": f"s3://{target}/rs/",
                        "RESOURCESYNC_PUBLISH_BASE_URL": base_url,
                        "RESOURCESYNC_PUBLISH_URL": publish_url,
                        "RESOURCESYNC_PUBLISH_RESOURCE_DUMP": "true",
                        "RESOURCESYNC_PUBLISH_CHECK_CONN_ID": "resourcesync_default",
                        "RESOURCESYNC_AWS_CONN_ID": AWS_CONN_ID}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AIRFLOW_CONN_RESOURCESYNC_DEFAULT", json.dumps({
        "conn_type": "resourcesync", "host": publish_url,
        "extra": {"allow_private": True, "max_tries": 2, "backoff": 0.01}}))
    capability_list = publish_url + "capabilitylist.xml"
    mirrors = {method: tmp_path / method for method in ("changedump", "changelist")}
    capfd.readouterr()

    def put(key: str, body: bytes) -> None:
        s3_client.put_object(Bucket=source, Key=key, Body=body)

    def gone(key: str) -> None:
        s3_client.delete_object(Bucket=source, Key=key)

    def publish_day(number: int) -> None:
        when = FIRST + number * DAY
        write_report(s3_put(s3_client, inventory), [inventoried(s3_client, source)],
                     manifest_key=f"cfg/daily/{when:%Y-%m-%d}T01-00Z/manifest.json",
                     created=when + timedelta(hours=1), bucket=source)
        run = run_example("publish_bucket", when)
        assert states(run) == {"report": "success", "manifest": "success",
                               "publish": "success"}
        assert xcom(run, "publish")["left"] == []

    def in_bucket() -> dict[str, bytes]:
        return {base_url + quote(item.key, safe="/"): s3_client.get_object(
            Bucket=source, Key=item.key)["Body"].read()
            for item in inventoried(s3_client, source)}

    def follow(operator: type[BaseOperator], methods: dict[str, str]) -> Any:
        run = run_dag(f"follow_bucket_{operator.__name__}", lambda: [operator(
            task_id=method, destination=str(mirrors[method]),
            capability_list_url=capability_list, method=methods[method]) for method in mirrors])
        assert states(run) == dict.fromkeys(mirrors, "success")
        for method, directory in mirrors.items():
            assert held(LocalDestination(directory)) == in_bucket(), method
        return run

    for number in range(3):
        put(f"data/{number}.txt", b"v1 %d" % number)
    put("a b/é%+.txt", b"a key that needs percent-encoding")
    publish_day(0)
    baselines = follow(ResourceSyncBaselineOperator,
                       {"changedump": "resourcedump", "changelist": "resourcelist"})
    assert xcom(baselines, "changedump")["document"] == publish_url + "resourcedump.xml"
    days = [
        lambda: (put("data/0.txt", b"v2 0"), put("new/ü &.txt", b"new"), gone("data/2.txt")),
        lambda: (put("a b/é%+.txt", b"changed"), gone("new/ü &.txt"), put("data/3.txt", b"3")),
        lambda: (put("data/1.txt", b"v2 1"), put("data/3.txt", b"v2 3"), gone("a b/é%+.txt")),
    ]
    for number, change in enumerate(days, start=1):
        change()
        publish_day(number)
        run = follow(ResourceSyncIncrementalOperator, {method: method for method in mirrors})
        for method in mirrors:  # each mirror followed its own document, and took changes
            followed = xcom(run, method)
            assert followed["document"] == publish_url + f"{method}.xml", number
            assert followed["stats"]["changes"] >= 3, (number, followed["stats"])
    published = S3Destination(s3_client, target, "rs/")
    documents = [key for key in published.keys("") if key.endswith(".xml")]
    assert "resourcedump.xml" in documents and "changedump.xml" in documents
    for key in documents:
        body = published.read_bytes(key) or b""
        assert not has_errors(validate_source(io.BytesIO(body), url=key)), key
    # served for a cache in front to keep the operator's default five minutes (issue 28)
    assert httpx.get(capability_list).headers["cache-control"] == "public, max-age=300"
    assert error_lines(capfd.readouterr().out) == []


def test_the_publishing_demo_publishes_follows_and_ends_with_the_mirror_equal(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The README's second command, in the test session's Airflow: publish, follow, change,
    publish and follow by Change Dump; the mirror equals the directory; no ERROR line."""
    capfd.readouterr()
    assert run_publish_demo(tmp_path, log=False)
    assert error_lines(capfd.readouterr().out) == []
    assert (tmp_path / "published" / "changedump.xml").is_file()
    assert not (tmp_path / "collection" / "records" / "record-001.json").exists()
    assert any((tmp_path / "mirror").rglob("record-new.json"))
