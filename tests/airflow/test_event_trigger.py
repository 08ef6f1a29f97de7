"""The event trigger of event-driven DAG runs (issue 16, item 2), polling a loopback Source with
asyncio as the triggerer does, and the example DAG it schedules, as Airflow's DAG processor and
triggerer code record its watcher and turn its event into a queued run."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import tracemalloc
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from pkgutil import resolve_name
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.watch import READER_THREAD
from airflow_provider_resourcesync.compat import AIRFLOW_3
from airflow_provider_resourcesync.demo import load_example_dag
from airflow_provider_resourcesync.errors import ConfigurationError, DocumentError
from airflow_provider_resourcesync.hooks.resourcesync import WATCH_MAX_DOCUMENT_BYTES
from airflow_provider_resourcesync.protocol.model import (
    RS_NS,
    SITEMAP_NS,
    Entry,
    Head,
    Metadata,
    Root,
)
from airflow_provider_resourcesync.protocol.position import ChangePosition
from airflow_provider_resourcesync.protocol.writer import DocumentWriter
from airflow_provider_resourcesync.run_records import register
from airflow_provider_resourcesync.testing import ResourceSyncSource
from airflow_provider_resourcesync.triggers.changelist import ResourceSyncChangeListTrigger
from airflow_provider_resourcesync.triggers.event import ResourceSyncChangeEventTrigger
from airflow_provider_resourcesync.triggers.marks import mark_of

from .runs import event_driven

#: How long any wait in these tests may last: a bound, never an assertion.
BOUND = 30.0


def statuses(source: ResourceSyncSource, url: str) -> list[int | None]:
    """The statuses the Source answered requests for ``url`` with, in order."""
    path = url.removeprefix(source.server.base_url)
    return [record.status for record in source.server.requests if record.path == path]


class Watching:
    """A trigger's ``run()`` under way in the running loop, its events collected."""

    def __init__(self, trigger: ResourceSyncChangeEventTrigger) -> None:
        self.events: list[dict[str, Any]] = []
        self._task = asyncio.create_task(self._collect(trigger))

    async def _collect(self, trigger: ResourceSyncChangeEventTrigger) -> None:
        async for event in trigger.run():
            self.events.append(event.payload)

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait until ``condition`` holds (checked every 20 ms, at most :data:`BOUND` s)."""
        async with asyncio.timeout(BOUND):
            while not condition():
                assert not self._task.done(), self._task.exception()
                await asyncio.sleep(0.02)

    async def polls(self, source: ResourceSyncSource, url: str, more: int) -> None:
        """Wait until ``more`` more requests for ``url`` were answered."""
        seen = len(statuses(source, url))
        await self.until(lambda: len(statuses(source, url)) >= seen + more)


@asynccontextmanager
async def watching(trigger: ResourceSyncChangeEventTrigger) -> AsyncIterator[Watching]:
    watch = Watching(trigger)
    try:
        yield watch
    finally:
        watch._task.cancel()
        await asyncio.gather(watch._task, return_exceptions=True)


def change(source: ResourceSyncSource, name: str) -> None:
    source.create(name, f"{name}\n".encode())
    source.publish()


@event_driven
def test_no_event_while_unchanged_one_304_a_poll_then_one_event_per_change(
        source: ResourceSyncSource) -> None:
    change(source, "before.txt")  # the first poll only records, even a list with changes
    url = source.change_list_url
    trigger = ResourceSyncChangeEventTrigger(change_list_url=url, poll_interval=0.05)
    identity = trigger.serialize()

    async def scenario() -> None:
        async with watching(trigger) as watch:
            await watch.polls(source, url, 6)
            assert watch.events == []
            assert statuses(source, url)[0] == 200 and set(statuses(source, url)[1:]) == {304}
            change(source, "new.txt")
            await watch.until(lambda: bool(watch.events))
            assert watch.events == [{"change_list_url": url, "changed": [url]}]
            await watch.polls(source, url, 4)
            assert len(watch.events) == 1  # one change, one event
            change(source, "newer.txt")
            await watch.until(lambda: len(watch.events) == 2)

    asyncio.run(scenario())
    assert trigger.serialize() == identity  # what it saw is not part of its identity


@event_driven
def test_a_list_rewritten_with_the_same_entries_wakes_nothing(source: ResourceSyncSource) -> None:
    """What the list says counts, not its bytes: a new ETag over the same entries is no change."""
    url = source.change_list_url
    path = url.removeprefix(source.server.base_url)
    change(source, "before.txt")
    trigger = ResourceSyncChangeEventTrigger(change_list_url=url, poll_interval=0.05)

    async def scenario() -> None:
        async with watching(trigger) as watch:
            await watch.polls(source, url, 2)
            with urllib.request.urlopen(url, timeout=BOUND) as response:
                body = response.read()
            source.server.put(path, body.replace(b"><", b">\n  <"), "application/xml")
            await watch.polls(source, url, 4)
            assert 200 in statuses(source, url)[2:]  # the new bytes were read
            assert watch.events == []

    asyncio.run(scenario())


@event_driven
def test_an_index_is_watched_with_its_open_list_only_and_fires_on_a_new_list(
        source: ResourceSyncSource) -> None:
    """A Change List Index (12.2), discovered from the connection: its closed lists are never
    read; an unchanged poll costs one 304 for the index and one for the open list."""
    change(source, "first.txt")
    source.close_changelist()
    change(source, "second.txt")
    index = source.change_list_url
    closed, open_list = (index.replace("changelist.xml", f"changelist-{n}.xml") for n in (1, 2))
    assert statuses(source, open_list) == []  # the names are the fixture's
    trigger = ResourceSyncChangeEventTrigger(poll_interval=0.05)

    async def scenario() -> None:
        async with watching(trigger) as watch:
            await watch.polls(source, open_list, 4)
            assert watch.events == []
            assert set(statuses(source, index)[1:]) == set(statuses(source, open_list)[1:]) == {304}
            change(source, "third.txt")
            await watch.until(lambda: bool(watch.events))
            assert watch.events == [{"change_list_url": index, "changed": [open_list]}]
            source.close_changelist()
            source.publish()
            await watch.until(lambda: len(watch.events) == 2)
            newest = index.replace("changelist.xml", "changelist-3.xml")
            assert watch.events[1]["changed"] == [index, newest]
            read_open = len(statuses(source, open_list))
            await watch.polls(source, newest, 3)
            assert len(watch.events) == 2
            assert len(statuses(source, open_list)) == read_open  # closed now: not read again

    asyncio.run(scenario())
    assert statuses(source, closed) == []


@event_driven
def test_a_failed_poll_ends_nothing_and_what_was_seen_before_is_kept(
        source: ResourceSyncSource) -> None:
    """A Source down for a while: the polls fail (logged), the watch goes on with what it saw,
    so the first good poll after the outage fires for a change made during it."""
    url = source.change_list_url
    path = url.removeprefix(source.server.base_url)
    trigger = ResourceSyncChangeEventTrigger(change_list_url=url, poll_interval=0.05)

    async def scenario() -> None:
        async with watching(trigger) as watch:
            await watch.polls(source, url, 2)
            source.server.fail(path, 404, times=3)
            await watch.until(lambda: statuses(source, url).count(404) == 3)
            assert watch.events == []
            change(source, "during.txt")
            await watch.until(lambda: bool(watch.events))
            assert watch.events == [{"change_list_url": url, "changed": [url]}]

    asyncio.run(scenario())


class StateStore:
    """Airflow's asset state store as a watcher sees it (``aget``/``aset`` of JSON values), in a
    dict: the triggerer gives a watcher of one Asset the real one, which the deployment test
    uses across a restart of the triggerer."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    async def aget(self, key: str, default: Any = None) -> Any:
        return json.loads(self.values[key]) if key in self.values else default

    async def aset(self, key: str, value: Any) -> None:
        self.values[key] = json.dumps(value)


