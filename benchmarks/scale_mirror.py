"""Mirrors of many resources built directly, for the scale scenarios of ``incremental.py``.

A mirror of ``size`` resources is what a baseline of a Source of that many resources leaves:
each object (10 bytes) at the destination (those no run reads without their description, see
:func:`build_mirror`), and the mirror's state saved once by :class:`MirrorState` (its Resource
List, split past 50,000 entries, and its lookup index) with the checkpoint a real baseline
returned. Only the Source is smaller than the
mirror: it holds the resources the runs change, so that it serves them, and no other body. An
incremental run reads only the Capability List, the Change Lists and the changed resources, so
the rest of the Source is never asked for.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO

from moto.core import DEFAULT_ACCOUNT_ID
from moto.s3.models import s3_backends

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.protocol.hashes import Digester, Hashes, stored_digests
from airflow_provider_resourcesync.storage.base import Destination, ObjectInfo, Staged
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX, KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.writer import MirrorState, ObjectRecord

#: Objects written at once while a mirror is built (threads; bounded memory).
_CHUNK = 10_000
_TYPE = "text/plain"
#: What a baseline stores of each object: the test Source lists an MD5 and a SHA-256.
_STORED = stored_digests(Hashes.of(md5="0" * 32, sha_256="0" * 64))


def name(number: int) -> str:
    """The Source's name of resource ``number``: a thousand to a folder."""
    return f"{number // 1_000:04d}/r{number:07d}.txt"


def body(number: int, version: int = 0) -> bytes:
    return f"{number:07d}.{version}\n".encode()  # 10 bytes


@dataclass(frozen=True)
class Plan:
    """The changes of run ``run`` to a mirror of ``size``: ``changes - 3`` updates and a delete
    of resources spread over the mirror, and two resources created. No resource is changed by
    two runs (``run`` must stay below ``size // changes - 1``)."""

    size: int
    run: int
    changes: int = 10

    def held(self) -> list[int]:
        step = self.size // self.changes
        return [k * step + self.run + 1 for k in range(self.changes - 2)]

    def updated(self) -> list[int]:
        return self.held()[:-1]

    def deleted(self) -> int:
        return self.held()[-1]

    def created(self) -> list[int]:
        return [self.size + 2 * self.run + j for j in range(2)]

    def apply(self, source: ResourceSyncSource) -> None:
        """Make the changes at ``source`` and publish its documents."""
        for number in self.updated():
            source.update(name(number), body(number, self.run + 1))
        source.delete(name(self.deleted()))
        for number in self.created():
            source.create(name(number), body(number))
        source.publish()

    def applied(self, source: ResourceSyncSource, destination: Destination) -> bool:
        """Whether the mirror at ``destination`` holds what the Source holds after the run."""
        mapper = KeyMapper()
        for number in (*self.updated(), *self.created()):
            data = destination.read_bytes(mapper.key(source.uri(name(number))))
            if data != body(number, self.run + 1 if number < self.size else 0):
                return False
        return not destination.exists(mapper.key(source.uri(name(self.deleted()))))


def source_of(server: SourceServer, plans: Iterable[Plan]) -> ResourceSyncSource:
    """A Source holding the resources ``plans`` update or delete, published."""
    numbers = sorted({number for plan in plans for number in plan.held()})
    source = ResourceSyncSource(server, resources={name(n): body(n) for n in numbers})
    source.publish()
    return source


def baseline_checkpoint(server: SourceServer, source: ResourceSyncSource,
                        destination: Destination) -> dict[str, Any]:
    """The checkpoint a real baseline of ``source`` returns, as it would be for a baseline
    into ``destination`` (the baseline itself goes to a scratch directory)."""
    with tempfile.TemporaryDirectory() as scratch, ResourceSyncClient(
            ClientPolicy(allow_private=True), source_urls=[server.base_url]) as client:
        checkpoint = run_baseline(client, LocalDestination(Path(scratch)),
                                  capability_list_url=source.capability_list_url)
    return replace(checkpoint, destination=destination.url).to_json()


