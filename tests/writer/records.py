"""Records and changes for the shard index tests (also imported by the child processes that are
killed mid-write), a destination that counts what the index asks of it, one that kills its
process (a child of :func:`tests.killing.run_child`) before a write of the mirror's documents,
and how such a child names and opens a destination."""

from __future__ import annotations

import hashlib
import os
import signal
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import BinaryIO

import boto3

from airflow_provider_resourcesync.protocol.hashes import Hashes, HashValue
from airflow_provider_resourcesync.storage.base import Destination, ObjectInfo, Staged
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination
from airflow_provider_resourcesync.writer import ObjectRecord

from ..killing import report

PREFIX = ".resourcesync/index/"
_START = datetime(2024, 1, 1, tzinfo=UTC)


def uri(number: int) -> str:
    return f"https://example.org/collection/items/{number:07d}.xml"


def record(number: int, version: int = 0) -> ObjectRecord:
    """The record of item ``number``; another ``version`` has another length, hash and lastmod."""
    digest = hashlib.md5(f"{number}/{version}".encode()).hexdigest()
    return ObjectRecord(uri(number), f"https/example.org/collection/items/{number:07d}.xml",
                1_000 + number + version, Hashes((HashValue("md5", digest),)),
                _START + timedelta(seconds=number, minutes=version), "application/xml")


def records(count: int) -> Iterator[ObjectRecord]:
    return (record(number) for number in range(count))


def changes(size: int) -> list[tuple[str, ObjectRecord | None]]:
    """Ten changes to an index of ``size`` records: seven updates, two removals, one create."""
    step = size // 10
    updated = [(uri(n), record(n, 1)) for n in range(step // 2, size, step)][:7]
    removed: list[tuple[str, ObjectRecord | None]] = [(uri(n), None) for n in (1, size - 2)]
    return [*updated, *removed, (uri(size + 1), record(size + 1))]


class Counting(Destination):
    """``inner``, counting the calls made to it and the bytes read and written."""

    def __init__(self, inner: Destination) -> None:
        self.inner = inner
        self.url = inner.url
        self.calls: Counter[str] = Counter()
        self.read = self.written = 0

    def reset(self) -> None:
        self.calls.clear()
        self.read = self.written = 0

    def read_bytes(self, key: str) -> bytes | None:
        self.calls["read_bytes"] += 1
        data = self.inner.read_bytes(key)
        self.read += len(data or b"")
        return data

    def write_bytes(self, key: str, data: bytes, content_type: str, *,
                    cache_control: str | None = None) -> None:
        self.calls["write_bytes"] += 1
        self.written += len(data)
        self.inner.write_bytes(key, data, content_type, cache_control=cache_control)

    def keys(self, prefix: str = "") -> Iterator[str]:
        self.calls["keys"] += 1
        return self.inner.keys(prefix)

    def delete(self, key: str) -> None:
        self.calls["delete"] += 1
        self.inner.delete(key)

    def exists(self, key: str) -> bool:
        self.calls["exists"] += 1
        return self.inner.exists(key)

    def open(self, key: str) -> BinaryIO:
        self.calls["open"] += 1
        return self.inner.open(key)

    def info(self, key: str) -> ObjectInfo | None:
        self.calls["info"] += 1
        return self.inner.info(key)

    def stage(self, key: str) -> Staged:
        self.calls["stage"] += 1
        return self.inner.stage(key)

    def move(self, key: str, to_key: str) -> None:
        self.calls["move"] += 1
        self.inner.move(key, to_key)

    def object_url(self, key: str) -> str:
        return self.inner.object_url(key)


def kill_before_write(destination: Destination, kill_at: int, *, deletes: bool = False,
                      under: str = RESERVED_PREFIX) -> None:
    """Make ``destination`` kill its process (SIGKILL) just before its ``kill_at``-th write
    of a key starting with ``under`` (by default, under the mirror's folder: a staged
    document's commit or a whole write; with ``deletes``, a deletion too), after reporting the
    key it was about to write to the parent."""
    writes = 0

    def step(key: str) -> None:
        nonlocal writes
        if key.startswith(under):
            writes += 1
            if writes == kill_at:
                report(key)
                os.kill(os.getpid(), signal.SIGKILL)

    real_stage, real_write = destination.stage, destination.write_bytes

    def stage(key: str) -> Staged:
        staged = real_stage(key)
        commit = staged.commit
        staged.commit = lambda info: (step(key), commit(info))  # type: ignore[method-assign]
        return staged

    def write_bytes(key: str, data: bytes, kind: str, *, cache_control: str | None = None
                    ) -> None:
        step(key)
        real_write(key, data, kind, cache_control=cache_control)

    destination.stage = stage  # type: ignore[method-assign]
    destination.write_bytes = write_bytes  # type: ignore[method-assign]
    if deletes:
        real_delete = destination.delete

        def delete(key: str) -> None:
            step(key)
            real_delete(key)

        destination.delete = delete  # type: ignore[method-assign]


def named(destination: Destination) -> str:
    """How a child process names ``destination`` (:func:`opened`): its directory, or
    ``s3://bucket/prefix/``."""
    if isinstance(destination, S3Destination):
        return f"s3://{destination.bucket}/{destination.prefix}"
    assert isinstance(destination, LocalDestination)
    return str(destination.root)


def opened(name: str, endpoint: str = "") -> Destination:
    """The destination :func:`named` names: on local disk, or on the S3 server at ``endpoint``
    (moto's)."""
    if not name.startswith("s3://"):
        return LocalDestination(name)
    bucket, _, prefix = name.removeprefix("s3://").partition("/")
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
    return S3Destination(client, bucket, prefix)
