"""The sync client's wire (client/transport.py) against real sockets: connections kept and
reused, given up when the server closed them, and every broken answer a clear httpx error."""

from __future__ import annotations

import gzip
import hashlib
import ipaddress
import socket
import ssl
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from cryptography import x509

from airflow_provider_resourcesync.client import transport as transport_module
from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.transport import SocketTransport, default_transport
from airflow_provider_resourcesync.testing import SourceServer

from .wire_parts import canned, self_signed

BODY = b"resource body " * 500


@pytest.fixture
def server() -> Iterator[SourceServer]:
    with SourceServer(max_lifetime=120) as running:
        running.put("/res", BODY, "text/plain")
        yield running


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(transport=SocketTransport(), timeout=5.0) as client:
        yield client


# -- connections kept and reused ----------------------------------------------------------------

def test_one_kept_alive_connection_carries_many_requests(server: SourceServer,
                                                          http: httpx.Client) -> None:
    bodies = [http.get(server.url("/res")).content for _ in range(20)]
    assert bodies == [BODY] * 20
    assert server.connections_opened == 1


def test_concurrent_requests_each_have_a_connection_of_their_own(server: SourceServer,
                                                                  http: httpx.Client) -> None:
    with ThreadPoolExecutor(8) as pool:
        bodies = list(pool.map(lambda _: http.get(server.url("/res")).content, range(80)))
    assert bodies == [BODY] * 80
    assert server.connections_opened <= 8
    assert server.count("/res") == 80


def test_head_and_not_modified_answers_leave_the_connection_reusable(
        server: SourceServer, http: httpx.Client) -> None:
    head = http.head(server.url("/res"))
    assert head.status_code == 200 and head.content == b""
    assert head.headers["Content-Length"] == str(len(BODY))
    etag = http.get(server.url("/res")).headers["ETag"]
    not_modified = http.get(server.url("/res"), headers={"If-None-Match": etag})
    assert not_modified.status_code == 304 and not_modified.content == b""
    assert http.get(server.url("/res")).content == BODY
    assert server.connections_opened == 1


def test_an_answer_without_a_body_keeps_its_connection_unread(
        server: SourceServer, http: httpx.Client) -> None:
    """A 304 (the no-change poll) or a HEAD answer closed without reading: nothing is left to
    read, so the connection carries the next request."""
    etag = http.get(server.url("/res")).headers["ETag"]
    with http.stream("GET", server.url("/res"), headers={"If-None-Match": etag}) as response:
        assert response.status_code == 304
    with http.stream("HEAD", server.url("/res")) as response:
        assert response.status_code == 200
    assert http.get(server.url("/res")).content == BODY
    assert server.connections_opened == 1


def test_a_connection_the_server_closed_is_replaced_without_a_failed_request(
        server: SourceServer, http: httpx.Client) -> None:
    assert http.get(server.url("/res")).content == BODY
    server.hang_up()  # as a server whose keep-alive timeout passed
    assert http.get(server.url("/res")).content == BODY
    assert server.connections_opened == 2
    assert [record.status for record in server.requests] == [200, 200]


def test_an_idle_connection_past_its_expiry_is_replaced(
        server: SourceServer, http: httpx.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport_module, "KEEPALIVE_EXPIRY", 0.0)
    http.get(server.url("/res"))
    http.get(server.url("/res"))
    assert server.connections_opened == 2


def test_a_body_left_unread_closes_its_connection(server: SourceServer,
                                                  http: httpx.Client) -> None:
    with http.stream("GET", server.url("/res")) as response:
        assert response.status_code == 200  # the body is never read
    assert http.get(server.url("/res")).content == BODY
    assert server.connections_opened == 2


def test_redirects_and_errors_are_answers_not_failures(server: SourceServer,
                                                       http: httpx.Client) -> None:
    server.redirect("/old", server.url("/res"), status=301)
    assert http.get(server.url("/old")).headers["Location"] == server.url("/res")
    assert http.get(server.url("/missing")).status_code == 404
    assert http.get(server.url("/res")).reason_phrase == "OK"
    assert server.connections_opened == 1


