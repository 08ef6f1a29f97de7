"""Every list of a series links to the index that lists it (spec 10.1, 12.1, 13.1: a recommended
``<rs:ln rel="index">``): a mirror's Change Lists to its Change List Index, the parts of a save
split past 50,000 changes too (the index lists the parts), and the parts of a split Resource
List to the Resource List Index; a follower holding one finds the rest."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.protocol.model import Document, Root
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.validate import has_errors, validate_source
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.writer.record import ObjectRecord
from airflow_provider_resourcesync.writer.source_writer import SourceWriter

PUBLISHED = "https://mirror.example.org/"
ORIGIN = "https://origin.example.org/"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
#: Section 7's 50,000 entries a document, made small.
PART = 4


def record(number: int, version: int) -> ObjectRecord:
    body = f"{number} {version}".encode()
    return ObjectRecord(f"{ORIGIN}{number}", f"o/{number}", len(body),
                        Hashes.of(md5=hashlib.md5(body).hexdigest()),
                        T0 + timedelta(seconds=version))


def save(destination: LocalDestination, at: datetime, numbers: range, version: int) -> None:
    ticks = count()  # each change a microsecond after the one before: a part may end there
    with SourceWriter.load(destination, public_base_url=PUBLISHED, resource_list_max_age=None,
                           clock=lambda: at + timedelta(microseconds=next(ticks)),
                           max_entries=PART) as writer:
        for number in numbers:
            writer.put(record(number, version))
        writer.save(checkpoint={"version": version})


def read(path: Path) -> Document:
    with path.open("rb") as stream:
        assert not has_errors(validate_source(stream, url=str(path))), path
    return read_document(path.read_bytes())


def test_every_change_list_of_a_mirror_links_its_index_a_split_one_by_each_part(
        tmp_path: Path) -> None:
    destination = LocalDestination(tmp_path)
    documents = tmp_path / ".resourcesync"
    save(destination, T0, range(PART + 1), 0)  # a Resource List in two parts
    save(destination, T0 + timedelta(hours=1), range(3), 1)
    save(destination, T0 + timedelta(hours=2), range(PART + 1), 2)  # a split save

    index_url = PUBLISHED + ".resourcesync/changelist.xml"
    index = read(documents / "changelist.xml")
    lists = [entry.loc for entry in index]
    assert len(lists) == 3  # the small save's list and the split save's two parts
    for url in lists:
        held = read(documents / "changes" / url.rpartition("/")[2])
        assert held.head.root is Root.URLSET and held.head.index == index_url, url
    assert sum(len(read(documents / "changes" / url.rpartition("/")[2])) for url in lists) == (
        3 + PART + 1)

    resource_lists = read(documents / "resourcelist.xml")
    assert resource_lists.head.root is Root.SITEMAPINDEX and len(resource_lists.entries) == 2
    for part in resource_lists:
        held = read(documents / part.loc.rpartition("/")[2])
        assert held.head.index == PUBLISHED + ".resourcesync/resourcelist.xml", part.loc
