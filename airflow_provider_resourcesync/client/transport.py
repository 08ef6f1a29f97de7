"""The wire under the sync client: HTTP/1.1 over the standard library's :mod:`http.client`,
behind httpx's transport interface.

httpx's own transport (httpcore over h11) spends about three times the CPU of
:mod:`http.client` on each small request, and on two cores that CPU is what bounds a baseline of
many small resources (docs/design.md, "The sync client's transport"). Everything above the wire
stays httpx's: the client, requests and responses, auth, timeouts as configured, errors. This
module only moves bytes, and keeps idle connections for reuse.

Rules it keeps, as httpx's transport does:

- an idle connection is reused only if it is younger than :data:`KEEPALIVE_EXPIRY` and the
  server has not closed it (nothing readable on it); otherwise a new one is opened;
- a connection goes back to the idle pool only after its response was read whole and the server
  did not ask to close it;
- a body shorter than its ``Content-Length`` is a :class:`httpx.RemoteProtocolError`; timeouts,
  refused connections and broken ones are the matching :class:`httpx.TransportError`.
"""

from __future__ import annotations

import http.client
import select
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.request import getproxies

import httpx

from .policy import ClientPolicy

__all__ = ["KEEPALIVE_EXPIRY", "StdlibTransport", "default_transport"]

#: Seconds an idle connection is kept (httpx's default).
KEEPALIVE_EXPIRY = 5.0
#: Bytes read at a time from a body.
CHUNK = 64 * 1024

_Origin = tuple[str, str, int]


@dataclass(slots=True)
class _Idle:
    connection: http.client.HTTPConnection
    since: float = field(default_factory=time.monotonic)


def default_transport(policy: ClientPolicy) -> StdlibTransport | None:
    """The sync client's transport for ``policy``; None (httpx's own, which honours proxies)
    where the environment names a proxy."""
    if getproxies():
        return None
    return StdlibTransport(verify=policy.verify,
                           max_idle_per_origin=4 * policy.concurrency_per_host)


class StdlibTransport(httpx.BaseTransport):
    """HTTP/1.1 over :mod:`http.client`, with a pool of idle connections per origin.

    :param verify: verify TLS certificates (as ``httpx.Client(verify=...)``).
    :param max_idle_per_origin: idle connections kept per scheme, host and port.
    """

    def __init__(self, *, verify: bool = True, max_idle_per_origin: int = 64) -> None:
        self._verify = verify
        self._max_idle = max_idle_per_origin
        self._idle: dict[_Origin, list[_Idle]] = {}
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None
        self._closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        origin = _origin(request.url)
        timeouts = request.extensions.get("timeout", {})
        connection = self._reuse(origin) or self._connect(request, origin, timeouts)
        assert connection.sock is not None
        if connection.sock.gettimeout() != timeouts.get("read"):
            connection.sock.settimeout(timeouts.get("read"))
        with _errors(request, "send", connection):
            connection.putrequest(request.method, request.url.raw_path.decode("ascii"),
                                  skip_host=True, skip_accept_encoding=True)
            for name, value in request.headers.raw:
                connection.putheader(name, value)
            connection.endheaders(request.read() or None)
        with _errors(request, "read", connection):
            response = connection.getresponse()
        return httpx.Response(
            response.status, headers=response.getheaders(),
            stream=_Body(self, request, origin, connection, response),
            extensions={"http_version": b"HTTP/1.1",
                        "reason_phrase": response.reason.encode("latin-1", "replace")})

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for kept in connections:
                kept.connection.close()

    # -- connections -----------------------------------------------------------------------------

    def _reuse(self, origin: _Origin) -> http.client.HTTPConnection | None:
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
                 timeouts: dict[str, float | None]) -> http.client.HTTPConnection:
        scheme, host, port = origin
        connect_timeout = timeouts.get("connect")
        connection: http.client.HTTPConnection
        if scheme == "https":
            connection = http.client.HTTPSConnection(host, port, timeout=connect_timeout,
                                                     context=self._context())
        else:
            connection = http.client.HTTPConnection(host, port, timeout=connect_timeout)
        with _errors(request, "connect", connection):
            connection.connect()
        return connection

    def _context(self) -> ssl.SSLContext:
        with self._lock:
            if self._ssl is None:
                self._ssl = httpx.create_ssl_context(verify=self._verify)
            return self._ssl

    def _release(self, origin: _Origin, connection: http.client.HTTPConnection) -> None:
        """Keep a connection whose last response was read whole, room permitting."""
        with self._lock:
            connections = self._idle.setdefault(origin, [])
            if not self._closed and len(connections) < self._max_idle:
                connections.append(_Idle(connection))
                return
        connection.close()


class _Body(httpx.SyncByteStream):
    """A response body read from its connection; closing hands the connection back (when the body
    was read whole and the server keeps it open) or closes it."""

    def __init__(self, transport: StdlibTransport, request: httpx.Request, origin: _Origin,
                 connection: http.client.HTTPConnection,
                 response: http.client.HTTPResponse) -> None:
        self._transport = transport
        self._request = request
        self._origin = origin
        self._connection: http.client.HTTPConnection | None = connection
        self._response = response

    def __iter__(self) -> Iterator[bytes]:
        response = self._response
        while True:
            with _errors(self._request, "read"):
                chunk = response.read(CHUNK)
            if chunk:
                yield chunk
                continue
            if response.length:  # a Content-Length the server did not send
                raise httpx.RemoteProtocolError(
                    "the server closed the connection before the whole body arrived "
                    f"({response.length} bytes missing)", request=self._request)
            return

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._response.isclosed() and not self._response.will_close:
            self._transport._release(self._origin, connection)
        else:
            self._response.close()
            connection.close()


def _origin(url: httpx.URL) -> _Origin:
    scheme = url.scheme
    if scheme not in ("http", "https"):
        raise httpx.UnsupportedProtocol(f"{scheme!r} URLs are not supported")
    return scheme, url.host, url.port or (443 if scheme == "https" else 80)


def _readable(connection: http.client.HTTPConnection) -> bool:
    """Whether an idle connection has something to read: the server closed it (or broke the
    protocol), so it cannot carry another request."""
    if connection.sock is None:
        return True
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
            connection: http.client.HTTPConnection | None = None) -> Iterator[None]:
    """Turn the standard library's errors in ``step`` into httpx's (closing ``connection``)."""
    try:
        yield
    except (OSError, http.client.HTTPException) as error:
        if connection is not None:
            connection.close()
        raise _translated(error, request, step) from error


def _translated(error: Exception, request: httpx.Request, step: str) -> httpx.TransportError:
    timeout, failure = _STEP_ERRORS[step]
    message = str(error) or type(error).__name__
    if isinstance(error, TimeoutError):
        return timeout(message, request=request)
    if isinstance(error, http.client.RemoteDisconnected):
        return httpx.RemoteProtocolError("the server closed the connection without sending a "
                                         "response", request=request)
    if isinstance(error, http.client.HTTPException):
        return httpx.RemoteProtocolError(message, request=request)
    return failure(message, request=request)
