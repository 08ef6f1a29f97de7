"""The mirror's own state: saved as ResourceSync documents, loaded back through SQLite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from airflow_provider_resourcesync.errors import DocumentError, InvalidValueError
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.protocol.model import DocumentKind
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.validate import has_errors, validate_source
from airflow_provider_resourcesync.storage.base import Destination, ObjectInfo
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.writer import (
    CAPABILITY_LIST,
    CHANGE_LIST_INDEX,
    CHANGES,
    CHECKPOINT,
    DESCRIPTION,
    RESOURCE_LIST,
    MirrorState,
    ObjectRecord,
    saved_checkpoint,
)
from airflow_provider_resourcesync.writer import journal as journal_module

T0 = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
T1 = T0 + timedelta(hours=1)
T2 = T0 + timedelta(hours=2)
US = timedelta(microseconds=1)


def record(n: int, *, length: int | None = None) -> ObjectRecord:
    uri = f"https://example.org/r/{n:06d}" + ("?é=1" if n % 7 == 0 else "")
    return ObjectRecord(uri=uri, key=f"https/example.org/r/{n:06d}",
                        length=n if length is None else length,
                        hashes=Hashes.of(md5=f"{n:032x}", sha_256=f"{n:064x}"),
                        lastmod=T0 - timedelta(days=1, microseconds=n) if n % 5 else None,
                        type="text/plain" if n % 3 else None)


class Clock:
    """The mirror's clock in these tests: ``now``, a microsecond later at each reading."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        self.now += US
        return self.now


@pytest.fixture(params=["local", "s3"])
def destination(request: pytest.FixtureRequest) -> Destination:
    return request.getfixturevalue(request.param)


def documents(destination: Destination) -> Iterator[tuple[str, bytes]]:
    for key in sorted(destination.keys(RESERVED_PREFIX)):
        data = destination.read_bytes(key)
        assert data is not None
        yield key, data


def assert_documents_validate(destination: Destination) -> None:
    for key, data in documents(destination):
        if key.endswith(".xml"):
            findings = validate_source(data, url=key)
            assert not has_errors(findings), (key, [str(f) for f in findings])


def test_save_then_load_sees_every_record(destination: Destination) -> None:
    records = [record(n) for n in range(25)]
    with MirrorState.load(destination) as state:
        assert len(state) == 0 and state.checkpoint() is None
        for item in reversed(records):
            state.put(item)
        state.save(checkpoint={"position": "x"})
    with MirrorState.load(destination) as state:
        assert len(state) == 25
        assert list(state.records()) == records  # ordered by URI
        assert state.get(records[7].uri) == records[7]
        assert state.get("https://example.org/nothing") is None
        assert state.checkpoint() == {"position": "x"}
    assert_documents_validate(destination)


def test_the_resource_list_republishes_with_via_links(destination: Destination) -> None:
    clock = Clock(T0)
    with MirrorState.load(destination, clock=clock) as state:
        for n in range(1, 4):
            state.put(record(n))
        state.save(checkpoint={})
    document = read_document(destination.read_bytes(RESOURCE_LIST) or b"")
    assert document.kind is DocumentKind.RESOURCE_LIST
    # dated by the mirror's clock, as its Change Lists are: no gap between them
    assert document.head.md is not None and document.head.md.at == clock.now
    assert document.head.namespaces["mirror"] == "urn:airflow-provider-resourcesync:mirror"
    assert document.head.up == destination.object_url(CAPABILITY_LIST)
    for n, entry in enumerate(document.entries, start=1):
        item = record(n)
        assert entry.loc == destination.object_url(item.key)
        assert entry.lastmod == clock.now  # when the mirror's copy changed
        assert entry.md is not None
        assert (entry.md.hash, entry.md.length, entry.md.type) == (
            item.hashes, item.length, item.type)
        (via,) = entry.links_for("via")
        assert (via.href, via.hash, via.length, via.modified, via.type) == (
            item.uri, item.hashes, item.length, item.lastmod, item.type)
    capabilities = read_document(destination.read_bytes(CAPABILITY_LIST) or b"")
    assert capabilities.kind is DocumentKind.CAPABILITY_LIST
    assert capabilities.head.up == destination.object_url(DESCRIPTION)
    assert [e.loc for e in capabilities] == [destination.object_url(RESOURCE_LIST),
                                             destination.object_url(CHANGE_LIST_INDEX)]
    description = read_document(destination.read_bytes(DESCRIPTION) or b"")
    assert description.kind is DocumentKind.SOURCE_DESCRIPTION
    assert [e.loc for e in description] == [destination.object_url(CAPABILITY_LIST)]
    assert_documents_validate(destination)


