"""The wire under the sync client: HTTP/1.1 over sockets, parsed by h11, behind httpx's
transport interface.

httpx's own transport (httpcore over h11) spends more CPU on each small request than h11 alone
does; on two cores that CPU is what bounds a baseline of many small resources (docs/design.md,
"The wire"). Everything above the wire stays httpx's: requests and responses, timeouts as
configured, errors (the sync client hands its GETs over itself, see
``ResourceSyncClient._send``). Messages are h11's to write, frame and check
(:mod:`.http11`); what is ours is the idle pool:

- an idle connection is reused only if it is younger than :data:`KEEPALIVE_EXPIRY` and the
  server has sent nothing on it since (neither closed it nor sent more);
- a connection goes back to the idle pool only after its response was read whole (or had no
  body), both sides can carry another exchange (h11's states), and nothing arrived past the
  response's end;
- a host is connected to, named in TLS (SNI, the certificate's check) and in ``Host`` by one
  IDNA 2008 A-label, httpx's ``raw_host``;
- a response h11 refuses is :class:`httpx.RemoteProtocolError`, a request h11 will not send is
  :class:`httpx.LocalProtocolError` (nothing sent); timeouts, refused connections and broken
  ones are the matching :class:`httpx.TransportError`.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import TracebackType
from urllib.request import getproxies

import h11
import httpx

from ..errors import shown
from .addresses import AddressCheck, open_checked
from .http11 import Connection, request_head
from .policy import ClientPolicy

__all__ = ["KEEPALIVE_EXPIRY", "SocketTransport", "default_transport", "proxy_in_environment"]

#: Seconds an idle connection is kept (httpx's default).
KEEPALIVE_EXPIRY = 5.0

#: The schemes whose proxies httpx takes from the environment (``NO_PROXY`` alone names none).
_PROXIED = frozenset({"http", "https", "all"})

_Origin = tuple[str, str, int]


@dataclass(slots=True)
class _Idle:
    connection: Connection
    since: float = field(default_factory=time.monotonic)


def proxy_in_environment() -> bool:
    """Whether the environment names a proxy httpx would use (``HTTP_PROXY``, ``HTTPS_PROXY``,
    ``ALL_PROXY``); ``NO_PROXY`` only says which hosts bypass one."""
    return not _PROXIED.isdisjoint(getproxies())


def default_transport(policy: ClientPolicy, check: AddressCheck | None = None
                      ) -> SocketTransport | None:
    """The sync client's transport for ``policy``, connecting only to addresses ``check``
    accepts; None (httpx's own, which honours proxies) where the environment names a proxy."""
    if proxy_in_environment():
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
        with _errors(request, "send"):
            head = request_head(request)
        body = request.read()
        timeouts = request.extensions.get("timeout", {})
        deadline = request.extensions.get("deadline")
        connection = self._reuse(origin) or self._connect(request, origin, timeouts, deadline)
        connection.read_timeout = timeouts.get("read")
        connection.deadline = deadline
        with _errors(request, "send", connection):
            connection.send(head, body)
        with _errors(request, "read", connection):
            response = connection.response()
        return httpx.Response(
            response.status_code, headers=response.headers.raw_items(),
            stream=_Body(self, request, origin, connection),
            extensions={"http_version": b"HTTP/" + response.http_version,
                        "reason_phrase": response.reason})

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for kept in connections:
                kept.connection.close()

    # -- connections -----------------------------------------------------------------------------

    def _reuse(self, origin: _Origin) -> Connection | None:
        """An idle connection to ``origin`` still open and not expired, if there is one."""
        while True:
            with self._lock:
                connections = self._idle.get(origin)
                if not connections:
                    return None
                kept = connections.pop()
            connection = kept.connection
            if time.monotonic() - kept.since < KEEPALIVE_EXPIRY and connection.alive():
                return connection
            connection.close()

    def _connect(self, request: httpx.Request, origin: _Origin,
                 timeouts: dict[str, float | None], deadline: float | None) -> Connection:
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
        return Connection(sock)

    def _context(self) -> ssl.SSLContext:
        with self._lock:
            if self._ssl is None:
                self._ssl = httpx.create_ssl_context(verify=self._verify)
            return self._ssl

    def _release(self, origin: _Origin, connection: Connection) -> None:
        """Keep a connection whose last response was read whole, room permitting."""
        if not connection.renew():
            connection.close()
            return
        with self._lock:
            connections = self._idle.setdefault(origin, [])
            if not self._closed and len(connections) < self._max_idle:
                connections.append(_Idle(connection))
                return
        connection.close()


class _Body(httpx.SyncByteStream):
    """A response body read from its connection. Closing hands the connection back (when the
    body was read whole, or had nothing to read) or closes it."""

    def __init__(self, transport: SocketTransport, request: httpx.Request, origin: _Origin,
                 connection: Connection) -> None:
        self._transport = transport
        self._request = request
        self._origin = origin
        self._connection: Connection | None = connection
        self._whole = False

    def __iter__(self) -> Iterator[bytes]:
        connection = self._connection
        if connection is None or self._whole:
            return
        with _errors(self._request, "read"):
            yield from connection.body()
        self._whole = True

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._whole or connection.empty():
            self._transport._release(self._origin, connection)
        else:
            connection.close()


def _origin(url: httpx.URL) -> _Origin:
    """Scheme, host and port; the host as httpx writes it in ``Host``: an IDNA 2008 A-label
    (RFC 5891), which Python's own codec (IDNA 2003) would map differently."""
    scheme = url.scheme
    if scheme not in ("http", "https"):
        raise httpx.UnsupportedProtocol(f"{scheme!r} URLs are not supported")
    return scheme, url.raw_host.decode("ascii"), url.port or (443 if scheme == "https" else 80)


#: httpx's errors for a timeout and for any other failure, by the step that failed.
_STEP_ERRORS: dict[str, tuple[type[httpx.TransportError], type[httpx.TransportError]]] = {
    "connect": (httpx.ConnectTimeout, httpx.ConnectError),
    "send": (httpx.WriteTimeout, httpx.WriteError),
    "read": (httpx.ReadTimeout, httpx.ReadError),
}


class _errors:  # a context manager used as a function: a class costs less per use
    """Turn a socket's errors and h11's in ``step`` into httpx's errors (closing
    ``connection``)."""

    __slots__ = ("connection", "request", "step")

    def __init__(self, request: httpx.Request, step: str,
                 connection: Connection | None = None) -> None:
        self.request = request
        self.step = step
        self.connection = connection

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if isinstance(error, (OSError, h11.ProtocolError)):
            if self.connection is not None:
                self.connection.close()
            raise _translated(error, self.request, self.step) from error


def _translated(error: Exception, request: httpx.Request, step: str) -> httpx.TransportError:
    if isinstance(error, h11.LocalProtocolError):
        return httpx.LocalProtocolError(
            f"the request to {shown(str(request.url))} was not sent: {shown(str(error))}; a "
            "header or target holding a line break, NUL or another character HTTP forbids is "
            "refused, so that no header can be smuggled in", request=request)
    if isinstance(error, h11.RemoteProtocolError):
        return httpx.RemoteProtocolError(f"the response breaks HTTP/1.1: {shown(str(error))}",
                                         request=request)
    timeout, failure = _STEP_ERRORS[step]
    message = str(error) or type(error).__name__
    if isinstance(error, TimeoutError):
        return timeout(message, request=request)
    return failure(message, request=request)