# -- broken answers -----------------------------------------------------------------------------

@pytest.mark.parametrize("fault", ["truncate", "wrong_length"])
def test_a_body_shorter_than_its_length_is_a_protocol_error(
        server: SourceServer, http: httpx.Client, fault: str) -> None:
    getattr(server, fault)("/res")
    with pytest.raises(httpx.RemoteProtocolError, match=r"received \d+ bytes, expected \d+"):
        http.get(server.url("/res"))
    assert http.get(server.url("/res")).content == BODY  # on a new connection


def test_a_dropped_request_is_a_protocol_error(server: SourceServer, http: httpx.Client) -> None:
    server.drop("/res")
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        http.get(server.url("/res"))
    assert http.get(server.url("/res")).content == BODY


def test_a_stalled_answer_is_a_read_timeout(server: SourceServer) -> None:
    server.stall("/res", 5.0)
    with httpx.Client(transport=SocketTransport(), timeout=0.2) as impatient, pytest.raises(
            httpx.ReadTimeout):
        impatient.get(server.url("/res"))


def test_a_refused_connection_is_a_connect_error(http: httpx.Client) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(httpx.ConnectError):
        http.get(f"http://127.0.0.1:{port}/res")


# -- bodies framed other ways (a canned answer on a raw socket) -------------------------------

def test_a_chunked_body_is_reassembled(http: httpx.Client) -> None:
    answer = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
              b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    with canned(answer) as served:
        assert http.get(served.url).content == b"hello world"


def test_a_chunked_body_cut_short_is_a_protocol_error(http: httpx.Client) -> None:
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n wo"
    with canned(answer) as served, pytest.raises(httpx.RemoteProtocolError):
        http.get(served.url)


