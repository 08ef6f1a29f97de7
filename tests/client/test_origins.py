"""Where fetches may go: the Source's origins (scheme, host and port) and the hosts the connection
allows, for a resource's ``loc`` and its ``duplicate`` links too; and the address a host name
resolved to when it was checked is the address connected to (no DNS rebinding)."""

from __future__ import annotations

import asyncio
import io
import logging
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpcore
import httpx
import pytest

from airflow_provider_resourcesync.client.addresses import checked_async_transport
from airflow_provider_resourcesync.client.async_client import AsyncResourceSyncClient
from airflow_provider_resourcesync.client.policy import ClientPolicy, allowed_origins
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import (
    ConfigurationError,
    FetchError,
    SyncIncompleteError,
    UnsafeContentError,
)
from airflow_provider_resourcesync.protocol.hashes import Digester
from airflow_provider_resourcesync.protocol.model import Document, Entry, Head, Link, Metadata
from airflow_provider_resourcesync.protocol.writer import document_bytes
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.testing import SourceServer

from .conftest import client_for

BODY = b"public resource\n"
SECRET = b"internal service answer\n"
#: A public address (not a documentation range: those are not global) nothing here serves.
PUBLIC = "93.184.215.14"


@pytest.fixture(autouse=True)
def _content(server: SourceServer) -> None:
    server.put("/res", BODY, "text/plain")


@pytest.fixture
def internal() -> Iterator[SourceServer]:
    """Another port of the Source's host: an internal service a hostile list points at."""
    with SourceServer(max_lifetime=120) as running:
        running.put("/secret", SECRET, "text/plain")
        yield running


def described(body: bytes) -> Metadata:
    digester = Digester(("md5",))
    digester.update(body)
    return Metadata(hash=digester.hashes(), length=len(body))


def host_port(server: SourceServer) -> str:
    return server.base_url.removeprefix("http://")


# -- resources and their duplicates ------------------------------------------------------------

def test_an_entry_on_another_port_is_refused_even_with_allow_private(
        server: SourceServer, internal: SourceServer) -> None:
    entry = Entry(internal.url("/secret"), md=described(SECRET))
    dest = io.BytesIO()
    with client_for(server) as client, pytest.raises(UnsafeContentError) as raised:
        client.download_entry(entry, dest)
    message = str(raised.value)
    assert message.startswith(internal.url("/secret"))
    assert f"add {host_port(internal)} to the connection's allowed hosts" in message
    assert server.base_url in message  # the allowed origins are named
    assert not raised.value.rerun_helps
    assert internal.requests == [] and dest.getvalue() == b""


def test_a_hostile_resource_list_writes_nothing_from_another_origin(
        server: SourceServer, internal: SourceServer, tmp_path: Path) -> None:
    at = datetime(2026, 3, 1, tzinfo=UTC)
    hostile = internal.url("/secret")
    resources = Document(Head(md=Metadata(capability="resourcelist", at=at)), [
        Entry(server.url("/res"), md=described(BODY)),
        Entry(hostile, md=described(SECRET))])
    server.put("/rl.xml", document_bytes(resources), "application/xml")
    capabilities = Document(Head(md=Metadata(capability="capabilitylist")), [
        Entry(server.url("/rl.xml"), md=Metadata(capability="resourcelist"))])
    server.put("/caps.xml", document_bytes(capabilities), "application/xml")
    local = LocalDestination(tmp_path / "mirror")
    with client_for(server) as client, pytest.raises(SyncIncompleteError,
                                                     match="allowed hosts"):
        run_baseline(client, local, capability_list_url=server.url("/caps.xml"))
    assert internal.requests == []
    keys = set(local.keys(""))
    assert KeyMapper().key(server.url("/res")) in keys
    assert KeyMapper().key(hostile) not in keys


