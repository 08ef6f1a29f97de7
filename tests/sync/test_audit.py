"""The audit (spec 5.2) against a loopback Source: a tampered mirror is found out and repaired, a
deep audit sees bytes changed behind their description, and changes after the Resource List's
``at`` are part of what the mirror should hold."""

from __future__ import annotations

import json

import pytest

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import DocumentError
from airflow_provider_resourcesync.protocol.hashes import Digester
from airflow_provider_resourcesync.storage.base import ObjectInfo
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.audit import AuditReport, run_audit
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from .conftest import held, path_of

KEYS = KeyMapper()


def audit(client: ResourceSyncClient, local: LocalDestination, source: ResourceSyncSource,
          **options: bool) -> AuditReport:
    return run_audit(client, local, capability_list_url=source.capability_list_url, **options)


def write(local: LocalDestination, uri: str, body: bytes) -> None:
    """Put an object at ``uri``'s key by hand, described truthfully."""
    digester = Digester(("md5", "sha-256"))
    digester.update(body)
    with local.stage(KEYS.key(uri)) as staged:
        staged.file.write(body)
        staged.commit(ObjectInfo(uri, len(body), digester.hashes()))


@pytest.fixture
def mirrored(client: ResourceSyncClient, local: LocalDestination, source: ResourceSyncSource
             ) -> LocalDestination:
    run_baseline(client, local, capability_list_url=source.capability_list_url)
    return local


def test_a_tampered_mirror_is_found_out_and_repaired(
        client: ResourceSyncClient, mirrored: LocalDestination, source: ResourceSyncSource
        ) -> None:
    gone, changed = source.uri("r01.txt"), source.uri("r02.txt")
    mirrored.delete(KEYS.key(gone))
    write(mirrored, changed, b"not what the Source holds")
    write(mirrored, "https://elsewhere.example/stray", b"stray")
    (mirrored.root / "loose-file").write_bytes(b"no description")

    report = audit(client, mirrored, source)
    assert (report.listed, report.checked) == (20, 20)
    assert (report.missing, report.extra, report.mismatched, report.repaired) == (1, 2, 1, 0)
    assert report.examples == {
        "missing": [gone], "mismatched": [changed],
        "extra": sorted(["https://elsewhere.example/stray",
                         mirrored.object_url("loose-file")])}
    assert not report.clean and json.loads(json.dumps(report.to_json()))["clean"] is False

    repaired = audit(client, mirrored, source, repair=True)
    assert repaired.clean and repaired.repaired == 4
    assert held(mirrored) == source.state()
    assert audit(client, mirrored, source, deep=True).clean


def test_a_deep_audit_sees_bytes_changed_behind_their_description(
        client: ResourceSyncClient, mirrored: LocalDestination, source: ResourceSyncSource
        ) -> None:
    uri = source.uri("r03.txt")
    path = mirrored.root / KEYS.key(uri)
    path.write_bytes(path.read_bytes().upper())  # same length, stale description
    assert audit(client, mirrored, source).clean
    report = audit(client, mirrored, source, deep=True)
    assert report.mismatched == 1 and report.examples["mismatched"] == [uri]
    assert audit(client, mirrored, source, deep=True, repair=True).clean
    assert held(mirrored)[uri] == source.state()[uri]


def test_changes_after_the_resource_list_are_expected(
        client: ResourceSyncClient, mirrored: LocalDestination, source: ResourceSyncSource,
        server: SourceServer) -> None:
    listed = server.get_body(path_of(source.resource_list_url))
    source.create("new.txt", b"new")
    source.update("r04.txt", b"four again")
    source.delete("r05.txt")
    source.update("r06.txt", b"six again")
    source.delete("r06.txt")  # the last change wins
    source.publish()
    server.put(path_of(source.resource_list_url), listed, "application/xml")  # the old list

    report = audit(client, mirrored, source)
    assert (report.listed, report.checked) == (20, 19)
    assert report.examples == {"missing": [source.uri("new.txt")],
                               "mismatched": [source.uri("r04.txt")],
                               "extra": [source.uri("r05.txt"), source.uri("r06.txt")]}
    assert audit(client, mirrored, source, repair=True).repaired == 4
    assert held(mirrored) == source.state()
    assert audit(client, mirrored, source).clean


def test_an_audit_needs_a_resource_list(client: ResourceSyncClient, local: LocalDestination,
                                        server: SourceServer) -> None:
    source = ResourceSyncSource(server, resources={"a.txt": b"a"})
    source.publish(resource_list=False, resource_dump=True)
    with pytest.raises(DocumentError, match="compares with a Resource List"):
        audit(client, local, source)
