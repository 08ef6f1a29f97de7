"""The publishing example DAGs run as Airflow 3 triggers them by default, with no logical date
(``airflow dags trigger`` without ``-l``, the REST API with ``"logical_date": null``): no
``ds``, no data interval (issue 27, item 9); and one key no URL can carry is skipped, logged
and counted in the XCom, not fatal (item 8)."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.publish.reports import s3_put, write_report
from tests.publish.test_publish_run import write

from .conftest import AWS_CONN_ID
from .runs import run_example, states, xcom
from .test_publish_dags import inventoried


def test_publish_bucket_triggered_without_a_logical_date_takes_the_days_report(
        s3_client: Any, s3_endpoint: str, bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sensor and the task find the report of the day the run runs."""
    name = f"{bucket}-{uuid.uuid4().hex[:8]}"
    source, inventory, target = f"{name}-src", f"{name}-inv", f"{name}-pub"
    for each in (source, inventory, target):
        s3_client.create_bucket(Bucket=each)
    for key in ("a.txt", "b/c.txt"):
        s3_client.put_object(Bucket=source, Key=key, Body=key.encode())
    now = datetime.now(UTC)
    write_report(s3_put(s3_client, inventory), [inventoried(s3_client, source)],
                 manifest_key=f"cfg/daily/{now:%Y-%m-%d}T01-00Z/manifest.json",
                 created=now - timedelta(minutes=1), bucket=source)
    for variable, value in {"RESOURCESYNC_PUBLISH_S3_SOURCE": f"s3://{source}/",
                            "RESOURCESYNC_INVENTORY_S3_URL": f"s3://{inventory}/cfg/daily/",
                            "RESOURCESYNC_PUBLISH_S3_URL": f"s3://{target}/rs/",
                            "RESOURCESYNC_PUBLISH_BASE_URL": f"{s3_endpoint}/{source}/",
                            "RESOURCESYNC_PUBLISH_CHECK_URLS": "0",  # served nowhere
                            "RESOURCESYNC_AWS_CONN_ID": AWS_CONN_ID}.items():
        monkeypatch.setenv(variable, value)
    run = run_example("publish_bucket")  # no logical date
    assert run.logical_date is None
    assert states(run) == {"report": "success", "manifest": "success", "publish": "success"}
    assert xcom(run, "manifest").startswith(f"s3://{inventory}/cfg/daily/{now:%Y-%m-%d}T")
    assert xcom(run, "publish")["skipped"] == {"count": 0, "examples": []}


def test_publish_directory_without_a_logical_date_skips_a_bad_name_and_counts_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, published = tmp_path / "collection", tmp_path / "published"
    for number in range(99):
        write(root, f"records/{number:02d}.json", b"{}\n")
    with open(os.fsencode(root / "records") + b"/bad\xff.json", "wb") as file:
        file.write(b"{}\n")
    monkeypatch.setenv("RESOURCESYNC_PUBLISH_DIR", str(root))
    monkeypatch.setenv("RESOURCESYNC_PUBLISHED_DIR", str(published))
    monkeypatch.setenv("RESOURCESYNC_PUBLISH_CHECK_URLS", "0")  # served nowhere
    run = run_example("publish_directory")  # no logical date
    assert states(run) == {"publish": "success"}
    done = xcom(run, "publish")
    assert done["skipped"] == {"count": 1, "examples": [
        "'records/bad\\udcff.json' is not valid UTF-8"]}
    assert done["left"] == [] and b"bad" not in (published / "resourcelist.xml").read_bytes()