def test_a_duplicate_on_another_port_is_skipped_with_a_warning_and_loc_used(
        server: SourceServer, internal: SourceServer, caplog: pytest.LogCaptureFixture) -> None:
    duplicate = internal.url("/secret")
    entry = Entry(server.url("/res"), md=described(BODY),
                  links=(Link("duplicate", duplicate, pri=1),))
    dest = io.BytesIO()
    with caplog.at_level(logging.WARNING), client_for(server) as client:
        download = client.download_entry(entry, dest)
    assert (download.url, dest.getvalue()) == (server.url("/res"), BODY)
    assert internal.requests == []
    warnings = [record.getMessage() for record in caplog.records
                if record.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert duplicate in warnings[0] and "refused by rule: fetches go only to" in warnings[0]


def test_a_duplicate_on_an_allowed_host_and_port_is_used(
        server: SourceServer, internal: SourceServer) -> None:
    entry = Entry(server.url("/gone"), md=described(SECRET),
                  links=(Link("duplicate", internal.url("/secret"), pri=1),))
    with client_for(server, allowed_hosts=frozenset({host_port(internal)})) as client:
        download = client.download_entry(entry, io.BytesIO())
    assert download.url == internal.url("/secret")
    assert server.count("/gone") == 0


def test_a_redirect_to_another_port_is_refused(server: SourceServer,
                                               internal: SourceServer) -> None:
    server.redirect("/res", internal.url("/secret"))
    with client_for(server) as client, pytest.raises(UnsafeContentError,
                                                     match="not one of the Source's hosts"):
        client.fetch_page(server.url("/res"))
    assert internal.requests == []


def test_a_url_with_user_info_is_never_fetched(server: SourceServer) -> None:
    url = server.url("/res").replace("http://", "http://user@")
    with client_for(server) as client, pytest.raises(UnsafeContentError, match="user name"):
        client.fetch_page(url)
    assert server.requests == []


@pytest.mark.parametrize(("entry", "expected"), [
    ("cdn.example.org", {("http", "cdn.example.org", 80), ("https", "cdn.example.org", 443)}),
    ("CDN.example.org:8443", {("http", "cdn.example.org", 8443),
                              ("https", "cdn.example.org", 8443)}),
    ("[::1]:8080", {("http", "::1", 8080), ("https", "::1", 8080)}),
    ("::1", {("http", "::1", 80), ("https", "::1", 443)}),
])
def test_an_allowed_host_is_a_name_on_the_default_ports_or_a_name_and_port(
        entry: str, expected: set[tuple[str, str, int]]) -> None:
    assert set(allowed_origins(entry)) == expected


@pytest.mark.parametrize("entry", ["https://cdn.example.org/", "cdn.example.org:http",
                                   "cdn.example.org:0", "cdn/path", "[::1"])
def test_an_allowed_host_that_is_not_one_is_a_configuration_error(entry: str) -> None:
    with pytest.raises(ConfigurationError, match="allowed_hosts"):
        ClientPolicy(allowed_hosts=frozenset({entry}))


def test_an_http_source_on_port_80_allows_its_https_upgrade_only() -> None:
    with ResourceSyncClient(source_urls=["http://example.org/dataset/"]) as client:
        assert client.guard.check_url("https://example.org/x") == ("https", "example.org", 443)
        for elsewhere in ("https://example.org:8443/x", "http://example.org:8080/x"):
            with pytest.raises(UnsafeContentError, match="allowed hosts"):
                client.guard.check_url(elsewhere)


# -- the address checked is the address connected to -------------------------------------------

@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int]]]:
    """``rebind.test`` resolves to a public address the first time and to 127.0.0.1 after
    (DNS rebinding); connections to anything but loopback are refused without leaving the
    machine. Yields the addresses connected to."""
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect
    answers = iter([PUBLIC])
    connected: list[tuple[str, int]] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if host != "rebind.test":
            return real_getaddrinfo(host, port, *args, **kwargs)
        address = next(answers, "127.0.0.1")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port)))]

    def connect(sock: socket.socket, address: Any) -> None:
        connected.append(address)
        if address[0] != "127.0.0.1":
            raise ConnectionRefusedError(f"no route to {address[0]} from the test")
        real_connect(sock, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    yield connected


def test_the_sync_client_connects_only_to_the_address_it_checked(
        server: SourceServer, rebinding: list[tuple[str, int]]) -> None:
    url = server.url("/res").replace("127.0.0.1", "rebind.test")
    with ResourceSyncClient(ClientPolicy(max_tries=1), source_urls=[url]) as client, \
            pytest.raises(FetchError):
        client.download(url, io.BytesIO())
    assert server.requests == []
    assert [address for address, _ in rebinding] == [PUBLIC]


def test_the_async_client_connects_only_to_the_address_it_checked(
        server: SourceServer, rebinding: list[tuple[str, int]]) -> None:
    url = server.url("/res").replace("127.0.0.1", "rebind.test")

    async def fetch() -> None:
        async with AsyncResourceSyncClient(ClientPolicy(max_tries=1), source_urls=[url]) as client:
            await client.fetch_page(url)

    with pytest.raises(FetchError):
        asyncio.run(fetch())
    assert server.requests == []
    assert [address for address, _ in rebinding] == [PUBLIC]


def test_the_async_transport_connects_to_the_addresses_its_check_accepts(
        server: SourceServer) -> None:
    """The transport under the async client: the URL and every address its host resolved to
    checked, then the exchange as httpx's transport makes it, httpcore's errors raised as
    httpx's (a body cut short, a refused connection)."""
    server.put("/cut", BODY, "text/plain")
    server.truncate("/cut")
    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))  # bound, never listening: connections to it are refused
    closed_port = refused.getsockname()[1]
    checked: list[tuple[str, list[str]]] = []

    async def exchanges() -> tuple[httpx.Response, BaseException, BaseException]:
        transport = checked_async_transport(
            True, httpx.Limits(), lambda url, addresses: checked.append((url, list(addresses))))
        async with httpx.AsyncClient(transport=transport) as http:
            response = await http.get(server.url("/res"))
            with pytest.raises(httpx.RemoteProtocolError) as cut:
                await http.get(server.url("/cut"))
            with pytest.raises(httpx.ConnectError) as unreached:
                await http.get(f"http://127.0.0.1:{closed_port}/res")
        return response, cut.value, unreached.value

    try:
        response, cut, unreached = asyncio.run(exchanges())
    finally:
        refused.close()
    assert (response.status_code, response.content) == (200, BODY)
    assert response.headers["content-type"].startswith("text/plain")
    assert isinstance(cut.__cause__, httpcore.RemoteProtocolError)
    assert isinstance(unreached.__cause__, httpcore.ConnectError)
    # one check per connection made (``/cut`` may go over the one ``/res`` left open)
    assert checked[0] == (server.url("/res"), ["127.0.0.1"])
    assert checked[-1] == (f"http://127.0.0.1:{closed_port}/res", ["127.0.0.1"])


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_name_resolving_to_a_private_address_is_refused_at_the_connection(
        server: SourceServer, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return real_getaddrinfo("127.0.0.1" if host == "private.test" else host, port,
                                *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    url = server.url("/res").replace("127.0.0.1", "private.test")

    async def fetch_async() -> None:
        async with AsyncResourceSyncClient(ClientPolicy(), source_urls=[url]) as client:
            await client.fetch_page(url)

    with pytest.raises(UnsafeContentError, match=r"non-public address 127\.0\.0\.1") as raised:
        if kind == "sync":
            with ResourceSyncClient(ClientPolicy(), source_urls=[url]) as client:
                client.fetch_page(url)
        else:
            asyncio.run(fetch_async())
    assert raised.value.url == url
    assert server.requests == []