def build_mirror(destination: Destination, source: ResourceSyncSource, size: int,
                 checkpoint: dict[str, Any], store: Callable[[str, bytes], None], *,
                 threads: int = 4) -> None:
    """Write a mirror of resources ``0 .. size - 1`` of ``source`` at ``destination``, as a
    baseline would leave it, and save its state with ``checkpoint``.

    The objects the Source holds (those the runs change) go through the destination, with
    their description; the others, never read by an incremental run, through ``store`` (key,
    bytes), bare: the destination's own path (a staged file, its description, a rename; on
    moto an HTTP request) costs about a millisecond an object, twenty minutes at a million.
    Memory stays bounded: objects go ``_CHUNK`` at a time, the state's records into SQLite."""
    mapper = KeyMapper()
    lastmod = source.created
    served = set(source.state())

    def write(number: int) -> ObjectRecord:
        uri = source.uri(name(number))
        data = body(number)
        digester = Digester(_STORED)
        digester.update(data)
        info = ObjectInfo(uri, len(data), digester.hashes(), lastmod, _TYPE)
        key = mapper.key(uri)
        if uri not in served:
            store(key, data)
            return ObjectRecord.of(key, info)
        with destination.stage(key) as staged:
            staged.file.write(data)
            staged.commit(info)
        return ObjectRecord.of(key, info)

    numbers = iter(range(size))
    with MirrorState.load(destination) as state, ThreadPoolExecutor(threads) as pool:
        while chunk := list(islice(numbers, _CHUNK)):
            for record in pool.map(write, chunk):
                state.put(record)
        state.save(checkpoint=checkpoint)


def file_store(root: Path) -> Callable[[str, bytes], None]:
    """Bare files under ``root`` (see :func:`build_mirror`)."""

    def store(key: str, data: bytes) -> None:
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    return store


def moto_store(bucket: str, prefix: str) -> Callable[[str, bytes], None]:
    """Objects put straight into the memory of the moto server running in this process, under
    ``prefix`` in ``bucket`` (see :func:`build_mirror`)."""
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]

    def store(key: str, data: bytes) -> None:
        backend.put_object(bucket, prefix + key, data)

    return store


class MeteredDestination(LocalDestination):
    """A local destination counting the bytes read and written under the mirror's own folder
    (``.resourcesync/``): read as they stream (a whole read opens the object too), written
    whole or staged."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self.read = self.written = 0

    def open(self, key: str) -> BinaryIO:
        stream = super().open(key)
        if not key.startswith(RESERVED_PREFIX):
            return stream
        return io.BufferedReader(_Counted(stream, self._add_read))

    def write_bytes(self, key: str, data: bytes, content_type: str, *,
                    cache_control: str | None = None) -> None:
        if key.startswith(RESERVED_PREFIX):
            self.written += len(data)
        super().write_bytes(key, data, content_type,  # stages, but does not commit
                            cache_control=cache_control)

    def stage(self, key: str) -> Staged:
        staged = super().stage(key)
        if key.startswith(RESERVED_PREFIX):
            commit = staged.commit

            def counted(info: ObjectInfo) -> None:
                staged.file.flush()
                self.written += os.fstat(staged.file.fileno()).st_size
                commit(info)

            staged.commit = counted  # type: ignore[method-assign]
        return staged

    def _add_read(self, count: int) -> None:
        self.read += count


class _Counted(io.RawIOBase):
    """``inner``, reporting each read's size to ``add``."""

    def __init__(self, inner: BinaryIO, add: Callable[[int], None]) -> None:
        super().__init__()
        self._inner = inner
        self._add = add

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = self._inner.readinto(buffer)  # type: ignore[attr-defined]
        self._add(count or 0)
        return count

    def close(self) -> None:
        self._inner.close()
        super().close()
