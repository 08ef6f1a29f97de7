"""The hook discovers a loopback Source by each of the four discovery routes (spec 6.3) and walks
its Resource List, index and parts, to every resource the Source holds."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from airflow_provider_resourcesync.client.navigate import resource_list
from airflow_provider_resourcesync.hooks.resourcesync import ResourceSyncHook
from airflow_provider_resourcesync.protocol.model import Capability
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

RESOURCES = {f"item-{number:02d}.txt": f"item {number}\n".encode() for number in range(12)}
WELL_KNOWN = "/.well-known/resourcesync"


@pytest.fixture
def source() -> Iterator[ResourceSyncSource]:
    with SourceServer(max_lifetime=60) as server:
        published = ResourceSyncSource(server, resources=RESOURCES)
        published.publish(max_entries=5)  # a Resource List Index over three parts
        published.serve_discovery_pages()
        yield published


def only_robots(source: ResourceSyncSource) -> str:
    source.server.remove(WELL_KNOWN)
    return source.server.url("/robots-only-page")


ROUTES: dict[str, Callable[[ResourceSyncSource], str]] = {
    "well-known": lambda source: source.server.url("/"),
    "link-header": lambda source: (source.server.remove(WELL_KNOWN),
                                   source.server.url("/page-with-header"))[1],
    "html-link": lambda source: (source.server.remove(WELL_KNOWN),
                                 source.server.url("/index.html"))[1],
    "robots.txt": only_robots,
}


@pytest.mark.parametrize("route", list(ROUTES))
def test_the_hook_discovers_and_walks_the_source(
        route: str, source: ResourceSyncSource, monkeypatch: pytest.MonkeyPatch) -> None:
    start = ROUTES[route](source)
    monkeypatch.setenv("AIRFLOW_CONN_WALK", json.dumps({
        "conn_type": "resourcesync", "host": start, "extra": {"allow_private": True}}))
    hook = ResourceSyncHook(resourcesync_conn_id="walk")
    try:
        found = hook.discover()
        assert found.route == route
        [capability_list] = found.capability_lists
        assert capability_list.url == source.capability_list_url
        resource_list_url = capability_list.capabilities[Capability.RESOURCE_LIST]
        with resource_list(hook.get_conn(), resource_list_url) as walk:
            listed = {entry.loc: entry.md.length for entry in walk if entry.md}
            assert len(walk.urls) == 3
    finally:
        hook.close()
    assert listed == {uri: len(body) for uri, body in source.state().items()}
