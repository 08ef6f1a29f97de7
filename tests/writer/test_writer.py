"""The Source writer for a collection served apart from its documents (a publisher's): each
``loc`` is the object's URI, its ``lastmod`` the object's, no ``via`` link; changes dated by the
caller; the Capability List lists what the caller adds; lookups after a reload come from the
index; everything written validates."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.protocol.model import Entry, Metadata
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.validate import has_errors, validate_document
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.writer.record import ObjectRecord
from airflow_provider_resourcesync.writer.source_writer import SourceWriter

SERVED = "https://cdn.example.org/bucket/"
PUBLISHED = "https://example.org/rs/"
LOCATION = "rs/"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def held(key: str, version: int, modified: datetime) -> ObjectRecord:
    body = f"{key} {version}".encode()
    digest = Hashes.of(md5=hashlib.md5(body).hexdigest())
    return ObjectRecord(SERVED + quote(key), key, len(body), digest, modified)


def open_writer(destination: Destination, at: datetime) -> SourceWriter:
    return SourceWriter.load(destination, location=LOCATION, public_base_url=PUBLISHED,
                             resources_url=SERVED, clock=lambda: at)


def document(destination: Destination, name: str) -> list[Entry]:
    data = destination.read_bytes(LOCATION + name)
    assert data is not None, name
    parsed = read_document(data)
    assert not has_errors(validate_document(parsed)), name
    return parsed.entries


def test_a_collection_served_apart_lists_its_objects_by_their_own_urls(
        destination: Destination) -> None:
    keys = ["a.txt", "b c/d.txt", "é.txt"]
    with open_writer(destination, T0) as writer:
        for key in keys:
            writer.put(held(key, 1, T0 - timedelta(days=1)))
        writer.save(checkpoint={"run": 1})
    listed = document(destination, "resourcelist.xml")
    assert [entry.loc for entry in listed] == sorted(SERVED + quote(key) for key in keys)
    assert all(not entry.links and entry.lastmod == T0 - timedelta(days=1) for entry in listed)

    dump = Entry(PUBLISHED + "changedump.xml", md=Metadata(capability="changedump"))
    t1 = T0 + timedelta(hours=1)
    with open_writer(destination, t1) as writer:
        assert writer.get(SERVED + quote("b c/d.txt")) == held("b c/d.txt", 1,
                                                              T0 - timedelta(days=1))
        writer.put(held("a.txt", 2, T0 + timedelta(minutes=30)),
                   when=T0 + timedelta(minutes=30))
        writer.remove(SERVED + quote("é.txt"), when=T0 + timedelta(minutes=10))
        writer.put(held("new.txt", 1, T0 + timedelta(minutes=20)),
                   when=T0 + timedelta(minutes=20))
        writer.save(checkpoint={"run": 2}, capabilities=[dump])
    capabilities = document(destination, "capabilitylist.xml")
    assert [entry.md.capability for entry in capabilities if entry.md] == [
        "resourcelist", "changelist", "changedump"]
    (listed_list,) = document(destination, "changelist.xml")
    changes = document(destination, listed_list.loc.removeprefix(PUBLISHED + LOCATION))
    # in forward chronological order (12.1), each dated by the caller
    assert [(entry.loc, entry.md.change, entry.md.datetime) for entry in changes if entry.md] == [
        (SERVED + quote("é.txt"), "deleted", T0 + timedelta(minutes=10)),
        (SERVED + "new.txt", "created", T0 + timedelta(minutes=20)),
        (SERVED + "a.txt", "updated", T0 + timedelta(minutes=30))]
    assert all(not entry.links for entry in changes)

    with open_writer(destination, t1 + timedelta(hours=1)) as writer:  # replayed from the lists
        assert writer.get(SERVED + quote("é.txt")) is None
        assert writer.get(SERVED + "a.txt") == held("a.txt", 2, T0 + timedelta(minutes=30))
        assert [record.key for record in writer.records()] == ["a.txt", "b c/d.txt", "new.txt"]



def test_a_save_in_two_halves_writes_what_goes_with_the_snapshot_before_listing_it(
        destination: Destination) -> None:
    """:meth:`SourceWriter.saving`: entering writes the Resource List (at a compaction), the
    block what goes with it (a Resource Dump), leaving the Capability List that lists both and
    the checkpoint; an error in the block writes nothing more, as a kill there would."""
    companion = Entry(PUBLISHED + "companion.xml", md=Metadata(capability="resourcedump"))
    with open_writer(destination, T0) as writer:
        for n in range(20):
            writer.put(held(f"{n}.txt", 0, T0))
        with writer.saving(checkpoint={"run": 1}) as saving:
            assert saving.snapshot_at() == T0  # the first save writes the Resource List
            assert destination.read_bytes(LOCATION + "resourcelist.xml") is not None
            assert destination.read_bytes(LOCATION + "capabilitylist.xml") is None
            saving.capabilities.append(companion)
    assert companion.loc in [entry.loc for entry in document(destination, "capabilitylist.xml")]

    t1 = T0 + timedelta(hours=1)
    with open_writer(destination, t1) as writer:
        writer.put(held("1.txt", 1, T0))
        try:
            with writer.saving(checkpoint={"run": 2}) as saving:
                assert saving.snapshot_at() is None  # a Change List, not a compaction
                raise RuntimeError("the companion failed")
        except RuntimeError:
            pass
    with open_writer(destination, t1) as writer:
        assert writer.checkpoint() == {"run": 1}  # the second save never finished
        assert writer.get(SERVED + "1.txt") == held("1.txt", 1, T0)  # its Change List stands
