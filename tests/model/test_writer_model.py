"""The Source writer's promise to followers, as a model (issue 26, item 5): over any sequence of
changes, quiet runs, runs killed at any write and made again, compactions and a clock gone
back, followers joining at any step by Resource List, Resource Dump, Change List and Change
Dump each equal the collection after every step, each change is listed once, and every
document validates; for the publisher and for the mirror as a Source, on local disk and on
S3 (moto's server over HTTP)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis.stateful import run_state_machine_as_test

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from .machine import World, WriterModel, bounded, reader
from .sources import Directory, Mirror, Publisher, S3Objects, Source
from .stores import LocalStore, S3Store

#: Examples and steps per run of the model, by storage (S3 costs about 12 ms a request).
SIZES = {"local": (5, 12), "s3": (3, 6)}


def worlds(user: str, storage: str, folder: Path, request: pytest.FixtureRequest
           ) -> Callable[[dict[str, bytes]], World]:
    """Builds each example's Source, on a server and in buckets of its own."""
    s3: tuple[Any, str] | None = None
    if storage == "s3":
        s3 = request.getfixturevalue("s3_client"), request.getfixturevalue("s3_endpoint")
    numbers = itertools.count()

    def world(initial: dict[str, bytes]) -> World:
        here = folder / f"example-{next(numbers)}"
        web = SourceServer(max_lifetime=600).start()
        name = f"model-{uuid.uuid4().hex[:16]}"
        source: Source
        if user == "publisher":
            collection = (Directory(here / "bucket", web) if s3 is None
                          else S3Objects(*s3, f"{name}-objects"))
            source = Publisher(collection, LocalStore(here / "published", web, "/pub/")
                               if s3 is None else S3Store(*s3, name, "pub/"))
            for key, body in initial.items():
                source.change(key, body)
        else:
            upstream = ResourceSyncSource(web, prefix="/up", resources=initial)
            source = Mirror(upstream, LocalStore(here / "mirror", web, "/mirror/")
                            if s3 is None else S3Store(*s3, name, "mirror/"))

        def client() -> ResourceSyncClient:
            return reader(web.base_url, *(s3[1:] if s3 else ()))

        def close() -> None:
            if isinstance(source, Mirror):
                source.close()
            web.stop()

        return World(source, client, here, close)

    return world


@pytest.mark.parametrize("storage", ["local", "s3"])
@pytest.mark.parametrize("user", ["publisher", "mirror"])
def test_every_follower_equals_the_collection_after_every_step(
        user: str, storage: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    examples, steps = SIZES[storage]
    model = type(f"{user.title()}Model", (WriterModel,),
                 {"world": staticmethod(worlds(user, storage, tmp_path, request))})
    run_state_machine_as_test(model, settings=bounded(examples, steps))