def test_public_base_url_for_republishing(local: LocalDestination) -> None:
    item = ObjectRecord("https://example.org/a b", "https/example.org/a%20b", 1, Hashes(()))
    with MirrorState.load(local, public_base_url="https://mirror.example.net/data") as state:
        state.put(item)
        state.save(checkpoint={})
    document = read_document(local.read_bytes(RESOURCE_LIST) or b"")
    # the key's own '%' is escaped: an HTTP server decodes the path back to the key
    assert [e.loc for e in document] == ["https://mirror.example.net/data/https/example.org/a%2520b"]
    assert document.head.up == "https://mirror.example.net/data/" + quote(CAPABILITY_LIST)
    with MirrorState.load(local) as state:  # kept by a later run that names none
        assert list(state.records()) == [item]
        state.save(checkpoint={})
    assert read_document(local.read_bytes(RESOURCE_LIST) or b"").entries[0].loc.startswith(
        "https://mirror.example.net/data/")
    with MirrorState.load(local, public_base_url="http://elsewhere.example/") as state:
        assert list(state.records()) == [item]  # the base may change between runs
        state.save(checkpoint={})
    assert read_document(local.read_bytes(RESOURCE_LIST) or b"").entries[0].loc.startswith(
        "http://elsewhere.example/https/")


@pytest.mark.parametrize("url", ["mirror.example.net/data", "ftp://mirror.example.net/",
                                 "https://mirror.example.net/?page=1", "https:///data/"])
def test_a_public_url_that_cannot_be_a_base_is_refused(local: LocalDestination, url: str) -> None:
    with pytest.raises(InvalidValueError, match="public URL"):
        MirrorState.load(local, public_base_url=url)


def test_lastmod_moves_only_when_the_copy_changes(local: LocalDestination) -> None:
    clock = Clock(T0)
    with MirrorState.load(local, clock=clock) as state:
        state.put(record(1))
        state.put(record(2))
        state.save(checkpoint={})
    first = clock.now
    clock.now = T1
    with MirrorState.load(local, clock=clock) as state:
        state.put(record(1))  # the same again: a skip-unchanged re-baseline
        state.put(record(2, length=99))
        state.save(checkpoint={})
    entries = read_document(local.read_bytes(RESOURCE_LIST) or b"").entries
    assert [e.lastmod for e in entries] == [first, clock.now]


def test_records_past_the_entry_limit_split_and_load_back(local: LocalDestination) -> None:
    """Past the most entries a document holds it is split (section 7's 50,000, given as 500
    here: ``tests/protocol/test_split.py`` holds the default to 50,000; section 10.2, 12.2);
    what the state holds in memory loading sixty thousand is measured by
    ``benchmarks/memory.py``."""
    count, most = 600, 500
    clock = Clock(T0)
    with MirrorState.load(local, clock=clock, max_entries=most) as state:
        state.save(checkpoint={})  # the first save: no Change List
        for n in range(count):
            state.put(record(n))
        state.save(checkpoint={"n": count})
    # the run's Change List is split too, and the Change List Index lists its parts (12.2)
    index, lists = change_lists(local)
    assert [key for key, _ in lists] == [stamp(clock.now)[:-4] + f"-0000{n}.xml" for n in (1, 2)]
    assert sum(len(document) for _, document in lists) == count
    index = read_document(local.read_bytes(RESOURCE_LIST) or b"")
    assert index.kind is DocumentKind.RESOURCE_LIST_INDEX
    parts = sorted(local.keys(RESERVED_PREFIX + "resourcelist-"))
    assert [e.loc for e in index] == [local.object_url(key) for key in parts]
    assert len(parts) == 2
    for key in (RESOURCE_LIST, *parts):
        with local.open(key) as stream:
            assert not has_errors(validate_source(stream, url=key))

    with MirrorState.load(local, max_entries=most) as state:
        assert len(state) == count
        assert sum(1 for _ in state.records()) == count
        assert state.get(record(543).uri) == record(543)
        # shrinking back to one document drops the parts
        for n in range(10, count):
            state.remove(record(n).uri)
        state.save(checkpoint={})
    assert list(local.keys(RESERVED_PREFIX + "resourcelist-")) == []
    with MirrorState.load(local) as state:
        assert len(state) == 10


