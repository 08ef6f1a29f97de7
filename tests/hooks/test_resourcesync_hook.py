"""The hook reads real Airflow connections (``AIRFLOW_CONN_*``) and talks to a loopback Source."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from airflow.sdk import Connection

from airflow_provider_resourcesync.client.async_client import AsyncResourceSyncClient
from airflow_provider_resourcesync.client.policy import ClientPolicy, Credentials
from airflow_provider_resourcesync.errors import ConfigurationError
from airflow_provider_resourcesync.hooks.resourcesync import (
    WATCH_MAX_DOCUMENT_BYTES,
    ResourceSyncHook,
    policy_from_connection,
)
from airflow_provider_resourcesync.protocol.model import Document, Entry, Head, Link, Metadata
from airflow_provider_resourcesync.protocol.writer import document_bytes
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

RESOURCES = {"a.txt": b"resource a\n", "b.txt": b"resource b\n"}
FAST = {"allow_private": True, "max_tries": 1}


@pytest.fixture
def source() -> Iterator[ResourceSyncSource]:
    with SourceServer(max_lifetime=60) as server:
        published = ResourceSyncSource(server, resources=RESOURCES)
        published.publish()
        yield published


@pytest.fixture
def other() -> Iterator[SourceServer]:
    """A second origin (another port): a mirror, or where a redirect leads."""
    with SourceServer(max_lifetime=60) as server:
        server.put("/copy", RESOURCES["a.txt"], "text/plain")
        yield server


def define(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: Any) -> ResourceSyncHook:
    """Define a connection the way deployments do, in an environment variable, and a hook on it."""
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}",
                       json.dumps({"conn_type": "resourcesync", **fields}))
    return ResourceSyncHook(resourcesync_conn_id=conn_id)


def dead_url() -> str:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/"


# -- the policy from the connection ------------------------------------------------------------

def test_every_field_reaches_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = define(monkeypatch, "every_field", host="https://example.org/dataset1/", extra={
        "token": "s3cret-token", "headers": {"X-Api-Key": "k3y"}, "user_agent": "mirror/1.0",
        "connect_timeout": 2.5, "read_timeout": 30, "request_timeout": 120,
        "retry_budget": "300", "max_tries": 2, "concurrency": 4, "max_document_bytes": 5000,
        "allowed_hosts": "cdn.example.org, Mirror.Example.net:8443, [::1]:8080",
        "allow_private": True, "verify_tls": False})
    assert hook.base_url == "https://example.org/dataset1/"
    assert hook.policy == ClientPolicy(
        connect_timeout=2.5, read_timeout=30, request_timeout=120, retry_budget=300,
        max_tries=2, concurrency_per_host=4, max_document_bytes=5000, verify=False,
        user_agent="mirror/1.0",
        credentials=Credentials("https://example.org/dataset1/", token="s3cret-token",
                                headers=(("X-Api-Key", "k3y"),)),
        allowed_hosts=frozenset({"cdn.example.org", "mirror.example.net:8443", "[::1]:8080"}),
        allow_private=True)


def test_watches_cap_documents_lower_unless_the_connection_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29: a watch reads its documents at every poll; an endless Change List cost the
    whole 1 GiB cap each time, and the cap was not settable."""
    define(monkeypatch, "caps", host="https://example.org/")
    run, watch = ResourceSyncHook(resourcesync_conn_id="caps"), ResourceSyncHook(
        resourcesync_conn_id="caps", watch=True)
    assert run.policy.max_document_bytes == ClientPolicy().max_document_bytes == 2**30
    assert watch.policy.max_document_bytes == WATCH_MAX_DOCUMENT_BYTES == 256 * 2**20
    set_here = define(monkeypatch, "capped", host="https://example.org/",
                      extra={"max_document_bytes": "4096"})
    assert set_here.policy.max_document_bytes == 4096
    assert ResourceSyncHook(resourcesync_conn_id="capped",
                            watch=True).policy.max_document_bytes == 4096
    with pytest.raises(ConfigurationError, match="max_document_bytes must be at least 1"):
        _ = define(monkeypatch, "zero", host="https://example.org/",
                   extra={"max_document_bytes": 0}).policy


def test_login_and_password_are_basic_auth_and_defaults_stay(
        monkeypatch: pytest.MonkeyPatch) -> None:
    hook = define(monkeypatch, "basic", host="example.org", schema="http", port=8080,
                  login="user", password="pw")
    assert hook.base_url == "http://example.org:8080"
    assert hook.policy == ClientPolicy(
        credentials=Credentials("http://example.org:8080", username="user", password="pw"))


