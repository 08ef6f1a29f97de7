"""HTTP/1.1 messages as the sync client's transport writes and reads them (RFC 9112): the request
head, the final response's head (interim 1xx answers passed over), and how its body ends.

Everything here reads from a buffered binary stream and raises :class:`Malformed` for an answer
that breaks the framing; the transport turns that into :class:`httpx.RemoteProtocolError`.
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from io import BufferedReader

import httpx

__all__ = ["MAX_HEADERS", "MAX_LINE", "Malformed", "chunks", "counted", "framing",
           "request_head", "response_head", "until_close"]

#: The longest line of a response head, and the most header fields in one.
MAX_LINE = 64 * 1024
MAX_HEADERS = 100
#: The most bytes read at a time from a body.
CHUNK = 64 * 1024

_HEX = frozenset(string.hexdigits.encode())
_BLANK = (b"\r\n", b"\n")


class Malformed(Exception):
    """The server broke HTTP/1.1 framing (or closed the connection where it must not)."""


def request_head(request: httpx.Request) -> bytes:
    """The request line and header fields; a line break in any of them is refused."""
    lines = [b"%s %s HTTP/1.1" % (request.method.encode("ascii"), request.url.raw_path)]
    lines.extend(b"%s: %s" % field for field in request.headers.raw)
    if any(b"\r" in line or b"\n" in line or b"\0" in line for line in lines):
        raise httpx.LocalProtocolError("a request header or target holds a line break or NUL: "
                                       "refused, so that no header can be smuggled in",
                                       request=request)
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _line(reader: BufferedReader) -> bytes:
    """One line of a response head or of chunk framing."""
    line = reader.readline(MAX_LINE + 1)
    if not line.endswith(b"\n"):
        if len(line) > MAX_LINE:
            raise Malformed(f"a line of the response is longer than {MAX_LINE} bytes")
        raise Malformed("the server closed the connection in the middle of the response")
    return line


def response_head(reader: BufferedReader) -> tuple[bytes, int, bytes, list[tuple[bytes, bytes]]]:
    """The version, status, reason and header fields of the final response (interim 1xx
    responses are passed over, 9112 section 4)."""
    while True:
        if not reader.peek(1):
            raise Malformed("the server closed the connection without sending a response")
        version, _, rest = _line(reader).rstrip(b"\r\n").partition(b" ")
        code, _, reason = rest.partition(b" ")
        if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit():
            raise Malformed(f"not an HTTP/1.x status line: {(version + b' ' + rest)[:80]!r}")
        headers = _header_fields(reader)
        status = int(code)
        if not 100 <= status < 200 or status == 101:
            return version, status, reason.strip(), headers


def _header_fields(reader: BufferedReader) -> list[tuple[bytes, bytes]]:
    fields: list[tuple[bytes, bytes]] = []
    while (line := _line(reader)) not in _BLANK:
        if line[:1] in (b" ", b"\t") and fields:  # obs-fold: joined with a space (5.2)
            name, value = fields[-1]
            fields[-1] = (name, value + b" " + line.strip())
            continue
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise Malformed(f"not a header field: {line[:80]!r}")
        fields.append((name, value.strip()))
        if len(fields) > MAX_HEADERS:
            raise Malformed(f"more than {MAX_HEADERS} header fields")
    return fields


def framing(method: str, version: bytes, status: int, headers: list[tuple[bytes, bytes]]
             ) -> tuple[int | None, bool]:
    """How the body ends (9112 section 6.3): its length, -1 for chunks, None for the close; and
    whether the connection can carry another request after it."""
    codings: list[bytes] = []
    lengths: set[bytes] = set()
    closing = version != b"HTTP/1.1"
    for name, value in headers:
        lowered = name.lower()
        if lowered == b"transfer-encoding":
            codings.extend(coding.strip().lower() for coding in value.split(b","))
        elif lowered == b"content-length":
            lengths.update(length.strip() for length in value.split(b","))
        elif lowered == b"connection":
            closing = closing or b"close" in (token.strip().lower() for token in value.split(b","))
    if method == "HEAD" or status in (101, 204, 304):
        return 0, not closing and status != 101
    if codings:
        return (-1, not closing) if codings[-1] == b"chunked" else (None, False)
    if lengths:
        length = lengths.pop()
        if lengths or not length.isdigit():
            raise Malformed("the Content-Length is not one number")
        return int(length), not closing
    return None, False


def until_close(reader: BufferedReader) -> Iterator[bytes]:
    """A body without a length: everything up to the close, as it arrives."""
    while chunk := reader.read1(CHUNK):
        yield chunk


def counted(reader: BufferedReader, length: int) -> Iterator[bytes]:
    """``length`` bytes of a body, as they arrive (a slow Source's first bytes are seen before
    the rest, so a consumer can refuse them early)."""
    while length:
        chunk = reader.read1(min(CHUNK, length))
        if not chunk:
            raise Malformed("the server closed the connection before the whole body arrived "
                             f"({length} bytes missing)")
        length -= len(chunk)
        yield chunk


def chunks(reader: BufferedReader) -> Iterator[bytes]:
    """A chunked body's data (7.1); trailer fields are read and dropped."""
    while True:
        size = _line(reader).split(b";", 1)[0].strip()
        if not size or not _HEX.issuperset(size):
            raise Malformed(f"not a chunk size: {size[:40]!r}")
        if not int(size, 16):
            _header_fields(reader)
            return
        yield from counted(reader, int(size, 16))
        if _line(reader) not in _BLANK:
            raise Malformed("a chunk is longer than its size says")
