"""The HTTP clients against a Source served over real sockets, with the faults real Sources have."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import io
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.cookiejar import CookieJar
from typing import Any

import httpx
import pytest

from airflow_provider_resourcesync.client.async_client import AsyncResourceSyncClient
from airflow_provider_resourcesync.client.policy import ClientPolicy, Credentials
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import (
    ContentMismatchError,
    FetchError,
    UnsafeContentError,
)
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.protocol.model import Entry, Link, Metadata
from airflow_provider_resourcesync.testing import SourceServer

from .conftest import FAST, client_for

BODY = b"resource body " * 1000
DOC = (b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
       b'xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcelist" '
       b'at="2026-01-01T00:00:00Z"/><url><loc>http://example.com/a</loc></url></urlset>')


@pytest.fixture
def server() -> Iterator[SourceServer]:
    with SourceServer(max_lifetime=120) as running:
        running.put("/res", BODY, "text/plain")
        running.put("/doc.xml", DOC, "application/xml")
        yield running


@pytest.fixture
def other() -> Iterator[SourceServer]:
    """A second origin: a mirror, or a host the Source must not send credentials to."""
    with SourceServer(max_lifetime=120) as running:
        running.put("/res", BODY, "text/plain")
        yield running


def expected(body: bytes = BODY) -> Metadata:
    return Metadata(length=len(body), hash=Hashes.parse(f"md5:{hashlib.md5(body).hexdigest()}"))


# -- conditional requests ----------------------------------------------------------------------

def test_an_unchanged_document_costs_one_304(server: SourceServer) -> None:
    with client_for(server) as client:
        first = client.fetch_document(server.url("/doc.xml"))
        second = client.fetch_document(server.url("/doc.xml"))
        assert not first.not_modified and second.not_modified
        assert second.path.read_bytes() == DOC
        assert client.read_document(server.url("/doc.xml")).entries[0].loc == (
            "http://example.com/a")
    assert server.count("/doc.xml") == 3
    assert server.count("/doc.xml", status=304) == 2
    conditional = server.requests[1].headers
    assert conditional["if-none-match"] and conditional["if-modified-since"]


def test_a_changed_document_is_fetched_again(server: SourceServer) -> None:
    with client_for(server) as client:
        client.fetch_document(server.url("/doc.xml"))
        server.put("/doc.xml", DOC.replace(b"/a<", b"/b<"), "application/xml")
        document = client.read_document(server.url("/doc.xml"))
    assert document.entries[0].loc == "http://example.com/b"
    assert server.count("/doc.xml", status=200) == 2


# -- retries ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fault", [
    lambda s: s.fail("/res", 429, headers={"Retry-After": "0"}),
    lambda s: s.fail("/res", 500, times=2),
    lambda s: s.fail("/res", 503),
    lambda s: s.truncate("/res"),
    lambda s: s.wrong_length("/res"),
    lambda s: s.drop("/res"),
    lambda s: s.corrupt("/res"),
], ids=["429", "500-twice", "503", "truncated", "wrong-length", "dropped", "corrupt"])
def test_every_fault_ends_in_a_retry_that_succeeds(server: SourceServer, fault: object) -> None:
    fault(server)  # type: ignore[operator]
    dest = io.BytesIO()
    with client_for(server) as client:
        download = client.download(server.url("/res"), dest, expected=expected())
    assert dest.getvalue() == BODY
    assert download.verified and download.length == len(BODY)
    assert server.count("/res") >= 2


def test_a_broken_body_counts_as_one_try(server: SourceServer) -> None:
    server.truncate("/res", times=3)
    with client_for(server) as client:  # four tries: three broken bodies, then the whole one
        client.download(server.url("/res"), io.BytesIO(), expected=expected())
    assert server.count("/res") == 4


def test_a_stalled_response_times_out_and_is_retried(server: SourceServer) -> None:
    server.stall("/res", 10.0)
    started = time.monotonic()
    with client_for(server, read_timeout=0.3) as client:
        client.download(server.url("/res"), io.BytesIO(), expected=expected())
    assert time.monotonic() - started < 8.0  # the read timeout cut the stalled try short


def test_retry_after_is_honoured(server: SourceServer) -> None:
    server.fail("/res", 429, headers={"Retry-After": "1"})
    started = time.monotonic()
    with client_for(server) as client:
        client.download(server.url("/res"), io.BytesIO())
    assert time.monotonic() - started >= 0.9


def test_a_retry_after_beyond_the_limit_is_a_clear_error(server: SourceServer) -> None:
    server.fail("/res", 503, headers={"Retry-After": "3600"})
    with client_for(server) as client, pytest.raises(FetchError, match="retry after 3600 s"):
        client.download(server.url("/res"), io.BytesIO())


def test_failing_for_good_names_url_status_and_tries(server: SourceServer) -> None:
    server.fail("/res", 500, times=10)
    with client_for(server) as client, pytest.raises(FetchError) as caught:
        client.download(server.url("/res"), io.BytesIO())
    assert caught.value.url == server.url("/res")
    assert (caught.value.status, caught.value.tries) == (500, 4)
    assert server.count("/res") == 4


@pytest.mark.parametrize("status", [404, 410])
def test_gone_resources_are_not_retried(server: SourceServer, status: int) -> None:
    server.remove("/res", status=status)
    with client_for(server) as client, pytest.raises(FetchError, match=f"HTTP {status}"):
        client.download(server.url("/res"), io.BytesIO())
    assert server.count("/res") == 1


# -- verification and caps ---------------------------------------------------------------------

def test_content_that_never_matches_is_refused_and_not_kept(server: SourceServer) -> None:
    server.corrupt("/res", times=10)
    dest = io.BytesIO()
    with client_for(server) as client, pytest.raises(ContentMismatchError) as caught:
        client.download(server.url("/res"), dest, expected=expected())
    assert caught.value.url == server.url("/res")
    assert caught.value.expected == hashlib.md5(BODY).hexdigest()
    assert dest.getvalue() == b""


def test_nothing_to_compare_is_reported_as_unverified(server: SourceServer) -> None:
    with client_for(server) as client:
        assert not client.download(server.url("/res"), io.BytesIO()).verified


@pytest.mark.parametrize("path", ["/res", "/doc.xml"])
def test_size_caps_refuse_large_responses(server: SourceServer, path: str) -> None:
    with client_for(server, max_resource_bytes=100, max_document_bytes=100) as client, \
            pytest.raises(UnsafeContentError, match="exceeds the cap of 100 bytes"):
        if path == "/res":
            client.download(server.url(path), io.BytesIO())
        else:
            client.fetch_document(server.url(path))


# -- where fetches may go ----------------------------------------------------------------------

def test_redirects_within_the_source_are_followed(server: SourceServer) -> None:
    server.redirect("/old", server.url("/res"), status=301)
    with client_for(server) as client:
        download = client.download(server.url("/old"), io.BytesIO(), expected=expected())
    assert download.url == server.url("/res")


def test_a_redirect_to_another_host_is_refused(server: SourceServer, other: SourceServer
                                               ) -> None:
    server.redirect("/res", other.url("/res"))  # the Source's host, another port
    dest = io.BytesIO()
    with client_for(server) as client, pytest.raises(UnsafeContentError, match="not one of"):
        client.download(server.url("/res"), dest)
    assert other.count() == 0 and dest.getvalue() == b""


def test_redirect_loops_end(server: SourceServer) -> None:
    server.redirect("/a", server.url("/b"))
    server.redirect("/b", server.url("/a"))
    with client_for(server, max_redirects=3) as client, \
            pytest.raises(FetchError, match="more than 3 redirects"):
        client.fetch_page(server.url("/a"))


def test_private_addresses_are_refused_unless_allowed(server: SourceServer) -> None:
    with ResourceSyncClient(ClientPolicy(), source_urls=[server.base_url]) as client, \
            pytest.raises(UnsafeContentError, match=r"non-public address 127\.0\.0\.1"):
        client.fetch_page(server.url("/res"))
    assert server.count() == 0


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/x"])
def test_other_schemes_are_never_fetched(server: SourceServer, url: str) -> None:
    with client_for(server) as client, pytest.raises(UnsafeContentError, match="not fetched"):
        client.fetch_page(url)


# -- credentials and mirrors -------------------------------------------------------------------

#: Both ways a GET is sent: straight to our own wire, and through httpx's client (a transport
#: given, or a proxy in the environment).
WIRES = pytest.mark.parametrize("wire", [None, httpx.HTTPTransport],
                                ids=["own wire", "through httpx's client"])


@WIRES
@pytest.mark.parametrize("credentials", [
    {"token": "s3cret"}, {"username": "user", "password": "pw"},
    {"headers": (("Authorization", "ApiKey k3y"),)}], ids=["bearer", "basic", "header"])
def test_credentials_reach_their_host_and_no_other(
        server: SourceServer, other: SourceServer, credentials: dict[str, object],
        wire: type[httpx.BaseTransport] | None) -> None:
    policy = {**FAST, "credentials": Credentials(server.base_url, **credentials),  # type: ignore[arg-type]
              "allowed_hosts": frozenset({other.base_url.removeprefix("http://")})}
    server.redirect("/moved", other.url("/res"))
    entry = Entry(server.url("/gone"), links=(Link("duplicate", other.url("/res"), pri=1),))
    with ResourceSyncClient(ClientPolicy(**policy), source_urls=[server.base_url],  # type: ignore[arg-type]
                            transport=wire() if wire else None) as client:
        client.fetch_page(server.url("/res"))
        client.download_entry(entry, io.BytesIO())
        client.fetch_page(server.url("/moved"))
    assert "authorization" in server.requests[0].headers
    assert other.count() == 2  # the mirror, and the redirect's target: neither got credentials
    assert all("authorization" not in request.headers for request in other.requests)


def test_mirrors_are_tried_in_priority_order_then_loc(server: SourceServer,
                                                      other: SourceServer) -> None:
    other.remove("/res")
    entry = Entry(server.url("/res"), md=expected(), links=(
        Link("duplicate", other.url("/second"), pri=2),
        Link("duplicate", other.url("/res"), pri=1),
        Link("alternate", other.url("/not-a-mirror"))))
    with client_for(server, allowed_hosts=frozenset({other.base_url.removeprefix("http://")})
                    ) as client:
        download = client.download_entry(entry, io.BytesIO())
    assert download.url == server.url("/res")
    assert [r.path for r in other.requests] == ["/res", "/second"]


# -- limits ------------------------------------------------------------------------------------

@WIRES
def test_cookies_a_source_sets_are_sent_back(server: SourceServer,
                                             wire: type[httpx.BaseTransport] | None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """... and only a response that sets one goes through the cookie machinery (a ``urllib``
    request built for it), through httpx's client as over our own wire."""
    server.put("/login", b"ok", "text/plain", headers={"Set-Cookie": "session=s1; Path=/"})
    extracted: list[str] = []
    extract = CookieJar.extract_cookies

    def counted(jar: CookieJar, response: Any, request: Any) -> None:
        extracted.append(request.get_full_url())
        extract(jar, response, request)

    monkeypatch.setattr(CookieJar, "extract_cookies", counted)
    with ResourceSyncClient(ClientPolicy(**FAST), source_urls=[server.base_url],  # type: ignore[arg-type]
                            transport=wire() if wire else None) as client:
        client.fetch_page(server.url("/res"))  # no Set-Cookie: nothing stored, nothing lost
        client.fetch_page(server.url("/login"))
        client.download(server.url("/res"), io.BytesIO())
        client.fetch_page(server.url("/doc.xml"))
    sent = [record.headers.get("cookie") for record in server.requests]
    assert sent == [None, None, "session=s1", "session=s1"]
    assert extracted == [server.url("/login")]