def test_form_values_as_strings_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # A connection URI's query, or a form, gives every extra as a string; empty means unset.
    monkeypatch.setenv(
        "AIRFLOW_CONN_AS_URI",
        "resourcesync://https%3A%2F%2Fexample.org%3A8443%2Fdataset1%2F?max_tries=3"
        "&allow_private=true&verify_tls=no&connect_timeout=1.5&read_timeout=&headers="
        "%7B%22X-Api-Key%22%3A%22k%22%7D")
    hook = ResourceSyncHook(resourcesync_conn_id="as_uri")
    assert hook.base_url == "https://example.org:8443/dataset1/"
    assert hook.policy == ClientPolicy(
        max_tries=3, allow_private=True, verify=False, connect_timeout=1.5,
        credentials=Credentials(hook.base_url, headers=(("X-Api-Key", "k"),)))


@pytest.mark.parametrize(("fields", "named"), [
    ({}, "host"),
    ({"host": "ftp://example.org/"}, "host"),
    ({"host": "https://user:pw@example.org/"}, "host"),
    ({"host": "example.org", "schema": "dataset1"}, "schema"),
    ({"host": "https://example.org/", "schema": "http"}, "schema"),
    ({"host": "https://example.org:8443/", "port": 9443}, "port 9443: host names port 8443"),
    ({"host": "https://example.org/", "login": "u", "extra": {"token": "t"}}, "login and token"),
    ({"host": "https://example.org/", "password": "pw"}, "password"),
    ({"host": "https://example.org/", "extra": {"max_tries": "many"}}, "max_tries"),
    ({"host": "https://example.org/", "extra": {"concurrency": 0}}, "concurrency"),
    ({"host": "https://example.org/", "extra": {"read_timeout": -1}}, "read_timeout"),
    ({"host": "https://example.org/", "extra": {"request_timeout": 0}}, "request_timeout"),
    ({"host": "https://example.org/", "extra": {"retry_budget": "soon"}}, "retry_budget"),
    ({"host": "https://example.org/", "extra": {"allowed_hosts": "cdn.example.org:http"}},
     "allowed_hosts"),
    ({"host": "https://example.org/", "extra": {"connect_timeout": True}}, "connect_timeout"),
    ({"host": "https://example.org/", "extra": {"allow_private": "maybe"}}, "allow_private"),
    ({"host": "https://example.org/", "extra": {"verify_tls": 2}}, "verify_tls"),
    ({"host": "https://example.org/", "extra": {"headers": "[1]"}}, "headers"),
    ({"host": "https://example.org/", "extra": {"headers": {"X-N": 1}}}, "headers"),
    ({"host": "https://example.org/", "extra": {"allowed_hosts": "https://cdn.example.org/"}},
     "allowed_hosts"),
    ({"host": "https://example.org/", "extra": {"token": 42}}, "token"),
])
def test_a_wrong_field_is_named(fields: dict[str, Any], named: str) -> None:
    extra = fields.pop("extra", None)
    connection = Connection(conn_id="wrong", conn_type="resourcesync",
                            extra=json.dumps(extra) if extra else None, **fields)
    with pytest.raises(ValueError, match=named) as raised:
        policy_from_connection(connection)
    assert "pw" not in str(raised.value)  # a password in a URL is never repeated


@pytest.mark.parametrize(("fields", "base_url"), [
    ({"host": "https://example.org/dataset1/", "port": 0}, "https://example.org/dataset1/"),
    ({"host": "https://example.org/dataset1/", "port": 443}, "https://example.org/dataset1/"),
    ({"host": "http://example.org/", "port": 80}, "http://example.org/"),
    ({"host": "http://127.0.0.1:8080/data/", "port": 8080}, "http://127.0.0.1:8080/data/"),
    ({"host": "https://example.org/data/", "port": 8443}, "https://example.org:8443/data/"),
    ({"host": "example.org", "schema": "http", "port": 0}, "http://example.org"),
])
def test_a_port_the_url_already_has_changes_nothing(fields: dict[str, Any], base_url: str
                                                    ) -> None:
    """Issue 29: Airflow 3.3's Test button sends the stored port, 0 for none, and is refused
    unless it matches; so a port the base URL already has, or 0, leaves the URL (and the origin
    its credentials go to) as written."""
    connection = Connection(conn_id="ported", conn_type="resourcesync", **fields)
    assert policy_from_connection(connection)[0] == base_url


# -- the client and discovery ------------------------------------------------------------------

def test_the_client_is_made_once_and_closed(monkeypatch: pytest.MonkeyPatch,
                                            source: ResourceSyncSource) -> None:
    hook = define(monkeypatch, "cached", host=source.server.base_url, extra=FAST)
    client = hook.get_conn()
    assert hook.get_conn() is client
    hook.close()
    assert hook.get_conn() is not client
    hook.close()


def test_discover_defaults_to_the_base_url(monkeypatch: pytest.MonkeyPatch,
                                           source: ResourceSyncSource) -> None:
    hook = define(monkeypatch, "discovering", host=source.server.url("/dataset1/"), extra=FAST)
    found = hook.discover()
    assert found.start_url == source.server.url("/dataset1/")
    assert found.source_description == source.source_description_url
    assert hook.discover(url=source.capability_list_url).route == "document"
    hook.close()