def test_checkpoint_round_trip_and_file(destination: Destination) -> None:
    checkpoint = {"version": 1, "position": {"at": "2024-01-02T03:04:05Z", "done": 3},
                  "list": "https://example.org/changelist.xml", "ü": None}
    clock = Clock(T1)
    with MirrorState.load(destination, clock=clock) as state:
        state.save(checkpoint=checkpoint)
        assert state.checkpoint() == checkpoint
    with MirrorState.load(destination) as state:
        assert state.checkpoint() == checkpoint
    stored = json.loads(destination.read_bytes(CHECKPOINT) or b"")
    assert stored["checkpoint"] == checkpoint
    assert stored["saved_at"] == "2024-01-02T04:04:05.000001Z"  # by the mirror's clock


def test_unseen_and_removal(destination: Destination) -> None:
    with MirrorState.load(destination) as state:
        for n in range(6):
            state.put(record(n))
        state.save(checkpoint={})
    with MirrorState.load(destination) as state:
        for uri in [record(n).uri for n in (0, 2, 4)] + ["https://example.org/new"]:
            state.mark_seen(uri)
        assert list(state.unseen()) == [record(n).uri for n in (1, 3, 5)]
        state.mark_seen(record(3).uri)
        assert list(state.unseen()) == [record(1).uri, record(5).uri]
        for uri in state.unseen():  # removing while iterating is fine
            state.remove(uri)
        assert list(state.unseen()) == []
        assert state.get(record(1).uri) is None and len(state) == 4
        state.save(checkpoint={})
    with MirrorState.load(destination) as state:
        assert [r.uri for r in state.records()] == [record(n).uri for n in (0, 2, 3, 4)]


def published(destination: Destination, url: str) -> tuple[str, Any]:
    """The key and the document at the mirror's ``url``."""
    key = url[len(destination.url):]
    if isinstance(destination, LocalDestination):
        key = key.replace("%25", "%")
    return key, read_document(destination.read_bytes(key) or b"")


def change_lists(destination: Destination) -> tuple[Any, list[tuple[str, Any]]]:
    """The Change List Index the Capability List points to, and the lists it points to."""
    capabilities = read_document(destination.read_bytes(CAPABILITY_LIST) or b"")
    (entry,) = [e for e in capabilities if e.md is not None and e.md.capability == "changelist"]
    key, index = published(destination, entry.loc)
    assert key == CHANGE_LIST_INDEX and index.kind is DocumentKind.CHANGE_LIST_INDEX
    return index, [published(destination, listed.loc) for listed in index]


def change_list(destination: Destination) -> tuple[str, Any]:
    """The key and document of the latest Change List."""
    return change_lists(destination)[1][-1]


def stamp(when: datetime) -> str:
    return CHANGES + when.strftime("%Y%m%dT%H%M%S.%fZ") + ".xml"


