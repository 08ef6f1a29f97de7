"""Our wire against h11 itself: the same canned and generated responses, served over a socket to
the wire under httpx and fed whole to a bare ``h11.Connection``, must give the same status,
header fields and body, or both an error. The wire adds sockets, deadlines and a pool; this
shows it changes nothing of what h11 makes of the bytes."""

from __future__ import annotations

from dataclasses import dataclass

import h11
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_resourcesync.client.transport import SocketTransport
from airflow_provider_resourcesync.errors import shown

from .wire_parts import canned


@dataclass(frozen=True)
class Outcome:
    """What a response came to: its status, header fields and body, or an error's message."""

    status: int = 0
    headers: tuple[tuple[bytes, bytes], ...] = ()
    body: bytes = b""
    error: str | None = None


def reference(answer: bytes, method: str) -> Outcome:
    """What h11 alone makes of ``answer`` to ``method``, the server closing after it."""
    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method=method, target="/x", headers=[("Host", "127.0.0.1")]))
    connection.send(h11.EndOfMessage())
    connection.receive_data(answer)
    connection.receive_data(b"")
    head: h11.Response | None = None
    body = b""
    try:
        while not isinstance(event := connection.next_event(), h11.EndOfMessage):
            if isinstance(event, h11.Response):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif not isinstance(event, h11.InformationalResponse):
                return Outcome(error=f"unexpected {event!r}")
    except h11.RemoteProtocolError as error:
        return Outcome(error=str(error))
    assert head is not None
    return Outcome(head.status_code, tuple(head.headers.raw_items()), body)


def ours(answer: bytes, method: str) -> Outcome:
    """What the wire under httpx makes of ``answer`` served over a socket."""
    with canned(answer) as served, httpx.Client(transport=SocketTransport(), timeout=10) as http:
        try:
            with http.stream(method, served.url) as response:
                body = b"".join(response.iter_raw())
        except httpx.RemoteProtocolError as error:
            return Outcome(error=str(error))
        return Outcome(response.status_code, tuple(response.headers.raw), body)


def assert_agree(answer: bytes, method: str) -> None:
    expected, actual = reference(answer, method), ours(answer, method)
    if expected.error is None:
        assert actual == expected
    else:
        assert actual.error is not None, f"h11 refused it ({expected.error}); the wire did not"
        assert (shown(expected.error) in actual.error
                or "closed the connection without sending a response" in actual.error)


CANNED = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nX",
    b"HTTP/1.0 200 OK\r\n\r\nto the close",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 9\r\n\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
    b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
    b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Folded: one\r\n two\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX Spaced: 1\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX: a\0b\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
    b"HTTP/2 200 OK\r\n\r\n",
    b"SSH-2.0-OpenSSH_9.6\r\n",
    b"",
]


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("answer", CANNED)
def test_canned_responses_come_to_what_h11_makes_of_them(answer: bytes, method: str) -> None:
    assert_agree(answer, method)


# -- generated responses -----------------------------------------------------------------------

NAMES = [b"Content-Type", b"ETag", b"Connection", b"X-A", b"Last-Modified"]
VALUES = [b"text/plain", b'"abc"', b"close", b"keep-alive", b" padded ", b"\xff\xfe", b"",
          b"a, b", b"5", b"chunked"]
#: What a broken response breaks, and how: one flaw in some of the responses.
FLAWS: dict[str, list[bytes]] = {
    "version": [b"HTTP/2", b"HTTP/1.1 ", b"HTTP/1", b"http/1.1"],
    "reason": [b"\x00bad", b"a\rb", b"\xff"],
    "name": [b"X Spaced", b"", b"X:Colon", b"\x00", b"X\tTab", b"X\xff"],
    "value": [b"a\rb", b"a\x00b", b"a\nb", b"\x01"],
}


def chunked(pieces: list[bytes]) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces if piece) + (
        b"0\r\n\r\n")


@st.composite
def responses(draw: st.DrawFn) -> bytes:
    """A response head and body from parts, framed right or wrong, perhaps with one flaw in its
    head, perhaps with bytes after it."""
    flaw = draw(st.sampled_from([None, None, None, *FLAWS]))
    broken = draw(st.sampled_from(FLAWS[flaw])) if flaw else b""
    ending = draw(st.sampled_from([b"\r\n", b"\r\n", b"\n"]))
    version = broken if flaw == "version" else draw(st.sampled_from([b"HTTP/1.1", b"HTTP/1.0"]))
    status = draw(st.sampled_from([200, 200, 204, 206, 301, 304, 404, 101, 103, 100, 999]))
    reason = broken if flaw == "reason" else draw(st.sampled_from([b"OK", b"", b"Any Reason"]))
    fields = draw(st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES)),
                           max_size=4))
    if flaw in ("name", "value"):
        name, value = draw(st.sampled_from(NAMES)), draw(st.sampled_from(VALUES))
        fields.insert(draw(st.integers(0, len(fields))),
                      (broken, value) if flaw == "name" else (name, broken))
    body = draw(st.binary(max_size=64))
    framing = draw(st.sampled_from(["length", "length", "wrong length", "chunked", "chunked",
                                    "gzip chunked", "length and chunked", "none"]))
    if framing == "length and chunked":
        fields.append((b"Content-Length", b"%d" % len(body)))
    if framing in ("length", "wrong length"):
        length = len(body) + (draw(st.integers(-3, 3)) if framing == "wrong length" else 0)
        fields.append((b"Content-Length", str(length).encode()))
    if framing.endswith("chunked"):
        coding = b"gzip, chunked" if framing.startswith("gzip") else b"chunked"
        fields.append((b"Transfer-Encoding", coding))
        body = chunked([*draw(st.lists(st.binary(max_size=20), max_size=4)), body])
    head = b"%s %d %s" % (version, status, reason) + ending
    head += b"".join(name + b": " + value + ending for name, value in fields)
    return head + ending + body + draw(st.sampled_from([b"", b"", b"HTTP/1.1 200 OK\r\n\r\n"]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=responses(), method=st.sampled_from(["GET", "HEAD"]))
def test_generated_responses_come_to_what_h11_makes_of_them(answer: bytes, method: str) -> None:
    assert_agree(answer, method)
