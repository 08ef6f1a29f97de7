"""Where a Source under test keeps its documents, and how they are served to its followers: a
local directory served by a loopback :class:`SourceServer`, or a prefix of a bucket on moto's S3
server, served by moto itself over HTTP (anyone may GET from it)."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination
from airflow_provider_resourcesync.testing import SourceServer
from tests.sync.test_republish import publish


class Store(ABC):
    """A destination the Source writes to, served under :attr:`url`."""

    #: Where the destination's keys are served (ending with ``/``).
    url: str
    #: A handle the store reads with.
    _reader: Destination

    @abstractmethod
    def destination(self) -> Destination:
        """A new handle on the destination (a run given it may be killed with it)."""

    @abstractmethod
    def refresh(self) -> None:
        """Serve the destination as it is now (after a run)."""

    @abstractmethod
    def listing(self, prefix: str) -> dict[str, str]:
        """Every key under ``prefix`` (the reserved folder included), with a token that changes
        when its bytes do (and may when they do not)."""

    def read(self, key: str) -> bytes:
        data = self._reader.read_bytes(key)
        assert data is not None, key
        return data

    def url_of(self, key: str) -> str:
        return self.url + quote(key, safe="/")

    def key_of(self, url: str) -> str | None:
        """The key ``url`` is served from; None if it is not under :attr:`url`."""
        return unquote(url.removeprefix(self.url)) if url.startswith(self.url) else None


class LocalStore(Store):
    """A directory, served at ``prefix`` of ``web`` as it is at each :meth:`refresh`, each
    object with the type the destination describes it with
    (:func:`tests.sync.test_republish.publish`)."""

    def __init__(self, root: Path, web: SourceServer, prefix: str) -> None:
        self.root = root
        self.url = web.url(prefix)
        self._reader = LocalDestination(root)
        self._web, self._prefix = web, prefix
        self._served: set[str] = set()

    def refresh(self) -> None:
        self._served = publish(self._reader, self._web, self._prefix, self._served)

    def destination(self) -> Destination:
        return LocalDestination(self.root)

    def listing(self, prefix: str) -> dict[str, str]:
        stats = {key: (self.root / key).stat() for key in self._reader.keys(prefix)}
        return {key: f"{stat.st_size}-{stat.st_mtime_ns}" for key, stat in stats.items()}


class S3Store(Store):
    """``prefix`` of ``bucket`` on the S3 server at ``endpoint``, which serves it over HTTP."""

    def __init__(self, client: Any, endpoint: str, bucket: str, prefix: str) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix
        self.url = f"{endpoint}/{bucket}/{prefix}"
        public(client, bucket)
        self._reader = self.destination()

    def destination(self) -> Destination:
        return S3Destination(self.client, self.bucket, self.prefix)

    def refresh(self) -> None:
        """moto serves the bucket as it is."""

    def listing(self, prefix: str) -> dict[str, str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix + prefix)
        return {item["Key"].removeprefix(self.prefix): item["ETag"]
                for page in pages for item in page.get("Contents", ())}


def public(client: Any, bucket: str) -> None:
    """Create ``bucket``, anyone may GET its objects (over moto's HTTP)."""
    client.create_bucket(Bucket=bucket)
    client.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
            "Resource": f"arn:aws:s3:::{bucket}/*"}]}))