def restarted(trigger: ResourceSyncChangeEventTrigger, store: StateStore
              ) -> ResourceSyncChangeEventTrigger:
    """The trigger built again from its serialized form, as a triggerer does, with ``store``."""
    again = ResourceSyncChangeEventTrigger(**trigger.serialize()[1])
    again.asset_state_store = store  # type: ignore[assignment]
    return again


@event_driven
@pytest.mark.parametrize("index", [False, True])
def test_a_change_made_while_the_watch_was_stopped_fires_when_it_starts_again(
        source: ResourceSyncSource, index: bool) -> None:
    """Issue 29: what a watch saw was lost with its triggerer, so a change made while none
    watched woke nothing until the next one. It is kept in the Asset's state store (small: a
    digest per document) and the watch started again compares its first poll with it."""
    change(source, "first.txt")
    if index:
        source.close_changelist()
        change(source, "second.txt")
    watched = source.change_list_url
    open_list = watched.replace("changelist.xml", "changelist-2.xml") if index else watched
    store = StateStore()
    first = restarted(ResourceSyncChangeEventTrigger(poll_interval=0.05), store)

    async def watch(trigger: ResourceSyncChangeEventTrigger, polls: int) -> list[dict[str, Any]]:
        """The events of ``polls`` polls, or (0) the first event: without what the watch saw
        before, none comes (its first poll only records)."""
        async with watching(trigger) as running:
            if polls:  # by the third answer, what the first poll read has been compared
                await running.polls(source, open_list, polls)
            else:
                await running.until(lambda: bool(running.events))
            return running.events

    assert asyncio.run(watch(first, 3)) == []  # the first poll ever only records
    [(key, kept)] = store.values.items()
    assert key == first.state_key and len(kept) < 1024
    change(source, "during.txt")  # while no trigger runs
    second = restarted(first, store)
    assert second.state_key == first.state_key
    assert asyncio.run(watch(second, 0)) == [{"change_list_url": watched,
                                                "changed": [open_list]}]
    assert asyncio.run(watch(restarted(first, store), 3)) == []  # seen: kept as seen