def test_a_change_list_per_run_after_the_first(destination: Destination) -> None:
    clock = Clock(T0)
    with MirrorState.load(destination, clock=clock) as state:
        state.put(record(1))
        state.put(record(2))
        state.save(checkpoint={})  # the first save: its Resource List is the baseline
    first = clock.now
    assert list(destination.keys(CHANGES)) == []
    index = read_document(destination.read_bytes(CHANGE_LIST_INDEX) or b"")  # lists none yet
    assert index.entries == [] and index.head.md is not None and index.head.md.from_ == first
    clock.now = T1
    with MirrorState.load(destination, clock=clock) as state:
        state.put(record(1, length=50))
        state.remove(record(2).uri)
        state.put(record(3))
        state.put(record(1, length=50))  # the same again: no change
        state.put(record(4))
        state.remove(record(4).uri)  # created and deleted in one run: a delete
        state.save(checkpoint={})
        second = clock.now
        key, document = change_list(destination)
        assert key == stamp(second)
        assert (document.head.md.from_, document.head.md.until) == (first, second)
        # in the order the mirror changed, dated by its clock (14.8's examples)
        assert [(e.md.change, e.md.datetime) for e in document] == [
            ("updated", T1 + US), ("deleted", T1 + 2 * US), ("created", T1 + 3 * US),
            ("deleted", T1 + 6 * US)]
        updated, deleted, created, _ = document.entries
        assert updated.loc == destination.object_url(record(1).key)
        assert updated.md.length == 50 and updated.lastmod == second
        (via,) = updated.links_for("via")
        assert (via.href, via.length, via.hash, via.modified) == (
            record(1).uri, 50, record(1).hashes, record(1).lastmod)
        assert deleted.loc == destination.object_url(record(2).key)
        assert deleted.md.hash is None and deleted.links_for("via")[0].href == record(2).uri
        assert created.links_for("via")[0].href == record(3).uri
        state.save(checkpoint={})  # no changes: no new list
        assert change_list(destination)[0] == key
    clock.now = T2
    with MirrorState.load(destination, clock=clock) as state:
        state.put(record(5))
        state.save(checkpoint={})
    index, lists = change_lists(destination)
    # 12.2: the lists in forward chronological order, each from where the one before ended,
    # not from the save that changed nothing (that would leave its time covered by none)
    assert [key for key, _ in lists] == [key, stamp(clock.now)]
    assert [(e.md.from_, e.md.until) for e in index] == [(first, second), (second, clock.now)]
    assert (index.head.md.from_, index.head.md.until) == (first, clock.now)
    assert_documents_validate(destination)


def runs_of_one_change(destination: Destination, runs: int) -> Clock:
    """A first save, then ``runs`` saves of one created resource each, an hour apart."""
    clock = Clock(T0)
    for hour in range(runs + 1):
        clock.now = T0 + timedelta(hours=hour)
        with MirrorState.load(destination, clock=clock) as state:
            state.put(record(hour))
            state.save(checkpoint={})
    return clock


def test_a_lost_change_list_index_is_rebuilt_from_the_lists(destination: Destination) -> None:
    runs_of_one_change(destination, 2)
    destination.delete(CHANGE_LIST_INDEX)
    runs_of_one_change(destination, 3)  # the same first save and runs, and one more
    _, lists = change_lists(destination)
    assert [key for key, _ in lists] == sorted(destination.keys(CHANGES))
    assert [[e.loc for e in document] for _, document in lists] == [
        [destination.object_url(record(hour).key)] for hour in (1, 2, 3)]
    assert_documents_validate(destination)


def test_past_the_index_limit_the_oldest_change_lists_go(
        local: LocalDestination, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_module, "MAX_ENTRIES", 2)  # section 7's 50,000, made small
    runs_of_one_change(local, 3)
    _, lists = change_lists(local)
    assert [key for key, _ in lists] == sorted(local.keys(CHANGES))
    assert [[e.loc for e in document] for _, document in lists] == [
        [local.object_url(record(hour).key)] for hour in (2, 3)]


def test_refused_saves_write_nothing(local: LocalDestination) -> None:
    with MirrorState.load(local) as state:
        state.put(record(1))
        state.save(checkpoint={"a": 1})
        before = dict(documents(local))
        with pytest.raises(InvalidValueError, match="JSON"):
            state.save(checkpoint={"a": object()})
        with pytest.raises(InvalidValueError):
            state.put(ObjectRecord("https://x/", "k", 1, Hashes(()), T0.replace(tzinfo=None)))
        assert dict(documents(local)) == before
        assert state.checkpoint() == {"a": 1}


