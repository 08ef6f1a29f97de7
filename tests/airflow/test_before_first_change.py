"""Issue 31: from a Source's first save, its followers' incremental runs, the Change List sensor
and the event trigger find nothing new and wait, by every method, before the first change; then
they see it. For a publication of a directory and for a mirror published as a Source (14.8).

The first save writes an empty Change List Index (12.2 allows an index of no lists) from the
snapshot's ``at``, and the publisher an empty Change Dump Index, so the Capability List (9) offers
every route a follower will use from the start. Before, it offered only the Resource List until
the first change: every follower's run failed with "no Change List or Change Dump to read changes
from", and the sensor and the trigger with it."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.publish.bucket import LocalBucket
from airflow_provider_resourcesync.publish.inventory import walk_directory
from airflow_provider_resourcesync.publish.run import Publication, publish
from airflow_provider_resourcesync.sensors.changelist import (
    ResourceSyncChangeListSensor,
    ResourceSyncClosedChangeListSensor,
)
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import ResourceSyncSource, ServedDirectory, SourceServer
from airflow_provider_resourcesync.triggers.event import ResourceSyncChangeEventTrigger
from tests.sync.conftest import client_for, held

from .runs import run_dag, states, xcom
from .test_event_trigger import watching

#: After every file's modification time: each publishing run is made as of this time, a day more
#: for each run after the first.
T1 = datetime(2030, 1, 1, tzinfo=UTC)


@dataclass
class FirstSaved:
    """A Source after its first save, served by ``web``: its Capability List and Change List
    (Index), the methods its followers may follow by, and ``change(name)``, which creates
    ``name`` and saves the Source (a Change List per save)."""

    web: SourceServer
    capability_list: str
    change_list: str
    methods: tuple[str, ...]
    change: Callable[..., None]

    def requests_for(self, url: str) -> int:
        path = url.removeprefix(self.web.base_url)
        return sum(record.path == path for record in self.web.requests)


def published_directory(tmp_path: Path, web: SourceServer) -> FirstSaved:
    """A directory of three files published once into a folder (no Resource Dump)."""
    root, out = tmp_path / "bucket", tmp_path / "published"
    root.mkdir()
    for number in range(3):
        (root / f"{number}.txt").write_bytes(f"file {number}\n".encode())
    bucket, served = ServedDirectory(web, root, "/bucket/"), ServedDirectory(web, out, "/pub/")
    runs = iter(range(10))

    def run() -> None:
        bucket.refresh()
        when = T1 + timedelta(days=next(runs))
        publish(Publication(LocalDestination(out), base_url=bucket.url, publish_url=served.url),
                walk_directory(root), when, LocalBucket(root), now=when)
        served.refresh()

    def change(name: str = "new.txt") -> None:
        (root / name).write_bytes(b"the first change\n")
        run()

    run()
    return FirstSaved(web, served.url + "capabilitylist.xml", served.url + "changelist.xml",
                      ("auto", "changelist", "changedump"), change)


def published_mirror(tmp_path: Path, web: SourceServer) -> FirstSaved:
    """A mirror of a loopback Source of three resources, baselined with ``public_url`` (its
    first save); a change is made at the Source, then an incremental run of the mirror. A mirror
    offers Change Lists, no Change Dump."""
    upstream = ResourceSyncSource(web, resources={f"{n}.txt": f"item {n}\n".encode()
                                                  for n in range(3)}, prefix="/upstream")
    upstream.publish()
    root = tmp_path / "mirror"
    served = ServedDirectory(web, root, "/mirror/")
    with client_for(web) as client:
        saved = [run_baseline(client, LocalDestination(root),
                              capability_list_url=upstream.capability_list_url,
                              public_url=served.url)]
    served.refresh()

    def change(name: str = "new.txt") -> None:
        upstream.create(name, b"the first change\n")
        upstream.publish()
        with client_for(web) as client:
            saved.append(run_incremental(client, LocalDestination(root), checkpoint=saved[-1],
                                         capability_list_url=upstream.capability_list_url))
        served.refresh()

    documents = served.url + RESERVED_PREFIX
    return FirstSaved(web, documents + "capabilitylist.xml", documents + "changelist.xml",
                      ("auto", "changelist"), change)


@pytest.fixture(params=[published_directory, published_mirror], ids=["publisher", "mirror"])
def first_saved(request: pytest.FixtureRequest, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> Iterator[FirstSaved]:
    """The Source, and ``resourcesync_default`` pointing at its Capability List (discovery's
    first route: the URL is itself a ResourceSync document, 6.3)."""
    with SourceServer(max_lifetime=120) as web:
        made = request.param(tmp_path, web)
        monkeypatch.setenv("AIRFLOW_CONN_RESOURCESYNC_DEFAULT", json.dumps({
            "conn_type": "resourcesync", "host": made.capability_list,
            "extra": {"allow_private": True}}))
        yield made


def baselined(first_saved: FirstSaved, root: Path) -> Checkpoint:
    with client_for(first_saved.web) as client:
        return run_baseline(client, LocalDestination(root),
                            capability_list_url=first_saved.capability_list)


def followed(first_saved: FirstSaved, root: Path, checkpoint: Checkpoint,
             method: str) -> Checkpoint:
    with client_for(first_saved.web) as client:
        return run_incremental(client, LocalDestination(root), checkpoint=checkpoint,
                               capability_list_url=first_saved.capability_list, method=method)


def test_an_incremental_run_before_the_first_change_finds_nothing_by_every_method(
        first_saved: FirstSaved, tmp_path: Path) -> None:
    """A follower per method, baselined after the first save; its run before the first change
    reads no change and fetches nothing; its next run, after the change, brings it."""
    checkpoints = {method: baselined(first_saved, tmp_path / method)
                   for method in first_saved.methods}
    before = held(LocalDestination(tmp_path / "auto"))
    assert len(before) == 3
    for method, start in checkpoints.items():
        quiet = followed(first_saved, tmp_path / method, start, method)
        assert (quiet.stats["changes"], quiet.stats["fetched"]) == (0, 0), method
        assert held(LocalDestination(tmp_path / method)) == before, method
        checkpoints[method] = quiet
    first_saved.change()
    for method, quiet in checkpoints.items():
        after = followed(first_saved, tmp_path / method, quiet, method)
        assert (after.stats["changes"], after.stats["fetched"]) == (1, 1), method
        now = held(LocalDestination(tmp_path / method))
        assert len(now) == 4 and b"the first change\n" in now.values(), method


def sensed(first_saved: FirstSaved, sensor: type[Any], follower: Path, *names: str) -> Any:
    """A ``dag.test()`` run of ``sensor`` in poke mode, from a follower baselined into
    ``follower``; once it has looked at the Change List Index twice, the Source saves a change
    of each of ``names``, in turn. The task's XCom."""
    checkpoint = baselined(first_saved, follower).to_json()

    def change_once_looked_at_twice() -> None:
        deadline = time.monotonic() + 60
        while first_saved.requests_for(first_saved.change_list) < 2 \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        for name in names:
            first_saved.change(name)

    changer = threading.Thread(target=change_once_looked_at_twice, daemon=True)
    changer.start()
    run = run_dag(f"{sensor.__name__}_before_first_change", lambda: sensor(
        task_id="wait", capability_list_url=first_saved.capability_list, checkpoint=checkpoint,
        poke_interval=0.3, timeout=60))
    changer.join(timeout=60)
    assert states(run) == {"wait": "success"}
    return xcom(run, "wait")


