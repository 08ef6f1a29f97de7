"""The wire under the sync client: HTTP/1.1 of our own over sockets, behind httpx's transport
interface.

httpx's own transport (httpcore over h11) spends about three times the CPU of a plain HTTP/1.1
exchange on each small request; on two cores that CPU is what bounds a baseline of many small
resources (docs/design.md, "The sync client's transport"). :mod:`http.client` is as cheap but
takes an interim answer such as ``103 Early Hints`` for the final one. Everything above the wire
stays httpx's: the client, requests and responses, auth, timeouts as configured, errors. This
module only moves bytes, frames responses (RFC 9112) and keeps idle connections for reuse.

Rules it keeps, as httpx's transport does:

- an idle connection is reused only if it is younger than :data:`KEEPALIVE_EXPIRY` and the
  server has not closed it (nothing readable on it); otherwise a new one is opened;
- a connection goes back to the idle pool only after its response was read whole, the response
  was framed by its length or by chunks, and the server did not ask to close it;
- interim (1xx) answers are passed over;
- a body shorter than its ``Content-Length``, a chunked body cut short and a response head that
  is not HTTP/1.x are :class:`httpx.RemoteProtocolError`; timeouts, refused connections and
  broken ones are the matching :class:`httpx.TransportError`;
- a request header holding a line break is refused (:class:`httpx.LocalProtocolError`) before
  anything is sent: a value a Source chose (an ``ETag``) cannot add headers of its own.
"""

from __future__ import annotations

import io
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.request import getproxies

import httpx

from .addresses import AddressCheck, open_checked
from .http11 import (
    Malformed,
    chunks,
    counted,
    framing,
    request_head,
    response_head,
    until_close,
)
from .policy import ClientPolicy

__all__ = ["KEEPALIVE_EXPIRY", "SocketTransport", "default_transport"]

#: Seconds an idle connection is kept (httpx's default).
KEEPALIVE_EXPIRY = 5.0

_Origin = tuple[str, str, int]