class FailingOnce(StateStore):
    """A store whose first write fails (the database briefly away)."""

    async def aset(self, key: str, value: Any) -> None:
        if not hasattr(self, "failed"):
            self.failed = True
            raise RuntimeError("database is locked")
        await super().aset(key, value)


@event_driven
def test_what_the_store_failed_to_keep_is_kept_at_the_next_poll(
        source: ResourceSyncSource) -> None:
    """A write that fails is logged and the watch goes on; the next poll writes it, though it
    saw no change, so a restart after it compares with what the first poll saw."""
    url = source.change_list_url
    store = FailingOnce()
    trigger = restarted(ResourceSyncChangeEventTrigger(change_list_url=url, poll_interval=0.05),
                        store)

    async def scenario() -> None:
        async with watching(trigger) as watch:
            await watch.until(lambda: bool(store.values))
            assert watch.events == []

    asyncio.run(scenario())
    assert store.failed and list(store.values) == [trigger.state_key]


@event_driven
def test_without_a_store_or_with_marks_of_another_list_the_first_poll_only_records(
        source: ResourceSyncSource) -> None:
    change(source, "first.txt")
    url = source.change_list_url
    store = StateStore()
    other = ResourceSyncChangeEventTrigger(change_list_url=url, poll_interval=0.05)
    store.values[other.state_key] = json.dumps({"url": "https://example.org/other.xml",
                                                "marks": {}})
    for trigger in (other, restarted(other, store)):
        async def scenario(trigger: ResourceSyncChangeEventTrigger = trigger) -> None:
            async with watching(trigger) as watch:
                await watch.polls(source, url, 3)
                assert watch.events == []

        asyncio.run(scenario())
    assert json.loads(store.values[other.state_key])["url"] == url