def test_the_sensor_waits_quietly_before_the_first_change_then_sees_it(
        first_saved: FirstSaved, tmp_path: Path) -> None:
    """Poke mode, in a real ``dag.test()`` run: pokes that find the Change List Index empty
    wait; the change made while the sensor waits ends the wait."""
    seen = sensed(first_saved, ResourceSyncChangeListSensor, tmp_path / "follower", "new.txt")
    assert seen["count"] == 1


def test_the_closed_sensor_waits_before_the_first_change_until_the_first_list_closes(
        first_saved: FirstSaved, tmp_path: Path) -> None:
    """The list the checkpoint will be in does not exist yet: the sensor waits (it failed with
    "a Change List Index that lists no Change List"); the first change opens it, the second
    closes it (a newer list follows, 12.2)."""
    seen = sensed(first_saved, ResourceSyncClosedChangeListSensor, tmp_path / "follower",
                  "first.txt", "second.txt")
    # closed: its until, or a newer list in the index (a publisher writes the closed list before
    # the index that names the next one, and the sensor may look in between)
    assert seen["list_url"] != first_saved.change_list
    assert seen["until"] is not None or seen["newer_list_url"] is not None


def test_the_event_trigger_waits_quietly_before_the_first_change_then_fires(
        first_saved: FirstSaved, caplog: pytest.LogCaptureFixture) -> None:
    """The trigger discovers the Change List Index from the connection, polls it without an
    error while it is empty, and fires for the first change."""
    trigger = ResourceSyncChangeEventTrigger(poll_interval=0.05)
    index = first_saved.change_list

    async def scenario() -> list[dict[str, Any]]:
        async with watching(trigger) as watch:
            await watch.until(lambda: first_saved.requests_for(index) >= 3)
            assert watch.events == []
            await asyncio.to_thread(first_saved.change)
            await watch.until(lambda: bool(watch.events))
            return watch.events

    with caplog.at_level(logging.INFO):
        events = asyncio.run(scenario())
    assert events[0]["change_list_url"] == index
    assert [record.getMessage() for record in caplog.records
            if record.levelno >= logging.ERROR] == []