def test_a_body_ended_by_closing_the_connection_is_read_whole(http: httpx.Client) -> None:
    with canned(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it") as served:
        assert http.get(served.url).content == b"all of it"


def test_a_gzipped_body_is_decoded_as_httpx_decodes_it(http: httpx.Client) -> None:
    packed = gzip.compress(b"plain text")
    answer = (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: "
              + str(len(packed)).encode() + b"\r\nConnection: close\r\n\r\n" + packed)
    with canned(answer) as served:
        assert http.get(served.url).content == b"plain text"


def test_interim_answers_are_passed_over(http: httpx.Client) -> None:
    answer = (b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
              b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    with canned(answer) as served:
        response = http.get(served.url)
    assert (response.status_code, response.content) == (200, b"ok")
    assert "link" not in response.headers


def test_chunk_extensions_trailers_and_folded_headers_are_read(http: httpx.Client) -> None:
    answer = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Folded: one\r\n\t two\r\n"
              b"Connection: close\r\n\r\n5;name=value\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n")
    with canned(answer) as served:
        response = http.get(served.url)
    assert response.content == b"hello"
    assert response.headers["X-Folded"] == "one two"


@pytest.mark.parametrize(("answer", "complaint"), [
    (b"SSH-2.0-OpenSSH_9.6\r\n", "unexpectedly closed"),
    (b"HTTP/2 200 OK\r\n\r\n", "illegal status line"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
     "conflicting Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok", "bad Content-Length"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "illegal header line"),
    (b"HTTP/1.1 200 OK\r\nX-Long: " + b"x" * 1_000_000 + b"\r\n\r\n", "buffer too long"),
    (b"HTTP/1.1 200 OK\r\nContent-Le", "unexpectedly closed"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "illegal chunk header"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
     "malformed chunk footer"),
])
def test_a_broken_response_is_a_protocol_error_saying_what_broke(
        http: httpx.Client, answer: bytes, complaint: str) -> None:
    with canned(answer) as served, pytest.raises(httpx.RemoteProtocolError, match=complaint):
        http.get(served.url)


def test_a_long_broken_header_is_quoted_shortened(http: httpx.Client) -> None:
    answer = b"HTTP/1.1 200 OK\r\nX-Long: " + b"x" * 50_000 + b"\0\r\n\r\n"
    with canned(answer) as served, pytest.raises(httpx.RemoteProtocolError,
                                                 match="illegal header line") as raised:
        http.get(served.url)
    assert len(str(raised.value)) < 300 and "characters)" in str(raised.value)


def test_a_request_larger_than_the_socket_takes_at_once_goes_out_whole(
        http: httpx.Client) -> None:
    """A request is written straight into the socket as far as it takes it (no wait first);
    what it did not take follows, in order."""
    body = bytes(range(256)) * (32 * 1024)  # 8 MiB: more than a socket buffers
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)
    digest: list[str] = []

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.settimeout(10)
            received = b""
            while b"\r\n\r\n" not in received:
                received += connection.recv(65536)
            head, _, rest = received.partition(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            while len(rest) < length:
                rest += connection.recv(1 << 20)
            digest.append(hashlib.sha256(rest).hexdigest())
            connection.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")

    with listener, ThreadPoolExecutor(1) as pool:
        answered = pool.submit(serve)
        response = http.post(f"http://127.0.0.1:{listener.getsockname()[1]}/x", content=body)
        answered.result(timeout=10)
    assert response.status_code == 204
    assert digest == [hashlib.sha256(body).hexdigest()]


def test_a_line_break_in_a_request_header_is_refused_before_sending(
        server: SourceServer, http: httpx.Client) -> None:
    with pytest.raises(httpx.LocalProtocolError, match="line break"):
        http.get(server.url("/res"), headers={"If-None-Match": '"a"\r\nX-Smuggled: 1'})
    assert server.requests == [] and server.connections_opened == 0


@pytest.mark.parametrize(("method", "answer", "kept"), [
    ("GET", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", True),
    ("GET", b"HTTP/1.1 200 OK\r\ncontent-length: 5, 5\r\n\r\nhello", True),
    ("GET", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
     True),
    ("GET", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: Close\r\n\r\nhello", False),
    ("GET", b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello", False),
    ("HEAD", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", True),
    ("GET", b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", True),
    ("GET", b"HTTP/1.1 204 No Content\r\n\r\n", True),
])
def test_a_connection_carries_another_request_as_rfc_9112_allows(
        method: str, answer: bytes, kept: bool) -> None:
    """RFC 9112 sections 6.3 and 9.3: no body for HEAD, 204 and 304; a length or chunks end the
    body; only HTTP/1.1 keeps the connection, unless the server says close. The next request
    goes on the same connection exactly when it may."""
    again = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nsame"
    fresh = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh"
    with canned((answer, again), fresh, keep_open=True) as served, httpx.Client(
            transport=SocketTransport(), timeout=5.0) as http:
        http.request(method, served.url).read()
        assert http.get(served.url).content == (b"same" if kept else b"fresh")


# -- TLS ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    return self_signed(tmp_path_factory.mktemp("tls"),
                       x509.IPAddress(ipaddress.ip_address("127.0.0.1")))


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[SourceServer]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    with SourceServer(max_lifetime=120, tls=context) as running:
        running.put("/res", BODY, "text/plain")
        yield running


def test_https_with_a_trusted_certificate(tls_server: SourceServer,
                                          certificate: tuple[Path, Path],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))  # as httpx's own transport reads it
    with httpx.Client(transport=SocketTransport(verify=True)) as client:
        assert [client.get(tls_server.url("/res")).content for _ in range(3)] == [BODY] * 3
    assert tls_server.url("/res").startswith("https://")
    assert tls_server.connections_opened == 1


def test_https_refuses_an_untrusted_certificate(tls_server: SourceServer) -> None:
    with httpx.Client(transport=SocketTransport(verify=True)) as client, pytest.raises(
            httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        client.get(tls_server.url("/res"))


def test_https_without_verification_when_the_connection_says_so(
        tls_server: SourceServer) -> None:
    with httpx.Client(transport=SocketTransport(verify=False)) as client:
        assert client.get(tls_server.url("/res")).content == BODY


# -- which transport -----------------------------------------------------------------------------

def test_a_proxy_in_the_environment_leaves_the_wire_to_httpx(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy",
                 "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(default_transport(ClientPolicy()), SocketTransport)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert default_transport(ClientPolicy()) is None
