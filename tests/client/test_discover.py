"""Discovery over real sockets (spec 6.3): every route, the trail, loops, refusals."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest

from airflow_provider_resourcesync.client.discover import (
    MAX_UP_HOPS,
    WELL_KNOWN_PATH,
    CapabilityListInfo,
    discover,
)
from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import DocumentError, SourceNotFoundError
from airflow_provider_resourcesync.protocol.model import (
    Capability,
    Document,
    Entry,
    Head,
    Link,
    Metadata,
)
from airflow_provider_resourcesync.protocol.writer import document_bytes
from airflow_provider_resourcesync.shell.next_step import next_step
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from .conftest import FAST


def put_document(server: SourceServer, path: str, capability: str, entries: list[Entry],
                 links: tuple[Link, ...] = ()) -> str:
    document = Document(Head(md=Metadata(capability=capability), links=links), entries)
    server.put(path, document_bytes(document), "application/xml")
    return server.url(path)


def path(url: str) -> str:
    return urlsplit(url).path


def the_capability_list(source: ResourceSyncSource) -> CapabilityListInfo:
    return CapabilityListInfo(source.capability_list_url, {
        Capability.RESOURCE_LIST: source.resource_list_url,
        Capability.CHANGE_LIST: source.change_list_url,
    }, None)


def published_without_well_known(source: ResourceSyncSource) -> None:
    source.publish()
    source.serve_discovery_pages()
    source.server.remove(WELL_KNOWN_PATH)


def test_a_resource_list_leads_up_to_the_source_description(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.publish()
    found = discover(client, source.resource_list_url)
    assert found.route == "document"
    assert found.start_url == source.resource_list_url
    assert found.source_description == source.source_description_url
    assert found.capability_lists == (the_capability_list(source),)
    assert found.steps == (
        f"GET {source.resource_list_url} -> Resource List",
        f"GET {source.capability_list_url} -> Capability List",
        f"GET {source.source_description_url} -> Source Description",
    )
    for url in (source.resource_list_url, source.capability_list_url,
                source.source_description_url):
        assert source.server.count(path(url)) == 1, url
    assert source.server.count("/robots.txt") == 0


def test_the_well_known_uri_comes_before_links_and_robots(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.publish()
    source.serve_discovery_pages()
    start = source.server.url("/index.html")
    found = discover(client, start)
    assert found.route == "well-known"
    assert found.source_description == source.source_description_url
    assert found.capability_lists == (the_capability_list(source),)
    assert found.steps[0] == f"GET {start} -> an HTML page"
    assert found.steps[1] == f"GET {source.source_description_url} -> Source Description"
    assert source.server.count("/robots.txt") == 0


def test_a_link_header_leads_to_the_capability_list(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    published_without_well_known(source)
    start = source.server.url("/page-with-header")
    found = discover(client, start)
    assert found.route == "link-header"
    assert found.source_description is None  # its up link is the removed well-known URI
    assert found.capability_lists == (the_capability_list(source),)
    assert found.steps[0].startswith(f"GET {start} -> not a ResourceSync document (malformed")
    assert found.steps[1:] == (
        f"GET {source.source_description_url} -> HTTP 404",
        f"Link header of {start} -> {source.capability_list_url}",
        f"GET {source.capability_list_url} -> Capability List",
    )
    assert source.server.count(WELL_KNOWN_PATH) == 1  # once, though the up link leads there
    assert source.server.count(path(start)) == 1


def test_an_html_link_leads_to_the_capability_list(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    published_without_well_known(source)
    start = source.server.url("/index.html")
    found = discover(client, start)
    assert found.route == "html-link"
    assert found.capability_lists == (the_capability_list(source),)
    assert f"Link header of {start} -> no rel=resourcesync link" in found.steps
    assert f"HTML of {start} -> {source.capability_list_url}" in found.steps
    assert source.server.count("/index.html") == 1


def test_robots_txt_keeps_the_sitemaps_that_are_resourcesync_documents(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    published_without_well_known(source)
    server = source.server
    server.put("/sitemap.xml", document_bytes(Document(Head(), [Entry(server.url("/page"))])),
               "application/xml")
    server.put("/robots.txt", f"Sitemap: /sitemap.xml\nSitemap: {source.resource_list_url}\n"
               .encode(), "text/plain")
    start = server.url("/")
    found = discover(client, start)
    assert found.route == "robots.txt"
    assert found.capability_lists == (the_capability_list(source),)
    assert found.steps == (
        f"GET {start} -> HTTP 404",
        f"GET {source.source_description_url} -> HTTP 404",
        f"Link header of {start} -> no response to read",
        f"HTML of {start} -> no response to read",
        f"GET {server.url('/robots.txt')} -> Sitemap: {server.url('/sitemap.xml')} "
        f"{source.resource_list_url}",
        f"GET {server.url('/sitemap.xml')} -> not a ResourceSync document (capability None)",
        f"GET {source.resource_list_url} -> Resource List",
        f"GET {source.capability_list_url} -> Capability List",
    )


def test_an_up_link_loop_ends(server: SourceServer, client: ResourceSyncClient) -> None:
    capability_list = server.url("/loop/capabilitylist.xml")
    resource_list = put_document(server, "/loop/resourcelist.xml", "resourcelist", [],
                                 (Link(rel="up", href=capability_list),))
    put_document(server, "/loop/capabilitylist.xml", "capabilitylist", [],
                 (Link(rel="up", href=resource_list),))
    found = discover(client, resource_list)
    assert found.route == "document" and found.source_description is None
    assert [info.url for info in found.capability_lists] == [capability_list]
    assert found.steps[-1] == f"{capability_list} : up link to {resource_list} loops, stopped"
    assert server.count("/loop/resourcelist.xml") == 1


def test_up_links_are_followed_a_few_times_only(
        server: SourceServer, client: ResourceSyncClient) -> None:
    for number in range(10):
        up = Link(rel="up", href=server.url(f"/chain/{number + 1}.xml"))
        put_document(server, f"/chain/{number}.xml", "resourcelist", [], (up,))
    found = discover(client, server.url("/chain/0.xml"))
    assert found.steps[-1] == (f"{MAX_UP_HOPS} up links followed, not following "
                               f"{server.url(f'/chain/{MAX_UP_HOPS + 1}.xml')}")
    assert server.count() == MAX_UP_HOPS + 1


def test_nothing_found_names_every_step_tried(
        server: SourceServer, client: ResourceSyncClient) -> None:
    start = server.url("/nothing-here")
    with pytest.raises(DocumentError) as raised:
        discover(client, start)
    error = raised.value
    assert error.url == start and error.section == "6.3"
    for tried in (f"GET {start} -> HTTP 404",
                  f"GET {server.url(WELL_KNOWN_PATH)} -> HTTP 404",
                  f"GET {server.url('/robots.txt')} -> HTTP 404"):
        assert tried in str(error)
    assert str(error).startswith(f"{start} : no ResourceSync Source found; tried ")
    assert f"found from {start}" not in str(error)  # the subject is named once, up front
    # the URL answered: its path is wrong, not the Source's documents (issue 29)
    assert isinstance(error, SourceNotFoundError) and not error.unreachable
    assert not error.rerun_helps and "host, port and path" in next_step(error)
    assert "tell its maintainers" not in next_step(error)


def test_a_url_that_gets_no_answer_points_at_the_connections_host_and_port() -> None:
    with socket.socket() as probe:  # a port free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        start = f"http://127.0.0.1:{probe.getsockname()[1]}/dataset1/"
    with ResourceSyncClient(ClientPolicy(**FAST), source_urls=[start]) as client, \
            pytest.raises(SourceNotFoundError) as raised:
        discover(client, start)
    error = raised.value
    assert error.unreachable and error.rerun_helps and "Connection refused" in str(error)
    assert next_step(error).startswith("check the connection's host and port")
    assert "re-run" in next_step(error) and "maintainers" not in next_step(error)


def test_a_capability_list_on_a_host_the_guard_refuses_is_skipped_with_a_note(
        source: ResourceSyncSource, client: ResourceSyncClient) -> None:
    source.publish()
    server = source.server
    elsewhere = server.url("/elsewhere/capabilitylist.xml").replace("127.0.0.1", "localhost")
    put_document(server, WELL_KNOWN_PATH, "description", [
        Entry(source.capability_list_url, md=Metadata(capability="capabilitylist")),
        Entry(elsewhere, md=Metadata(capability="capabilitylist")),
    ])
    allowed = client.guard.origins
    found = discover(client, server.url("/"))
    assert found.route == "well-known"
    assert found.capability_lists == (the_capability_list(source),)
    refused = [step for step in found.steps if step.startswith(f"GET {elsewhere} -> refused: ")]
    assert len(refused) == 1 and "not one of the Source's hosts" in refused[0]
    assert client.guard.origins == allowed
    assert server.count("/elsewhere/capabilitylist.xml") == 0