def test_test_connection_says_what_it_found(monkeypatch: pytest.MonkeyPatch,
                                            source: ResourceSyncSource) -> None:
    hook = define(monkeypatch, "published", host=source.server.base_url + "/", extra=FAST)
    ok, message = hook.test_connection()
    assert ok, message
    assert "by well-known" in message
    assert f"Source Description {source.source_description_url}" in message
    assert "1 Capability List" in message
    assert f"a baseline would read {source.resource_list_url}" in message
    assert "Warning" not in message and "refused" not in message


def test_test_connection_warns_of_a_capability_list_outside_the_path_given(
        monkeypatch: pytest.MonkeyPatch, source: ResourceSyncSource) -> None:
    """A typo in the path: discovery goes on to the origin's well-known URI and finds the
    Source there; the test passes (a baseline would run), and says what it would mirror."""
    hook = define(monkeypatch, "typo", host=source.server.url("/datset1/"), extra=FAST)
    ok, message = hook.test_connection()
    assert ok, message
    assert f"a baseline would read {source.resource_list_url}" in message
    assert "not under the connection's path /datset1/" in message


def test_test_connection_fails_naming_a_capability_list_on_a_host_not_allowed(
        monkeypatch: pytest.MonkeyPatch, source: ResourceSyncSource,
        other: SourceServer) -> None:
    """The Source Description found lists a Capability List on another host: a baseline would
    refuse it, so the test fails, naming it (before: "0 Capability List(s)", a pass)."""
    other.put("/.well-known/resourcesync", document_bytes(Document(
        Head(md=Metadata(capability="description")),
        [Entry(source.capability_list_url, md=Metadata(capability="capabilitylist"))])),
        "application/xml")
    hook = define(monkeypatch, "elsewhere", host=other.url("/"), extra=FAST)
    ok, message = hook.test_connection()
    assert not ok
    assert "a baseline would find no Capability List to read" in message
    assert f"refused: GET {source.capability_list_url} -> refused" in message


def test_test_connection_fails_clearly_on_a_dead_port(monkeypatch: pytest.MonkeyPatch) -> None:
    url = dead_url()
    ok, message = define(monkeypatch, "dead", host=url, extra=FAST).test_connection()
    assert not ok
    assert "no ResourceSync Source found" in message and "Connection refused" in message
    assert url in message


def test_test_connection_fails_clearly_on_a_wrong_field(monkeypatch: pytest.MonkeyPatch) -> None:
    ok, message = define(monkeypatch, "wrong_field", host="https://example.org/",
                         extra={"max_tries": "x"}).test_connection()
    assert not ok and "max_tries" in message


# -- credentials go to the Source's origin only ------------------------------------------------

@pytest.mark.parametrize(("fields", "authorization"), [
    ({"extra": {"token": "s3cret-token"}}, "Bearer s3cret-token"),
    ({"login": "user", "password": "pass-word"},
     "Basic " + base64.b64encode(b"user:pass-word").decode()),
], ids=["bearer", "basic"])
def test_credentials_reach_the_source_and_no_other_host(
        monkeypatch: pytest.MonkeyPatch, source: ResourceSyncSource, other: SourceServer,
        fields: dict[str, Any], authorization: str) -> None:
    extra = {**FAST, **fields.pop("extra", {}),
             "allowed_hosts": other.base_url.removeprefix("http://")}  # the mirror's host:port
    hook = define(monkeypatch, "credentials", host=source.server.base_url, extra=extra, **fields)
    source.server.redirect("/moved", other.url("/copy"))
    mirrored = Entry(source.uri("a.txt"), links=(Link("duplicate", other.url("/copy"), pri=1),))
    assert hook.test_connection()[0]
    client = hook.get_conn()
    client.download_entry(mirrored, io.BytesIO())  # from the mirror, on the other origin
    assert client.fetch_page(source.server.url("/moved")).url == other.url("/copy")
    hook.close()
    assert source.server.requests
    assert all(r.headers.get("authorization") == authorization for r in source.server.requests)
    assert other.count("/copy") == 2
    assert all("authorization" not in request.headers for request in other.requests)


def test_the_async_client_reads_the_connection_in_the_event_loop(
        monkeypatch: pytest.MonkeyPatch, source: ResourceSyncSource) -> None:
    hook = define(monkeypatch, "in_a_trigger", host=source.server.base_url,
                  extra={**FAST, "token": "async-token"})

    async def fetch() -> int:
        client = await hook.get_async_client()
        assert isinstance(client, AsyncResourceSyncClient)
        async with client:
            return (await client.fetch_page(source.capability_list_url)).status

    assert asyncio.run(fetch()) == 200
    assert source.server.requests[-1].headers["authorization"] == "Bearer async-token"