def test_each_request_carries_the_headers_httpx_would_send(server: SourceServer) -> None:
    """Requests are built without httpx's per-request merging (less CPU per resource); what
    goes on the wire is what ``build_request`` makes, validators of a held document included."""
    url = server.url("/doc.xml")
    with client_for(server) as client:
        client.download(server.url("/res"), io.BytesIO())
        client.fetch_document(url)
        client.fetch_document(url)  # held: conditional
        expected = client._http.build_request("GET", url, headers=client.cache.validators(url))
    first, _, conditional = server.requests
    for name in ("user-agent", "host", "accept", "accept-encoding"):
        assert first.headers.get(name) == conditional.headers.get(name) == expected.headers[name]
    assert first.headers.get("if-none-match") is None
    assert conditional.headers.get("if-none-match") == expected.headers["if-none-match"]
    assert conditional.status == 304


def test_a_resource_sent_with_a_content_coding_is_stored_decoded(server: SourceServer) -> None:
    server.put("/packed", gzip.compress(BODY), "text/plain", headers={"Content-Encoding": "gzip"})
    expected = Metadata(hash=Hashes.of(md5=hashlib.md5(BODY).hexdigest()), length=len(BODY))
    with client_for(server) as client:
        dest = io.BytesIO()
        download = client.download(server.url("/packed"), dest, expected=expected)
    assert dest.getvalue() == BODY and download.verified and download.length == len(BODY)


def test_concurrency_per_host_is_limited(server: SourceServer) -> None:
    server.delay = 0.3
    with client_for(server, concurrency_per_host=2) as client, ThreadPoolExecutor(6) as pool:
        started = time.monotonic()
        list(pool.map(lambda _: client.fetch_page(server.url("/res")), range(6)))
        elapsed = time.monotonic() - started
    assert elapsed >= 0.85  # six requests, two at a time, 0.3 s each: three rounds at least


# -- the async client --------------------------------------------------------------------------

def test_the_async_client_shares_the_policy(server: SourceServer) -> None:
    server.fail("/doc.xml", 500)

    async def poll() -> list[bool]:
        async with AsyncResourceSyncClient(ClientPolicy(**FAST),  # type: ignore[arg-type]
                                           source_urls=[server.base_url]) as client:
            first = await client.fetch_document(server.url("/doc.xml"))
            second = await client.fetch_document(server.url("/doc.xml"))
            page = await client.fetch_page(server.url("/missing"))
            assert page.status == 404
            return [first.not_modified, second.not_modified]

    assert asyncio.run(poll()) == [False, True]
    assert server.count("/doc.xml", status=500) == 1
    assert server.count("/doc.xml", status=304) == 1
