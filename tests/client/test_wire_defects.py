"""What a hostile or unusual Source, host name or environment did to the sync client's first
wire (issue 17): each test here failed on it."""

from __future__ import annotations

import asyncio
import io
import socket
import ssl
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509

from airflow_provider_resourcesync.client.async_client import AsyncResourceSyncClient
from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.client.transport import SocketTransport, default_transport
from airflow_provider_resourcesync.errors import FetchError
from airflow_provider_resourcesync.testing import SourceServer

from .test_origins import PUBLIC, rebinding  # noqa: F401 (a fixture)
from .wire_parts import canned, self_signed

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(transport=SocketTransport(), timeout=5.0) as client:
        yield client


# -- framing a Source breaks ---------------------------------------------------------------------

def test_a_transfer_coding_other_than_chunked_is_refused_not_stored(http: httpx.Client) -> None:
    """RFC 9112 section 6.1: the client must decode every transfer coding or refuse the message;
    the first wire took the gzip bytes under ``gzip, chunked`` for the body."""
    answer = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n"
              b"4\r\n\x1f\x8b\x08\x00\r\n0\r\n\r\n")
    with canned(answer) as served, pytest.raises(httpx.RemoteProtocolError,
                                                 match="Transfer-Encoding"):
        http.get(served.url)


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nX Spaced: 1\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nX-Value: a\rb\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nX-Value: a\0b\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 101 Switching Protocols\r\nContent-Length: 2\r\n\r\nok",
], ids=["space-in-name", "bare-cr-in-value", "nul-in-value", "final-101"])
def test_a_head_http_forbids_is_a_protocol_error(http: httpx.Client, answer: bytes) -> None:
    """RFC 9110 section 5.1 (a name is a token), 5.5 (no CR, LF or NUL in a value); a 101
    answers an upgrade we never asked for."""
    with canned(answer) as served, pytest.raises(httpx.RemoteProtocolError):
        http.get(served.url)


def test_bytes_after_a_body_are_not_taken_for_the_next_response() -> None:
    """The first connection's answer carries a second response after its body: the next request
    goes on a new connection and gets the real answer."""
    smuggled = (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfake!")
    real = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nreal"
    with canned(smuggled, real, keep_open=True) as served:
        with httpx.Client(transport=SocketTransport(), timeout=5.0) as http:
            assert http.get(served.url).content == b"ok"
            assert http.get(served.url).content == b"real"
        assert len(served.requests) == 2


# -- host names: one A-label for the connection, TLS and Host ---------------------------------

UNICODE_HOST = "straße.de"
A_LABEL = "xn--strae-oqa.de"  # IDNA 2008 (RFC 5891); IDNA 2003 maps the name to strasse.de


@pytest.fixture
def a_label_certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed(tmp_path, x509.DNSName(A_LABEL))


def test_an_internationalised_host_is_resolved_verified_and_named_by_its_a_label(
        a_label_certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The name resolved, the name sent for TLS (SNI, and so the certificate's check) and the
    Host header are the one IDNA 2008 A-label; Python's own codec would map ß to ss."""
    resolved: list[str] = []
    real_getaddrinfo = socket.getaddrinfo

    def resolver(host: str, *args: object, **kwargs: object) -> object:
        resolved.append(host)  # every name answers 127.0.0.1, where the Source listens
        return real_getaddrinfo("127.0.0.1", *args, **kwargs)  # type: ignore[arg-type]

    named: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*a_label_certificate)
    context.sni_callback = lambda _sock, server_name, _context: named.append(server_name)
    monkeypatch.setenv("SSL_CERT_FILE", str(a_label_certificate[0]))
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    with SourceServer(max_lifetime=120, tls=context) as server:
        server.put("/res", b"body", "text/plain")
        port = server.base_url.rsplit(":", 1)[1]
        with httpx.Client(transport=SocketTransport(verify=True), timeout=5.0) as http:
            response = http.get(f"https://{UNICODE_HOST}:{port}/res")
        assert response.content == b"body"
        assert server.requests[0].headers["host"] == f"{A_LABEL}:{port}"
    assert resolved == [A_LABEL]
    assert named == [A_LABEL]


# -- many open files ---------------------------------------------------------------------------

CHILD = textwrap.dedent("""
    import os, resource, sys
    import httpx
    from airflow_provider_resourcesync.client.transport import SocketTransport

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    assert held[-1] > 1024, held[-1]
    with httpx.Client(transport=SocketTransport(), timeout=10.0) as http:
        for _ in range(5):
            assert http.get(sys.argv[1]).content == b"body"
""")


def test_past_1024_open_files_an_idle_connection_is_still_reused() -> None:
    """``select.select`` cannot watch a descriptor above 1023: the first wire took every idle
    connection for dead there and opened one per request."""
    with SourceServer(max_lifetime=120) as server:
        server.put("/res", b"body", "text/plain")
        subprocess.run([sys.executable, "-c", CHILD, server.url("/res")], check=True,
                       timeout=120)
        assert server.count("/res") == 5
        assert server.connections_opened == 1


# -- the environment -----------------------------------------------------------------------------

def test_no_proxy_alone_leaves_the_wire_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_PROXY without any proxy to bypass (common in container images) means no proxy."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1,.internal")
    assert isinstance(default_transport(ClientPolicy()), SocketTransport)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_no_proxy_alone_keeps_the_connection_to_the_address_checked(
        kind: str, rebinding: list[tuple[str, int]],  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With NO_PROXY alone, the first wire gave way to httpx's own, which resolves a name again
    after the guard checked it: a name rebound to a private address reached it."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("NO_PROXY", "localhost")
    with SourceServer(max_lifetime=120) as server:
        server.put("/res", b"body", "text/plain")
        url = server.url("/res").replace("127.0.0.1", "rebind.test")
        policy = ClientPolicy(max_tries=1)

        async def fetch_async() -> None:
            async with AsyncResourceSyncClient(policy, source_urls=[url]) as client:
                await client.fetch_page(url)

        with pytest.raises(FetchError):
            if kind == "sync":
                with ResourceSyncClient(policy, source_urls=[url]) as client:
                    client.download(url, io.BytesIO())
            else:
                asyncio.run(fetch_async())
        assert server.requests == []
    assert [address for address, _ in rebinding] == [PUBLIC]
