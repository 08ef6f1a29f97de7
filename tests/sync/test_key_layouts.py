"""Readable mirror keys (issue 29, item 5): a new mirror names its files by the URIs' decoded
paths, local and on S3; a mirror made with escaped keys keeps them, run after run; the mirror's
own documents still name each file's URL."""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from lxml import etree

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import ConfigurationError
from airflow_provider_resourcesync.protocol.model import Entry
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.transfer import Transfer
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.writer import LAYOUT, RESOURCE_LIST, MirrorState

from .conftest import held
from .test_baseline import baseline
from .test_incremental import in_step, incremental

#: Resource names (served percent-encoded) -> their names in a readable key.
NAMES = {"space dir/a b.txt": "space dir/a b.txt", "caf\u00e9.txt": "caf\u00e9.txt",
         "a+b.txt": "a+b.txt", "c#d.txt": "c#d.txt", "100%.txt": "100%25.txt",
         "why?.txt": "why%3F.txt", "back\\slash": "back%5Cslash"}
ESCAPED = {"space%2520dir/a%2520b.txt", "caf%25C3%25A9.txt", "a%252Bb.txt", "c%2523d.txt",
           "100%2525.txt", "why%253F.txt", "back%255Cslash"}


@pytest.fixture
def named(server: SourceServer) -> ResourceSyncSource:
    created = ResourceSyncSource(server, resources={name: name.encode() * 3 for name in NAMES})
    created.publish()
    return created


def names(destination: Destination) -> set[str]:
    """The resources' names in their keys (after ``/res/``)."""
    return {key.partition("/res/")[2] for key in destination.keys("")}


def layout(destination: Destination) -> bytes | None:
    return destination.read_bytes(LAYOUT)


def changed(source: ResourceSyncSource) -> None:
    source.update("space dir/a b.txt", b"updated\n")
    source.create("new \u00e9 file.txt", b"new\n")
    source.delete("c#d.txt")
    source.publish()


def test_a_new_mirror_names_files_by_decoded_paths_and_keeps_them(
        client: ResourceSyncClient, destination: Destination,
        named: ResourceSyncSource) -> None:
    checkpoint = baseline(client, destination, named)
    assert names(destination) == set(NAMES.values())
    assert layout(destination) == b'{"key_layout": "readable"}'
    assert in_step(client, destination, named)

    changed(named)
    incremental(client, destination, named, checkpoint)
    assert names(destination) == set(NAMES.values()) - {"c#d.txt"} | {"new \u00e9 file.txt"}
    assert in_step(client, destination, named)
    with MirrorState.load(destination) as state:  # each key reads back to its resource's URI
        records = list(state.records())
    assert len(records) == len(named.state())
    for record in records:  # spelled as the key's rule does: a+b, not a%2Bb
        assert unquote(KeyMapper().uri(record.key)) == unquote(record.uri)


def test_a_mirror_made_with_escaped_keys_keeps_them(
        client: ResourceSyncClient, destination: Destination,
        named: ResourceSyncSource) -> None:
    # as made before layouts were recorded: escaped keys, and no record of them
    checkpoint = baseline(client, destination, named, mapper=KeyMapper(layout="escaped"))
    destination.delete(LAYOUT)
    assert names(destination) == ESCAPED

    changed(named)
    incremental(client, destination, named, checkpoint)  # no layout asked: the mirror's
    assert names(destination) == ESCAPED - {"c%2523d.txt"} | {"new%2520%25C3%25A9%2520file.txt"}
    assert layout(destination) == b'{"key_layout": "escaped"}'
    assert in_step(client, destination, named)
    baseline(client, destination, named, remove_missing=True)
    assert names(destination) == ESCAPED - {"c%2523d.txt"} | {"new%2520%25C3%25A9%2520file.txt"}

    with pytest.raises(ConfigurationError, match="keeps its keys in the 'escaped' layout"):
        baseline(client, destination, named, mapper=KeyMapper(layout="readable"))


def test_a_new_mirror_may_ask_for_escaped_keys(
        client: ResourceSyncClient, local: LocalDestination, named: ResourceSyncSource) -> None:
    baseline(client, local, named, mapper=KeyMapper(layout="escaped"))
    assert names(local) == ESCAPED and layout(local) == b'{"key_layout": "escaped"}'
    baseline(client, local, named)
    assert names(local) == ESCAPED


def test_the_mirror_as_a_source_names_each_file_by_its_url(
        client: ResourceSyncClient, local: LocalDestination, named: ResourceSyncSource) -> None:
    public = "https://mirror.example.net/"
    baseline(client, local, named, public_url=public)
    data = local.read_bytes(RESOURCE_LIST)
    assert data is not None
    namespace = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    locs = etree.fromstring(data).xpath("//sm:url/sm:loc/text()", namespaces=namespace)
    assert len(locs) == len(NAMES)
    files = {str(path.relative_to(local.root)) for path in local.root.rglob("*")
             if path.is_file() and ".resourcesync" not in path.parts}
    assert {unquote(loc.removeprefix(public)) for loc in locs} == files


def test_two_uris_of_one_readable_key_never_write_over_or_delete_each_other(
        client: ResourceSyncClient, destination: Destination, server: SourceServer) -> None:
    """RFC 3986 2.2: ``a%2Bb`` is another resource than ``a+b``, but the readable layout names
    both ``a+b``. The second is refused, naming the first; its removal leaves the first's file."""
    server.put("/d/a+b.txt", b"plus\n")
    server.put("/d/a%2Bb.txt", b"escaped plus\n")
    plus, escaped = server.url("/d/a+b.txt"), server.url("/d/a%2Bb.txt")
    mapper = KeyMapper(layout="readable")
    assert mapper.key(plus) == mapper.key(escaped)
    with MirrorState.load(destination) as state:
        transfer = Transfer(destination, state, mapper)
        assert transfer.mirror(client, Entry(plus)).kind == "fetched"
        refused = transfer.mirror(client, Entry(escaped))
        assert refused.kind == "failed" and not refused.rerun_helps
        assert plus in (refused.reason or "") and "key_layout='escaped'" in (refused.reason or "")
        assert transfer.remove(escaped).kind == "unchanged"
        assert held(destination) == {plus: b"plus\n"}
        assert transfer.remove(plus).kind == "removed"  # the escaped one may come now
        assert transfer.mirror(client, Entry(escaped)).kind == "fetched"
    assert held(destination) == {escaped: b"escaped plus\n"}
