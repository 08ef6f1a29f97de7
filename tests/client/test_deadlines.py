"""No Source holds a task for ever: a deadline for a whole request however slowly it is sent, a
retry budget for a whole run, a body cut off the moment it passes its listed length, and a body
cut short reported as such."""

from __future__ import annotations

import asyncio
import io
import logging

import pytest

from airflow_provider_resourcesync.client.async_client import AsyncResourceSyncClient
from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.errors import ContentMismatchError, FetchError
from airflow_provider_resourcesync.protocol.model import Entry, Metadata
from airflow_provider_resourcesync.testing import SourceServer

from .conftest import FAST, client_for

BODY = b"resource body " * 1000
DOC = (b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
       b'xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcelist" '
       b'at="2026-01-01T00:00:00Z"/><url><loc>http://example.com/a</loc></url></urlset>')
#: Two tries: the first fails, the second shows it was retried and failed again.
TWO = {**FAST, "max_tries": 2}
#: A drip: one byte every 50 ms, each far within the read timeout; the whole body would take
#: minutes, and the server gives up after 5 s.
DRIP = {"interval": 0.05, "seconds": 5.0, "times": 10}


@pytest.fixture(autouse=True)
def _content(server: SourceServer) -> None:
    server.put("/res", BODY, "text/plain")
    server.put("/doc.xml", DOC, "application/xml")


# -- request_timeout ---------------------------------------------------------------------------

def test_a_resource_sent_a_byte_at_a_time_ends_by_the_request_timeout(
        server: SourceServer) -> None:
    server.drip("/res", **DRIP)
    dest = io.BytesIO()
    with client_for(server, max_tries=2, request_timeout=1) as client, \
            pytest.raises(FetchError) as raised:
        client.download(server.url("/res"), dest)
    error = raised.value
    assert error.url == server.url("/res") and "request_timeout of 1 s" in str(error)
    assert (error.status, error.tries) == (200, 2)
    assert dest.getvalue() == b""


def test_a_document_sent_a_byte_at_a_time_ends_by_the_request_timeout(
        server: SourceServer) -> None:
    server.drip("/doc.xml", **DRIP)
    with client_for(server, max_tries=2, request_timeout=1) as client, \
            pytest.raises(FetchError, match="request_timeout of 1 s") as raised:
        client.fetch_document(server.url("/doc.xml"))
    assert raised.value.url == server.url("/doc.xml")


def test_a_response_head_sent_a_byte_at_a_time_ends_by_the_request_timeout(
        server: SourceServer) -> None:
    server.drip("/res", head=True, **DRIP)
    with client_for(server, max_tries=2, request_timeout=1) as client, \
            pytest.raises(FetchError) as raised:
        client.fetch_page(server.url("/res"))
    assert "request_timeout of 1 s" in str(raised.value)
    assert raised.value.status is None  # no whole head arrived


def test_the_async_client_ends_a_drip_by_the_request_timeout(server: SourceServer) -> None:
    server.drip("/doc.xml", **DRIP)

    async def poll() -> None:
        async with AsyncResourceSyncClient(ClientPolicy(**TWO, request_timeout=1),
                                           source_urls=[server.base_url]) as client:
            await client.fetch_document(server.url("/doc.xml"))

    with pytest.raises(FetchError, match="request_timeout of 1 s") as raised:
        asyncio.run(poll())
    assert raised.value.url == server.url("/doc.xml") and raised.value.tries == 2


def test_a_drip_that_drips_again_is_bounded_by_the_retry_budget(server: SourceServer) -> None:
    server.drip("/res", **DRIP)
    with client_for(server, request_timeout=1, retry_budget=1.5, max_tries=5) as client, \
            pytest.raises(FetchError) as raised:
        client.download(server.url("/res"), io.BytesIO())
    assert "request_timeout of 1 s" in str(raised.value)
    assert "retry_budget of 1.5 s" in str(raised.value)
    assert server.count("/res") == 2  # two failed tries spent the budget; three were left


# -- retry_budget ------------------------------------------------------------------------------

def test_a_429_storm_ends_by_the_runs_retry_budget(
        server: SourceServer, caplog: pytest.LogCaptureFixture) -> None:
    for path in ("/a", "/b"):
        server.put(path, BODY, "text/plain")
        server.fail(path, 429, times=50, headers={"Retry-After": "1"})
    with caplog.at_level(logging.WARNING), \
            client_for(server, retry_budget=2.5, max_tries=10) as client:
        with pytest.raises(FetchError) as first:
            client.download(server.url("/a"), io.BytesIO())
        with pytest.raises(FetchError) as second:
            client.download(server.url("/b"), io.BytesIO())
    for raised, path in ((first, "/a"), (second, "/b")):
        assert raised.value.url == server.url(path) and raised.value.status == 429
        assert "retry_budget of 2.5 s" in str(raised.value)
    assert server.count("/a") == 3  # waited 1 s twice; a third wait is more than is left
    assert server.count("/b") == 1  # the run's budget is spent: no retry at all
    told = [record for record in caplog.records if "retry_budget" in record.getMessage()]
    assert len(told) == 1


# -- the listed length -------------------------------------------------------------------------

def test_a_body_longer_than_its_listed_length_is_cut_off_as_it_streams(
        server: SourceServer) -> None:
    server.put("/endless", b"0123456789", "application/octet-stream")
    server.drip("/endless", interval=0.002, endless=True, seconds=5.0, times=10)
    entry = Entry(server.url("/endless"), md=Metadata(length=100))
    dest = io.BytesIO()
    with client_for(server, max_tries=1) as client, \
            pytest.raises(ContentMismatchError, match="cut off at 101 bytes") as raised:
        client.download_entry(entry, dest)
    assert raised.value.url == server.url("/endless") and raised.value.expected == "100"
    assert server.body_bytes_sent("/endless") <= 100 + 32  # not what the server would send
    assert dest.getvalue() == b""


def test_a_content_length_above_the_listed_length_is_refused_unread(
        server: SourceServer) -> None:
    entry = Entry(server.url("/res"), md=Metadata(length=100))
    dest = io.BytesIO()
    with client_for(server, max_tries=1) as client, \
            pytest.raises(ContentMismatchError, match="Content-Length; not read"):
        client.download_entry(entry, dest)
    assert dest.getvalue() == b""


# -- a body cut short --------------------------------------------------------------------------

def test_a_body_cut_short_says_so_with_the_status_and_what_arrived(
        server: SourceServer) -> None:
    server.truncate("/res", times=5)
    with client_for(server, max_tries=2) as client, pytest.raises(FetchError) as raised:
        client.download(server.url("/res"), io.BytesIO())
    error = raised.value
    assert (error.status, error.tries) == (200, 2)
    assert f"cut short, {len(BODY) // 2} of {len(BODY)} bytes arrived" in str(error)
    assert "no response" not in str(error)


def test_the_async_client_says_a_body_was_cut_short(server: SourceServer) -> None:
    server.truncate("/doc.xml", times=5)

    async def poll() -> None:
        async with AsyncResourceSyncClient(ClientPolicy(**TWO),  # type: ignore[arg-type]
                                           source_urls=[server.base_url]) as client:
            await client.fetch_document(server.url("/doc.xml"))

    with pytest.raises(FetchError, match=f"cut short, {len(DOC) // 2} of {len(DOC)} bytes") \
            as raised:
        asyncio.run(poll())
    assert raised.value.status == 200