def test_threads_share_one_state(local: LocalDestination) -> None:
    with MirrorState.load(local) as state:
        errors: list[BaseException] = []

        def work(worker: int) -> None:
            try:
                for n in range(worker, 2_000, 8):
                    state.put(record(n))
                    assert state.get(record(n).uri) == record(n)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [] and len(state) == 2_000


def test_records_held_back_for_batching_are_seen_by_every_read(local: LocalDestination) -> None:
    """Puts are written in batches: whatever was put is read back at once, removed, put again
    and saved in the order it happened, across batch boundaries."""
    with MirrorState.load(local) as state:
        for n in range(600):
            state.put(record(n))
            assert state.get(record(n).uri) == record(n)
        assert len(state) == 600
        state.remove(record(599).uri)
        state.put(record(5, length=55))  # held back again after the removal wrote the batch
        assert state.get(record(599).uri) is None
        assert state.get(record(5).uri) == record(5, length=55)
        state.put(record(599))
        state.remove(record(599).uri)
        assert [r.uri for r in state.records()][-2:] == [record(597).uri, record(598).uri]
        state.save(checkpoint={})
    with MirrorState.load(local) as state:
        assert len(state) == 599
        assert state.get(record(5).uri) == record(5, length=55)
        assert state.get(record(599).uri) is None


_KILLED_RUN = """
import os, signal, sys
from tests.writer.test_mirror_state import record
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.writer import MirrorState

state = MirrorState.load(LocalDestination(sys.argv[1]))
for n in range(int(sys.argv[2])):
    state.put(record(n))
assert len(state) == int(sys.argv[2])
for fd in os.listdir("/proc/self/fd"):
    try:
        print(os.readlink(f"/proc/self/fd/{fd}"), flush=True)
    except OSError:  # the listing's own descriptor, closed by now
        pass
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_run_leaves_no_state_file_behind(tmp_path: Any) -> None:
    """The state spills past its cache into a temporary file that has no name from the start:
    a task killed mid-run (Airflow's SIGKILL after a timeout) leaves nothing in the temp dir."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = os.environ | {"TMPDIR": str(scratch), "SQLITE_TMPDIR": str(scratch)}
    run = subprocess.run([sys.executable, "-c", _KILLED_RUN, str(tmp_path / "mirror"), "120000"],
                         env=env, capture_output=True, text=True, timeout=300,
                         cwd=Path(__file__).parents[2])
    assert run.returncode == -signal.SIGKILL, run.stderr
    spilled = [line for line in run.stdout.splitlines() if line.startswith(str(scratch))]
    assert spilled and all(line.endswith("(deleted)") for line in spilled), run.stdout
    assert list(scratch.iterdir()) == []


def test_a_resource_list_not_written_by_the_mirror_is_refused(local: LocalDestination) -> None:
    local.write_bytes(RESOURCE_LIST, b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="resourcelist" at="2024-01-01T00:00:00Z"/>
  <url><loc>https://example.org/a</loc><rs:md length="1"/></url>
</urlset>""", "application/xml")
    with pytest.raises(DocumentError, match="via"):
        MirrorState.load(local)
    local.write_bytes(CHECKPOINT, b"{not json", "application/json")
    with pytest.raises(DocumentError, match="checkpoint"):
        MirrorState.load(local)


def test_object_record_and_info(local: LocalDestination) -> None:
    item = record(3)
    assert ObjectRecord.of(item.key, item.info) == item
    assert item.info == ObjectInfo(item.uri, item.length, item.hashes, item.lastmod, item.type)
    with local.stage(item.key) as staged:
        staged.commit(item.info)
    assert local.info(item.key) == item.info



def test_the_saved_checkpoint_is_read_alone(tmp_path: Any) -> None:
    destination = LocalDestination(tmp_path)
    assert saved_checkpoint(destination) is None
    with MirrorState.load(destination) as state:
        state.save(checkpoint={"kind": "baseline"})
    assert saved_checkpoint(destination) == {"kind": "baseline"}
    destination.write_bytes(CHECKPOINT, b'{"version": 1}', "application/json")
    with pytest.raises(DocumentError, match="checkpoint is not readable"):
        saved_checkpoint(destination)
