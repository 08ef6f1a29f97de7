"""The two users of the Source writer, as the model drives them: the publisher over a
collection (a directory, or a bucket on moto's S3 server), and a mirror of a loopback Source
that others sync from (spec 14.8). Each takes changes to its collection by name, runs (killed
at a write and made again, if asked), and says where a follower holds each name's copy."""

from __future__ import annotations

import mimetypes
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import pytest

from airflow_provider_resourcesync.publish.bucket import Bucket, LocalBucket, S3Bucket
from airflow_provider_resourcesync.publish.inventory import list_bucket, walk_directory
from airflow_provider_resourcesync.publish.inventory.objects import InventoryObject
from airflow_provider_resourcesync.publish.packages import PackageSize
from airflow_provider_resourcesync.publish.retention import KEEP_CHANGES_FOR
from airflow_provider_resourcesync.publish.run import Publication, publish
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX, KeyMapper
from airflow_provider_resourcesync.sync import baseline, incremental
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.testing import (
    FakeClock,
    ResourceSyncSource,
    ServedDirectory,
    SourceServer,
)
from airflow_provider_resourcesync.writer import (
    DOCUMENTS_MAX_AGE,
    RESOURCE_LIST_MAX_AGE,
    MirrorState,
)
from tests.sync.conftest import client_for

from .killing import KillAt, Killed, killed_at
from .stores import Store, public

#: How a follower joins (a baseline's ``method``) and then follows (an incremental run's).
Route = tuple[str, str]
T = TypeVar("T")


class Source(ABC):
    """A Source under test: its documents in :attr:`store` under :attr:`docs`."""

    store: Store
    docs: str
    routes: tuple[Route, ...]
    #: The series of changes it publishes, each with an index of its own.
    series: tuple[str, ...]

    @property
    def capability_list(self) -> str:
        return self.store.url_of(self.docs + "capabilitylist.xml")

    @abstractmethod
    def change(self, name: str, body: bytes | None, when: datetime | None = None) -> None:
        """Create, update (``body``) or delete (None) ``name`` in the collection; dated
        ``when`` where the collection dates its objects and can be told (a directory's
        modification times)."""

    @abstractmethod
    def run(self, now: datetime, *, kill: KillAt | None = None, rebaseline: bool = False) -> bool:
        """One run as of ``now`` (killed where ``kill`` says, then made again; a mirror's
        baseline again if ``rebaseline``); whether its documents now describe the
        collection."""

    @abstractmethod
    def url(self, name: str) -> str:
        """Where a follower's copy of ``name`` is (its URI at the follower)."""

    @property
    @abstractmethod
    def resources(self) -> str:
        """The URL every :meth:`url` starts with."""

    @staticmethod
    def killable(run: Callable[[Destination], T], store: Store, kill: KillAt | None) -> T:
        """``run`` on the store's destination; if ``kill``, killed where it says first and then
        made again on the plain destination (from what the killed run left)."""
        if kill is not None:
            try:
                return run(killed_at(store.destination(), kill))
            except Killed:
                pass  # made again below
        return run(store.destination())


class Collection(ABC):
    """The publisher's collection: objects by key, served at :attr:`base_url`."""

    base_url: str

    @abstractmethod
    def write(self, key: str, body: bytes | None, when: datetime | None) -> None:
        """Write ``key`` (None: delete it), modified ``when`` if the collection can be told."""

    @abstractmethod
    def inventory(self) -> Iterator[InventoryObject]: ...

    @abstractmethod
    def bucket(self) -> Bucket: ...

    @abstractmethod
    def refresh(self) -> None:
        """Serve the collection as it is now."""


class Directory(Collection):
    """Files under ``root``, served at ``/bucket/`` of ``web``."""

    def __init__(self, root: Path, web: SourceServer) -> None:
        root.mkdir(parents=True)
        self.root = root
        self.served = ServedDirectory(web, root, "/bucket/")
        self.base_url = self.served.url

    def write(self, key: str, body: bytes | None, when: datetime | None) -> None:
        path = self.root / key
        if body is None:
            path.unlink()
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        if when is not None:
            nanoseconds = int(when.timestamp() * 1e9)
            os.utime(path, ns=(nanoseconds, nanoseconds))

    def inventory(self) -> Iterator[InventoryObject]:
        return walk_directory(self.root)

    def bucket(self) -> Bucket:
        return LocalBucket(self.root)

    def refresh(self) -> None:
        self.served.refresh()


class S3Objects(Collection):
    """A new bucket on moto's S3 server, which serves it."""

    def __init__(self, client: Any, endpoint: str, bucket: str) -> None:
        public(client, bucket)
        self.client, self.name = client, bucket
        self.base_url = f"{endpoint}/{bucket}/"

    def write(self, key: str, body: bytes | None, when: datetime | None) -> None:
        """S3 dates each object itself: ``when`` cannot be told."""
        if body is None:
            self.client.delete_object(Bucket=self.name, Key=key)
        else:
            self.client.put_object(Bucket=self.name, Key=key, Body=body, ContentType=(
                mimetypes.guess_type(key)[0] or "application/octet-stream"))

    def inventory(self) -> Iterator[InventoryObject]:
        return list_bucket(self.client, self.name)

    def bucket(self) -> Bucket:
        return S3Bucket(self.client, self.name)

    def refresh(self) -> None:
        """moto serves the bucket as it is."""