class _Wire(io.RawIOBase):
    """A socket read with the read timeout, shortened to what is left of the request's
    deadline: a Source sending a byte now and then cannot hold a request past it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.read_timeout: float | None = None
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def arm(self) -> None:
        """Set the socket's timeout for its next operation.

        :raises TimeoutError: the deadline has passed.
        """
        timeout = self.read_timeout
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request's deadline passed")
            if timeout is None or left < timeout:
                timeout = left
        if self.sock.gettimeout() != timeout:
            self.sock.settimeout(timeout)

    def readinto(self, buffer: Any) -> int:
        self.arm()
        return self.sock.recv_into(buffer)


class _Connection:
    """A socket carrying one request after another, read through a buffer."""

    __slots__ = ("reader", "sock", "wire")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.wire = _Wire(sock)
        self.reader = io.BufferedReader(self.wire)

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


@dataclass(slots=True)
class _Idle:
    connection: _Connection
    since: float = field(default_factory=time.monotonic)


def default_transport(policy: ClientPolicy, check: AddressCheck | None = None
                      ) -> SocketTransport | None:
    """The sync client's transport for ``policy``, connecting only to addresses ``check``
    accepts; None (httpx's own, which honours proxies) where the environment names a proxy."""
    if getproxies():
        return None
    return SocketTransport(verify=policy.verify,
                           max_idle_per_origin=4 * policy.concurrency_per_host, check=check)


class SocketTransport(httpx.BaseTransport):
    """HTTP/1.1 over sockets, with a pool of idle connections per origin.

    A request's ``deadline`` extension (:func:`time.monotonic` time) bounds the whole request:
    the connection, the head and the body.

    :param verify: verify TLS certificates (as ``httpx.Client(verify=...)``).
    :param max_idle_per_origin: idle connections kept per scheme, host and port.
    :param check: checks the addresses a host resolved to before one is connected to.
    """

    def __init__(self, *, verify: bool = True, max_idle_per_origin: int = 64,
                 check: AddressCheck | None = None) -> None:
        self._verify = verify
        self._max_idle = max_idle_per_origin
        self._check = check
        self._idle: dict[_Origin, list[_Idle]] = {}
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None
        self._closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        origin = _origin(request.url)
        message = request_head(request) + request.read()
        timeouts = request.extensions.get("timeout", {})
        deadline = request.extensions.get("deadline")
        connection = self._reuse(origin) or self._connect(request, origin, timeouts, deadline)
        connection.wire.read_timeout = timeouts.get("read")
        connection.wire.deadline = deadline
        with _errors(request, "send", connection):
            connection.wire.arm()
            connection.sock.sendall(message)
        with _errors(request, "read", connection):
            version, status, reason, headers = response_head(connection.reader)
            length, reusable = framing(request.method, version, status, headers)
        return httpx.Response(
            status, headers=headers,
            stream=_Body(self, request, origin, connection, length, reusable),
            extensions={"http_version": version, "reason_phrase": reason})

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for kept in connections:
                kept.connection.close()

    # -- connections -----------------------------------------------------------------------------

    def _reuse(self, origin: _Origin) -> _Connection | None:
        """An idle connection to ``origin`` still open and not expired, if there is one."""
        while True:
            with self._lock:
                connections = self._idle.get(origin)
                if not connections:
                    return None
                kept = connections.pop()
            connection = kept.connection
            if time.monotonic() - kept.since < KEEPALIVE_EXPIRY and not _readable(connection):
                return connection
            connection.close()

    def _connect(self, request: httpx.Request, origin: _Origin,
                 timeouts: dict[str, float | None], deadline: float | None) -> _Connection:
        scheme, host, port = origin
        timeout = timeouts.get("connect")
        if deadline is not None:
            left = max(deadline - time.monotonic(), 0.001)
            timeout = left if timeout is None else min(timeout, left)
        with _errors(request, "connect"):
            sock = open_checked(str(request.url), host, port, timeout, self._check)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if scheme == "https":
                    sock = self._context().wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
        return _Connection(sock)

    def _context(self) -> ssl.SSLContext:
        with self._lock:
            if self._ssl is None:
                self._ssl = httpx.create_ssl_context(verify=self._verify)
            return self._ssl

    def _release(self, origin: _Origin, connection: _Connection) -> None:
        """Keep a connection whose last response was read whole, room permitting."""
        with self._lock:
            connections = self._idle.setdefault(origin, [])
            if not self._closed and len(connections) < self._max_idle:
                connections.append(_Idle(connection))
                return
        connection.close()


class _Body(httpx.SyncByteStream):
    """A response body read from its connection: ``length`` bytes, chunks (-1) or everything up
    to the close (None). Closing hands the connection back (when the body was read whole and it
    can carry another request) or closes it."""

    def __init__(self, transport: SocketTransport, request: httpx.Request, origin: _Origin,
                 connection: _Connection, length: int | None, reusable: bool) -> None:
        self._transport = transport
        self._request = request
        self._origin = origin
        self._connection: _Connection | None = connection
        self._length = length
        self._reusable = reusable
        self._whole = length == 0

    def __iter__(self) -> Iterator[bytes]:
        connection = self._connection
        if connection is None or self._whole:
            return
        reader = connection.reader
        with _errors(self._request, "read"):
            if self._length is None:
                yield from until_close(reader)
            elif self._length < 0:
                yield from chunks(reader)
            else:
                yield from counted(reader, self._length)
        self._whole = True

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._whole and self._reusable:
            self._transport._release(self._origin, connection)
        else:
            connection.close()


def _origin(url: httpx.URL) -> _Origin:
    scheme = url.scheme
    if scheme not in ("http", "https"):
        raise httpx.UnsupportedProtocol(f"{scheme!r} URLs are not supported")
    return scheme, url.host, url.port or (443 if scheme == "https" else 80)


def _readable(connection: _Connection) -> bool:
    """Whether an idle connection has something to read: the server closed it (or broke the
    protocol), so it cannot carry another request."""
    try:
        ready, _, _ = select.select([connection.sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(ready)


#: httpx's errors for a timeout and for any other failure, by the step that failed.
_STEP_ERRORS: dict[str, tuple[type[httpx.TransportError], type[httpx.TransportError]]] = {
    "connect": (httpx.ConnectTimeout, httpx.ConnectError),
    "send": (httpx.WriteTimeout, httpx.WriteError),
    "read": (httpx.ReadTimeout, httpx.ReadError),
}


@contextmanager
def _errors(request: httpx.Request, step: str,
            connection: _Connection | None = None) -> Iterator[None]:
    """Turn a socket's errors and broken framing in ``step`` into httpx's errors (closing
    ``connection``)."""
    try:
        yield
    except (OSError, Malformed) as error:
        if connection is not None:
            connection.close()
        raise _translated(error, request, step) from error


def _translated(error: Exception, request: httpx.Request, step: str) -> httpx.TransportError:
    if isinstance(error, Malformed):
        return httpx.RemoteProtocolError(str(error), request=request)
    timeout, failure = _STEP_ERRORS[step]
    message = str(error) or type(error).__name__
    if isinstance(error, TimeoutError):
        return timeout(message, request=request)
    return failure(message, request=request)
