"""The publishing task on S3, against moto's S3 server over HTTP, in real ``dag.test()`` runs
(issue 28, items 4 and 5): three AWS connections, one for the source bucket, one for the
inventory bucket and one for the publication, each used for its own bucket alone; a dry run
that leaves every key of the publication, its bytes and its ETag, as they were."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote

import pytest
from werkzeug.serving import make_server

from airflow_provider_resourcesync.operators.publish import ResourceSyncPublishOperator
from tests.publish.reports import s3_put, write_report

from .conftest import AWS_CONN_ID
from .runs import asset_events, run_dag, states, xcom
from .test_publish_dags import inventoried


class RecordingMoto:
    """moto's S3 on a port of its own, recording the bucket of each request made to it. moto's
    servers in one process share their buckets: which server a request went to says which
    connection made it."""

    def __init__(self) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )

        moto = DomainDispatcherApplication(create_backend_app)
        self.buckets: set[str] = set()

        def recording(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
            self.buckets.add(unquote(environ["PATH_INFO"]).lstrip("/").split("/")[0])
            answer: Iterable[bytes] = moto(environ, start)
            return answer

        self._server = make_server("127.0.0.1", 0, recording, threaded=True,
                                   request_handler=MotoRequestHandler)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._thread.join()


@pytest.fixture
def recording() -> Iterator[list[RecordingMoto]]:
    servers = [RecordingMoto() for _ in range(3)]
    yield servers
    for server in servers:
        server.close()


def aws_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, endpoint: str) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({
        "conn_type": "aws", "login": conn_id, "password": "secret",
        "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"}}))


def test_three_connections_each_reach_only_their_own_bucket(
        s3_client: Any, bucket: str, recording: list[RecordingMoto],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The source's, the report's and the publication's buckets, each reached through a
    connection to a server of its own; ``aws_conn_id`` points at no server at all, so a part
    that fell back to it would fail the run."""
    source, inventory, target = f"{bucket}-src", f"{bucket}-inv", f"{bucket}-pub"
    for name in (source, inventory, target):
        s3_client.create_bucket(Bucket=name)
    for conn_id, server in zip(("src_conn", "inv_conn", "pub_conn"), recording, strict=True):
        aws_connection(monkeypatch, conn_id, server.url)
    aws_connection(monkeypatch, "nowhere", "http://127.0.0.1:9")
    now = datetime.now(UTC).replace(microsecond=0)

    def publish(created: datetime) -> Any:
        stamp = f"{created:%Y-%m-%dT%H-%MZ}"
        write_report(s3_put(s3_client, inventory), [inventoried(s3_client, source)],
                     manifest_key=f"cfg/daily/{stamp}/manifest.json", created=created,
                     bucket=source)
        return run_dag("publish_three_connections", lambda: ResourceSyncPublishOperator(
            task_id="publish", source=f"s3://{source}/",
            inventory=f"s3://{inventory}/cfg/daily/{stamp}/manifest.json",
            publish_to=f"s3://{target}/rs/", base_url="https://objects.example.org/",
            publish_url="https://example.org/rs/", check_urls=0, aws_conn_id="nowhere",
            source_aws_conn_id="src_conn", inventory_aws_conn_id="inv_conn",
            publish_aws_conn_id="pub_conn"))

    for number in range(3):
        s3_client.put_object(Bucket=source, Key=f"data/{number}.txt", Body=b"v1")
    assert states(publish(now - timedelta(hours=2))) == {"publish": "success"}
    s3_client.put_object(Bucket=source, Key="data/0.txt", Body=b"v2")  # read, into a package
    run = publish(now - timedelta(minutes=30))
    assert states(run) == {"publish": "success"}
    assert xcom(run, "publish")["stats"]["packages"] == 1
    assert [server.buckets for server in recording] == [{source}, {inventory}, {target}]


def keys_and_bytes(s3_client: Any, bucket: str) -> dict[str, tuple[bytes, str]]:
    """Every key of ``bucket``, its bytes and its ETag."""
    listed = s3_client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {item["Key"]: (s3_client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read(),
                          item["ETag"]) for item in listed}


def test_a_dry_run_on_s3_leaves_every_key_its_bytes_and_etag_as_they_were(
        s3_client: Any, bucket: str) -> None:
    source, target = f"{bucket}-src", f"{bucket}-pub"
    for name in (source, target):
        s3_client.create_bucket(Bucket=name)
    s3_client.put_object(Bucket=target, Key="elsewhere.txt", Body=b"not ours")
    for number in range(4):
        s3_client.put_object(Bucket=source, Key=f"data/{number}.txt", Body=b"v1")

    def publish(dry_run: bool) -> Any:
        run = run_dag("publish_dry_s3", lambda: ResourceSyncPublishOperator(
            task_id="publish", source=f"s3://{source}/", publish_to=f"s3://{target}/rs/",
            base_url="https://objects.example.org/", publish_url="https://example.org/rs/",
            check_urls=0, aws_conn_id=AWS_CONN_ID, dry_run=dry_run))
        assert states(run) == {"publish": "success"}
        return run

    before = keys_and_bytes(s3_client, target)
    first = publish(dry_run=True)
    assert keys_and_bytes(s3_client, target) == before and asset_events(first) == []
    assert xcom(first, "publish")["stats"]["created"] == 4
    publish(dry_run=False)
    s3_client.put_object(Bucket=source, Key="data/0.txt", Body=b"v2")
    s3_client.delete_object(Bucket=source, Key="data/3.txt")
    before = keys_and_bytes(s3_client, target)
    assert len(before) > 5
    later = xcom(publish(dry_run=True), "publish")
    assert keys_and_bytes(s3_client, target) == before
    assert (later["stats"]["updated"], later["stats"]["deleted"], later["stats"]["packages"],
            later["examples"]["updated"]) == (1, 1, 1, ["data/0.txt"])
    assert s3_client.list_multipart_uploads(Bucket=target).get("Uploads", []) == []