class Publisher(Source):
    """``publish`` of ``collection`` into ``store``, with a Resource Dump, packages of three."""

    docs = ""
    routes = (("resourcelist", "changelist"), ("resourcelist", "changedump"),
              ("resourcedump", "changelist"), ("resourcedump", "changedump"))
    series = ("changelist", "changedump")

    def __init__(self, collection: Collection, store: Store) -> None:
        self.collection = collection
        self.store = store
        self.published: datetime | None = None
        #: The Resource List's age bound (a test may make it short).
        self.max_age: timedelta | None = RESOURCE_LIST_MAX_AGE
        #: How long its changes are kept (a test may make it short).
        self.keep_changes_for: timedelta | None = KEEP_CHANGES_FOR
        #: How far the publisher's machine clock is ahead of the model's: each run comes past
        #: the cache lifetime of the run before, which the replaced Resource Dump outlives.
        self.waited = timedelta(0)

    def change(self, name: str, body: bytes | None, when: datetime | None = None) -> None:
        self.collection.write(name, body, when)

    def run(self, now: datetime, *, kill: KillAt | None = None, rebaseline: bool = False) -> bool:
        """An inventory not newer than the last run's publishes nothing (its changes wait for
        the next run)."""
        self.collection.refresh()
        self.waited += DOCUMENTS_MAX_AGE + timedelta(minutes=2)
        machine = now + self.waited

        def once(destination: Destination) -> int:
            publication = Publication(destination, base_url=self.collection.base_url,
                                      publish_url=self.store.url, size=PackageSize(entries=3),
                                      resource_dump=True, resource_list_max_age=self.max_age,
                                      keep_changes_for=self.keep_changes_for,
                                      max_deletions=1.0)  # the model deletes what it likes
            return publish(publication, self.collection.inventory(), now,
                           self.collection.bucket(), now=machine).changes

        changes = self.killable(once, self.store, kill)
        self.store.refresh()
        if self.published is not None and now <= self.published:
            assert changes == 0
            return False
        self.published = now
        return True

    def url(self, name: str) -> str:
        return self.resources + quote(name, safe="/")

    @property
    def resources(self) -> str:
        return self.collection.base_url


class Mirror(Source):
    """A mirror of ``upstream`` in ``store``, published at the store's URL: a baseline first
    (and when asked again, removing what the Source no longer lists), else an incremental run
    from the last run's checkpoint. Its clock is the model's."""

    docs = RESERVED_PREFIX
    routes = (("resourcelist", "changelist"),)
    series = ("changelist",)

    def __init__(self, upstream: ResourceSyncSource, store: Store) -> None:
        self.upstream = upstream
        self.store = store
        self.client = client_for(upstream.server)
        self.checkpoint: Checkpoint | None = None

    def change(self, name: str, body: bytes | None, when: datetime | None = None) -> None:
        """The Source dates its changes by its own clock, the mirror by its own."""
        if body is None:
            self.upstream.delete(name)
        elif self.upstream.uri(name) in self.upstream.state():
            self.upstream.update(name, body)
        else:
            self.upstream.create(name, body)

    def run(self, now: datetime, *, kill: KillAt | None = None, rebaseline: bool = False) -> bool:
        self.upstream.publish()
        source = self.upstream.capability_list_url
        checkpoint = self.checkpoint

        def once(destination: Destination) -> Checkpoint:
            if checkpoint is None or rebaseline:
                return baseline.run_baseline(self.client, destination, capability_list_url=source,
                                             public_url=self.store.url, remove_missing=True)
            return incremental.run_incremental(self.client, destination, checkpoint=checkpoint,
                                               capability_list_url=source)

        with clocked(FakeClock(now, timedelta(milliseconds=1))):
            self.checkpoint = self.killable(once, self.store, kill)
        self.store.refresh()
        return True

    def url(self, name: str) -> str:
        return self.store.url_of(KeyMapper().key(self.upstream.uri(name)))

    @property
    def resources(self) -> str:
        return self.store.url

    def close(self) -> None:
        self.client.close()


@contextmanager
def clocked(clock: Callable[[], datetime]) -> Iterator[None]:
    """The engines' mirror state on ``clock`` (the mirror's own, as a container's may be)."""

    class Clocked(MirrorState):
        def __init__(self, destination: Destination, **options: Any) -> None:
            super().__init__(destination, **options | {"clock": clock})

    with pytest.MonkeyPatch.context() as patch:
        for engine in (baseline, incremental):
            patch.setattr(engine, "MirrorState", Clocked)
        yield