def test_the_event_trigger_needs_airflow_3_and_says_so() -> None:
    """On Airflow 2 the trigger fails when made, and so the example DAG that watches with it when
    parsed, naming the release they need; on Airflow 3 both are made."""
    if AIRFLOW_3:
        assert ResourceSyncChangeEventTrigger(poll_interval=1).poll_interval == 1.0
        assert load_example_dag("incremental_on_change").dag_id == "incremental_on_change"
        return
    needs = r"needs Airflow 3\.0 or later; this is Airflow 2\."
    with pytest.raises(ConfigurationError, match=r"ResourceSyncChangeEventTrigger \(an "
                                                 r"AssetWatcher's trigger\) " + needs):
        ResourceSyncChangeEventTrigger(poll_interval=1)
    with pytest.raises(ConfigurationError, match="incremental_on_change .*" + needs):
        load_example_dag("incremental_on_change")


@event_driven
def test_the_trigger_serializes_to_its_arguments_only() -> None:
    from airflow.triggers.base import BaseEventTrigger

    trigger = ResourceSyncChangeEventTrigger(change_list_url="https://example.org/cl.xml",
                                             resourcesync_conn_id="other", poll_interval=30)
    classpath, kwargs = trigger.serialize()
    assert kwargs == {"change_list_url": "https://example.org/cl.xml",
                      "resourcesync_conn_id": "other", "poll_interval": 30.0}
    assert json.loads(json.dumps(kwargs)) == kwargs
    rebuilt = resolve_name(classpath)(**kwargs)
    assert rebuilt.serialize() == (classpath, kwargs)
    assert BaseEventTrigger.hash(*rebuilt.serialize()) == BaseEventTrigger.hash(classpath, kwargs)
    with pytest.raises(ConfigurationError, match="poll_interval 0: must be a positive"):
        ResourceSyncChangeEventTrigger(poll_interval=0)


def long_change_list(count: int) -> bytes:
    """An open Change List of ``count`` updates: seconds of reading, a few MB a second."""
    head = (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}" '
            f'xmlns:rs="{RS_NS}">\n<rs:md capability="changelist" from="2026-01-01T00:00:00Z"/>\n')
    return (head + "".join(
        f'<url><loc>https://example.org/res/{n}</loc><rs:md change="updated" '
        f'datetime="2026-01-01T00:00:00.{n:06d}Z"/></url>\n' for n in range(count))
        + "</urlset>\n").encode()


def readers() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith(READER_THREAD)]


def connections_to(port: int) -> list[Any]:
    return [connection for connection in psutil.Process().net_connections(kind="tcp")
            if connection.raddr and connection.raddr.port == port]


@pytest.mark.parametrize("watch", [pytest.param("event", marks=event_driven), "changes"])
def test_a_cancelled_watch_stops_reading_at_once_and_hangs_up(
        source: ResourceSyncSource, watch: str) -> None:
    """Issue 29: a trigger cancelled (its DAG paused, its task killed, the triggerer stopping)
    while it reads a long list read on for a minute in a worker thread; its reading now ends
    within a second of the cancel, and its connection to the Source is closed."""
    source.server.put("/long.xml", long_change_list(300_000), "application/xml")
    url = source.server.url("/long.xml")
    trigger = (ResourceSyncChangeEventTrigger(change_list_url=url) if watch == "event" else
               ResourceSyncChangeListTrigger(change_list_url=url, position=ChangePosition()))

    async def scenario() -> float:
        task = asyncio.create_task(anext(trigger.run()))
        async with asyncio.timeout(BOUND):
            while not readers():
                assert not task.done(), task
                await asyncio.sleep(0.01)
        [reader] = readers()
        await asyncio.sleep(0.3)
        assert reader.is_alive()  # still reading: the cancel comes mid-list
        task.cancel()
        cancelled = time.monotonic()
        await asyncio.gather(task, return_exceptions=True)
        reader.join(BOUND)
        return time.monotonic() - cancelled

    assert asyncio.run(scenario()) < 1.0
    assert readers() == []
    assert connections_to(urlsplit(source.server.base_url).port or 0) == []


