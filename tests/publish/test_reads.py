"""Objects read ahead while packages are written (issue 28, item 1), on moto's S3 over HTTP:
packages byte for byte the same at any concurrency, reads that overlap behind a store 50 ms
away, the bytes held in memory within their bound, a refused object named with its bucket and
key, one failing for a while tried again (and named with its tries when it keeps failing), and
progress lines with the total and the time left."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
import urllib3.exceptions
from botocore.awsrequest import AWSResponse
from botocore.config import Config

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.errors import InvalidValueError, InventoryError
from airflow_provider_resourcesync.protocol.model import Change
from airflow_provider_resourcesync.publish.bucket import LocalBucket, S3Bucket
from airflow_provider_resourcesync.publish.packages import (
    PackageSize,
    Planned,
    cut,
    to_read,
    write_packages,
)
from airflow_provider_resourcesync.publish.reads import WHOLE, ReadAhead, checked_concurrency
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.testing.delay import DelayingProxy

from .test_packages import CAPABILITY_LIST, END, SERVED, START

FAST = ClientPolicy(backoff=0.01, max_tries=3)
_runs = itertools.count()


def put(s3_client: Any, bucket: str, count: int, size: int = 4096) -> list[Planned]:
    """``count`` objects of about ``size`` bytes, as changes of a run."""
    planned = []
    for number in range(count):
        key = f"docs/{number:03d}.txt"
        body = (b"%03d " % number) * ((size + number) // 4)
        s3_client.put_object(Bucket=bucket, Key=key, Body=body)
        planned.append(Planned(key, SERVED + key, Change.CREATED,
                               START + timedelta(minutes=number + 1), len(body)))
    return planned


def packaged(bucket: S3Bucket | LocalBucket, planned: list[Planned], out: Path,
             concurrency: int, **options: Any) -> tuple[dict[str, bytes], ReadAhead]:
    """Every file the packages of ``planned`` are (zips and manifest copies), by name, and the
    reader that read them."""
    destination = LocalDestination(out)
    with ReadAhead(bucket, concurrency, **options) as reading:
        packages = list(write_packages(
            reading.groups(cut(planned, PackageSize(entries=7), START, END), to_read), reading,
            destination, "dumps/", destination.object_url, CAPABILITY_LIST, ("md5",)))
    assert packages
    return {path.name: path.read_bytes() for path in sorted((out / "dumps").iterdir())}, reading


def test_packages_are_byte_for_byte_the_same_read_one_at_a_time_or_sixteen(
        s3_client: Any, bucket: str, tmp_path: Path) -> None:
    planned = put(s3_client, bucket, 30)
    planned[5] = Planned("docs/gone.txt", SERVED + "docs/gone.txt", Change.DELETED,
                         planned[5].when)
    s3_client.delete_object(Bucket=bucket, Key="docs/009.txt")  # gone since the inventory
    s3_client.put_object(Bucket=bucket, Key="docs/012.txt", Body=b"x" * (WHOLE + 10))
    objects = S3Bucket(s3_client, bucket)
    alone, one = packaged(objects, planned, tmp_path / "one", 1)
    together, sixteen = packaged(objects, planned, tmp_path / "sixteen", 16)
    assert together == alone and len(alone) == 10  # 5 packages, each with its manifest copy
    assert one.peak == 0 < sixteen.peak <= 32 * WHOLE  # read whole ahead, one at a time not
    assert sixteen.held == 0  # all let go


def test_reads_overlap_behind_a_store_far_away_and_none_is_read_twice(
        s3_endpoint: str, s3_client: Any, bucket: str, tmp_path: Path) -> None:
    planned = put(s3_client, bucket, 24)
    host, port = s3_endpoint.removeprefix("http://").split(":")
    with DelayingProxy(host, int(port), 0.05) as proxy:
        far = boto3.client("s3", endpoint_url=proxy.url, aws_access_key_id="test",
                           aws_secret_access_key="test", region_name="us-east-1",
                           config=Config(max_pool_connections=32))
        peaks = {}
        for concurrency in (1, 8):
            proxy.reset()
            packaged(S3Bucket(far, bucket), planned, tmp_path / str(concurrency), concurrency)
            assert proxy.requests == len(planned)  # one GetObject each
            peaks[concurrency] = proxy.peak
    assert peaks[1] == 1 and peaks[8] >= 4  # eight at once, less what starts up late


def test_bytes_held_stay_within_their_bound_and_the_packages_do_not_change(
        s3_client: Any, bucket: str, tmp_path: Path) -> None:
    planned = put(s3_client, bucket, 20)
    objects = S3Bucket(s3_client, bucket)
    bound = 3 * 4200
    alone, _ = packaged(objects, planned, tmp_path / "one", 1)
    bounded, reading = packaged(objects, planned, tmp_path / "bounded", 8, max_bytes=bound)
    assert bounded == alone
    assert 0 < reading.peak <= bound and reading.held == 0


def test_an_object_refused_is_named_with_its_bucket_and_key_on_one_line(
        s3_client: Any, bucket: str, tmp_path: Path) -> None:
    planned = put(s3_client, bucket, 12)
    body = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
            b"<Message>Access Denied</Message></Error>")

    def refuse(request: Any, **_: Any) -> AWSResponse | None:
        if not request.url.endswith("/docs/007.txt"):
            return None
        return AWSResponse(request.url, 403, {"Content-Type": "application/xml"}, _Raw(body))

    with answering(s3_client, refuse), pytest.raises(InventoryError) as caught:
        packaged(S3Bucket(s3_client, bucket), planned, tmp_path / "out", 8, policy=FAST)
    message = str(caught.value)
    assert f"s3://{bucket}/ key 'docs/007.txt': s3:GetObject failed: AccessDenied" in message
    assert "\n" not in message and "tries" not in message  # a refusal is not tried again


@pytest.mark.parametrize("failures", [2, 3])
def test_a_read_broken_for_a_while_is_tried_again_and_named_with_its_tries(
        s3_client: Any, bucket: str, tmp_path: Path, failures: int) -> None:
    planned = put(s3_client, bucket, 10)
    alone, _ = packaged(S3Bucket(s3_client, bucket), planned, tmp_path / "one", 1)
    tries = []

    def break_off(request: Any, **_: Any) -> AWSResponse | None:
        if not request.url.endswith("/docs/004.txt"):
            return None
        tries.append(request.url)
        if len(tries) > failures:
            return None
        return AWSResponse(request.url, 200, {"Content-Length": "4096", "ETag": '"e"',
                                              "Last-Modified": "Thu, 01 Jan 2026 00:00:00 GMT"},
                           _Broken())

    with answering(s3_client, break_off):
        if failures < FAST.max_tries:
            again, _ = packaged(S3Bucket(s3_client, bucket), planned, tmp_path / "again", 8,
                                policy=FAST)
            assert again == alone and len(tries) == failures + 1
            return
        with pytest.raises(InventoryError) as caught:
            packaged(S3Bucket(s3_client, bucket), planned, tmp_path / "again", 8, policy=FAST)
    message = str(caught.value)
    assert f"s3://{bucket}/ key 'docs/004.txt': s3:GetObject failed" in message
    assert message.endswith("(after 3 tries)") and caught.value.rerun_helps


def test_progress_lines_say_how_many_of_how_many_and_the_time_left(tmp_path: Path) -> None:
    root = tmp_path / "bucket"
    root.mkdir()
    planned = []
    for number in range(4):
        (root / f"{number}.txt").write_bytes(b"x" * 1024)
        planned.append(Planned(f"{number}.txt", f"{SERVED}{number}.txt", Change.CREATED,
                               START + timedelta(minutes=number + 1), 1024))
    lines: list[str] = []
    ticks = itertools.count(step=31.0)
    packaged(LocalBucket(root), planned, tmp_path / "out", 4, log=lines.append, total=4,
             clock=lambda: next(ticks))
    assert lines[0] == ("Progress: 1 of 4 objects read done in 31 s (0.0/s, 33 B/s, "
                        "about 93 s left)")
    assert lines[-1].startswith("Progress: 4 of 4 objects read done in 124 s")


@pytest.mark.parametrize("wrong", [0, 257, True, 1.5])
def test_a_concurrency_out_of_bounds_is_refused(wrong: Any) -> None:
    with pytest.raises(InvalidValueError, match="concurrency"):
        checked_concurrency(wrong)


@contextmanager
def answering(s3_client: Any, answer: Callable[..., AWSResponse | None]) -> Iterator[None]:
    """GetObject answered by ``answer`` where it answers (None: by the server) in the block."""
    s3_client.meta.events.register("before-send.s3.GetObject", answer)
    try:
        yield
    finally:
        s3_client.meta.events.unregister("before-send.s3.GetObject", answer)


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self) -> list[bytes]:
        return [self.body]


class _Broken:
    """A body that breaks off: a connection dropped mid-transfer."""

    def read(self, *_: Any, **__: Any) -> bytes:
        raise urllib3.exceptions.ProtocolError("Connection broken: IncompleteRead")

    def stream(self, *_: Any, **__: Any) -> Any:
        raise urllib3.exceptions.ProtocolError("Connection broken: IncompleteRead")

    def close(self) -> None:
        pass
