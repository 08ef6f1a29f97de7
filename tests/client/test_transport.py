"""The sync client's wire (client/transport.py) against real sockets: connections kept and
reused, given up when the server closed them, and every broken answer a clear httpx error."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from airflow_provider_resourcesync.client import http11
from airflow_provider_resourcesync.client import transport as transport_module
from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.transport import SocketTransport, default_transport
from airflow_provider_resourcesync.testing import SourceServer

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
    with pytest.raises(httpx.RemoteProtocolError, match="bytes missing"):
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

@contextmanager
def canned(answer: bytes) -> Iterator[str]:
    """A server that reads one request and writes ``answer``, then closes: its URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)

    def serve() -> None:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection:
            request = b""
            while b"\r\n\r\n" not in request and (data := connection.recv(4096)):
                request += data
            connection.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/x"
    finally:
        listener.close()
        thread.join(10)


def test_a_chunked_body_is_reassembled(http: httpx.Client) -> None:
    answer = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
              b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    with canned(answer) as url:
        assert http.get(url).content == b"hello world"


def test_a_chunked_body_cut_short_is_a_protocol_error(http: httpx.Client) -> None:
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n wo"
    with canned(answer) as url, pytest.raises(httpx.RemoteProtocolError):
        http.get(url)


def test_a_body_ended_by_closing_the_connection_is_read_whole(http: httpx.Client) -> None:
    with canned(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it") as url:
        assert http.get(url).content == b"all of it"


def test_a_gzipped_body_is_decoded_as_httpx_decodes_it(http: httpx.Client) -> None:
    import gzip

    packed = gzip.compress(b"plain text")
    answer = (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: "
              + str(len(packed)).encode() + b"\r\nConnection: close\r\n\r\n" + packed)
    with canned(answer) as url:
        assert http.get(url).content == b"plain text"


def test_interim_answers_are_passed_over(http: httpx.Client) -> None:
    answer = (b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
              b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    with canned(answer) as url:
        response = http.get(url)
    assert (response.status_code, response.content) == (200, b"ok")
    assert "link" not in response.headers


def test_chunk_extensions_trailers_and_folded_headers_are_read(http: httpx.Client) -> None:
    answer = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Folded: one\r\n\t two\r\n"
              b"Connection: close\r\n\r\n5;name=value\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n")
    with canned(answer) as url:
        response = http.get(url)
    assert response.content == b"hello"
    assert response.headers["X-Folded"] == "one two"


@pytest.mark.parametrize(("answer", "complaint"), [
    (b"SSH-2.0-OpenSSH_9.6\r\n", "not an HTTP/1.x status line"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
     "Content-Length is not one number"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok", "Content-Length is not one number"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "not a header field"),
    (b"HTTP/1.1 200 OK\r\nX-Long: " + b"x" * 70_000 + b"\r\n\r\n", "longer than"),
    (b"HTTP/1.1 200 OK\r\nContent-Le", "in the middle of the response"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not a chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
     "longer than its size"),
])
def test_a_broken_response_is_a_protocol_error_saying_what_broke(
        http: httpx.Client, answer: bytes, complaint: str) -> None:
    with canned(answer) as url, pytest.raises(httpx.RemoteProtocolError, match=complaint):
        http.get(url)


def test_a_line_break_in_a_request_header_is_refused_before_sending(
        server: SourceServer, http: httpx.Client) -> None:
    with pytest.raises(httpx.LocalProtocolError, match="line break"):
        http.get(server.url("/res"), headers={"If-None-Match": '"a"\r\nX-Smuggled: 1'})
    assert server.requests == [] and server.connections_opened == 0


@pytest.mark.parametrize(("method", "version", "status", "headers", "expected"), [
    ("GET", b"HTTP/1.1", 200, [(b"Content-Length", b"5")], (5, True)),
    ("GET", b"HTTP/1.1", 200, [(b"content-length", b"5, 5")], (5, True)),
    ("GET", b"HTTP/1.1", 200, [(b"Content-Length", b"5"), (b"Connection", b"Close")],
     (5, False)),
    ("GET", b"HTTP/1.0", 200, [(b"Content-Length", b"5")], (5, False)),
    ("GET", b"HTTP/1.1", 200, [(b"Transfer-Encoding", b"gzip, chunked"),
                               (b"Content-Length", b"5")], (-1, True)),
    ("GET", b"HTTP/1.1", 200, [(b"Transfer-Encoding", b"gzip")], (None, False)),
    ("GET", b"HTTP/1.1", 200, [], (None, False)),
    ("HEAD", b"HTTP/1.1", 200, [(b"Content-Length", b"5")], (0, True)),
    ("GET", b"HTTP/1.1", 304, [(b"Content-Length", b"5")], (0, True)),
    ("GET", b"HTTP/1.1", 204, [], (0, True)),
])
def test_how_a_body_ends_follows_rfc_9112(method: str, version: bytes, status: int,
                                         headers: list[tuple[bytes, bytes]],
                                         expected: tuple[int | None, bool]) -> None:
    """RFC 9112 section 6.3: no body for HEAD, 204 and 304; chunked when it is the last coding
    (over any Content-Length); else the Content-Length; else up to the close. Only HTTP/1.1 keeps
    the connection, unless the server says close."""
    assert http11.framing(method, version, status, headers) == expected


# -- TLS ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "resourcesync test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    directory = tmp_path_factory.mktemp("tls")
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


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