def endless_change_list() -> Iterator[bytes]:
    """An open Change List whose entries never end, 100 KB a chunk."""
    yield long_change_list(0).removesuffix(b"</urlset>\n")
    entries = long_change_list(1_000).partition(b"\n<url>")[2].partition(b"</urlset>")[0]
    while True:
        yield b"<url>" + entries


@pytest.mark.parametrize("watch", [pytest.param("event", marks=event_driven), "changes"])
def test_an_endless_change_list_costs_a_poll_the_watch_cap_and_fails_it_saying_so(
        source: ResourceSyncSource, watch: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 29: a Source answering with a body without end cost each poll of a watch the 1 GiB
    cap of a sync; a watch, with no ``max_document_bytes`` on its connection, stops at its own
    lower cap and fails the poll naming it (the event trigger logs it and goes on, the Change
    List trigger fires an error event)."""
    source.server.stream("/endless.xml", endless_change_list, "application/xml")
    url = source.server.url("/endless.xml")
    cap = f"exceeds the cap of {WATCH_MAX_DOCUMENT_BYTES} bytes"
    assert ClientPolicy().max_document_bytes > WATCH_MAX_DOCUMENT_BYTES

    async def scenario() -> None:
        if watch == "changes":
            trigger = ResourceSyncChangeListTrigger(change_list_url=url,
                                                    position=ChangePosition())
            event = await asyncio.wait_for(anext(trigger.run()), BOUND)
            assert event.payload["status"] == "error" and cap in event.payload["message"]
            return
        logged: list[str] = []  # the triggerer's log: the trigger's, on stdout here
        async with watching(ResourceSyncChangeEventTrigger(change_list_url=url)) as running:
            await running.until(lambda: logged.append(capsys.readouterr().out) or cap in logged[-1])
            assert "the poll of " + url + " failed" in logged[-1]

    asyncio.run(scenario())
    assert source.server.count("/endless.xml") == 1  # not retried
    sent = source.server.body_bytes_sent("/endless.xml")
    assert WATCH_MAX_DOCUMENT_BYTES < sent < WATCH_MAX_DOCUMENT_BYTES + 32 * 2**20, sent


def write_change_list(path: Path, count: int, *, capability: str = "changelist") -> Path:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    head = Head(md=Metadata(capability=capability, from_=start))
    with path.open("wb") as stream, DocumentWriter(stream, head) as writer:
        for number in range(count):
            writer.write(Entry(f"https://example.org/res/{number}", md=Metadata(
                change="updated", datetime=start + timedelta(seconds=number))))
    return path


def test_a_mark_is_read_streaming_in_memory_that_does_not_grow_with_the_list(
        tmp_path: Path) -> None:
    """A poll never holds a long list whole (issue 16): its digest is taken entry by entry."""
    peaks = []
    for count in (1_000, 10_000):
        path = write_change_list(tmp_path / f"cl-{count}.xml", count)
        tracemalloc.start()
        mark = mark_of(path, url="https://example.org/cl.xml", max_bytes=2**30, part=False)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert (mark.closed, mark.lists) == (False, ())
    assert peaks[1] < peaks[0] * 2 + 64 * 1024


def test_an_index_mark_keeps_only_its_open_lists_and_those_known(tmp_path: Path) -> None:
    """Issue 29: an index's mark kept every list it names (1.5 M entries: 428 MiB a mark); it
    keeps those a poll reads (open) or kept (known), in memory flat in the index's size."""
    peaks = []
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for closed in (1_000, 20_000):
        head = Head(root=Root.SITEMAPINDEX, md=Metadata(capability="changelist", from_=start))
        path = tmp_path / f"index-{closed}.xml"
        with path.open("wb") as stream, DocumentWriter(stream, head) as writer:
            for number in range(closed + 1):
                writer.write(Entry(f"https://example.org/cl-{number}.xml", md=Metadata(
                    capability="changelist", from_=start + timedelta(hours=number),
                    until=start + timedelta(hours=number + 1) if number < closed else None)))
        tracemalloc.start()
        mark = mark_of(path, url="https://example.org/index.xml", max_bytes=2**30, part=False,
                       known=frozenset({"https://example.org/cl-0.xml"}))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert [ref.url for ref in mark.lists] == [
            "https://example.org/cl-0.xml", f"https://example.org/cl-{closed}.xml"]
    assert peaks[1] < peaks[0] * 2, peaks


def test_a_document_of_another_capability_is_refused_naming_it(tmp_path: Path) -> None:
    path = write_change_list(tmp_path / "rl.xml", 1, capability="resourcelist")
    with pytest.raises(DocumentError, match=r"https://example.org/rl.xml.*expected a Change "
                                            r"List or its index, found a Resource List"):
        mark_of(path, url="https://example.org/rl.xml", max_bytes=2**20, part=False)


# -- the example DAG, as Airflow's own code records and fires its watcher --------------------------

def pause(dag_id: str, paused: bool) -> None:
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    with create_session() as session:
        session.get(DagModel, dag_id).is_paused = paused


@event_driven
def test_the_example_dag_runs_when_its_watcher_fires(
        source: ResourceSyncSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    """``incremental_on_change`` parsed twice keeps one trigger (its identity is stable); the
    trigger Airflow rebuilds from the database fires after a change at the Source; the event,
    submitted as the triggerer submits it, records an Asset event and queues a run of the DAG."""
    from airflow.models.asset import AssetDagRunQueue, AssetEvent
    from airflow.models.trigger import Trigger
    from airflow.triggers.base import TriggerEvent
    from airflow.utils.session import create_session
    from sqlalchemy import select

    monkeypatch.setenv("RESOURCESYNC_MIRROR_DIR", str(tmp_path / "mirror"))
    dag = load_example_dag("incremental_on_change")
    assert all(task.execution_timeout for task in dag.tasks)  # no task runs for ever
    [asset] = dag.timetable.asset_condition.objects
    [watcher] = asset.watchers
    assert watcher.trigger.serialize() == (
        "airflow_provider_resourcesync.triggers.event.ResourceSyncChangeEventTrigger",
        {"change_list_url": None, "resourcesync_conn_id": "resourcesync_default",
         "poll_interval": 60.0})
    register(dag)  # paused at creation: no watcher runs for a paused DAG
    pause(dag.dag_id, False)
    request.addfinalizer(lambda: pause(dag.dag_id, True))  # later runs parse the DAGs folder
    register(dag)
    register(load_example_dag("incremental_on_change"))  # parsed again: the same trigger

    def ours() -> list[Trigger]:
        with create_session() as session:
            rows = session.scalars(select(Trigger).where(
                Trigger.classpath == watcher.trigger.serialize()[0])).all()
            return [row for row in rows if any(a.name == asset.name for a in row.assets)]

    [row] = ours()
    trigger = resolve_name(row.classpath)(**{**row.kwargs, "poll_interval": 0.05})

    async def first_event() -> TriggerEvent:
        async with watching(trigger) as watch:
            await watch.until(lambda: len(statuses(source, source.change_list_url)) >= 2)
            change(source, "new.txt")
            await watch.until(lambda: bool(watch.events))
            return TriggerEvent(watch.events[0])

    event = asyncio.run(first_event())
    assert event.payload["changed"] == [source.change_list_url]
    Trigger.submit_event(row.id, event)
    with create_session() as session:
        extras = [recorded.extra for recorded in session.scalars(select(AssetEvent))
                  if recorded.asset.name == asset.name]
        queued = session.scalars(select(AssetDagRunQueue.target_dag_id)).all()
    assert extras == [{"from_trigger": True, "payload": event.payload}]
    assert dag.dag_id in queued
    assert [r.id for r in ours()] == [row.id]
