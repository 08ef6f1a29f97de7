"""A loopback HTTP server for tests: static content, real conditional GETs, injected faults.

:class:`SourceServer` listens on 127.0.0.1 on an ephemeral port and serves registered
:class:`Content` from a daemon thread. Every response but a 304 carries ``Content-Length``; a 200
also a strong ``ETag`` and ``Last-Modified``, and ``If-None-Match`` / ``If-Modified-Since`` get 304.
A body too large to hold, or one without end, is :meth:`SourceServer.stream` ed: made as it is
sent, in chunks, with no validators.
Faults (status codes, stalls, answers sent a byte at a time, truncated or corrupt bodies,
redirects, dropped connections) are queued per path and consumed in order. Every request is
logged, and the body bytes sent per path counted, so tests count at the server.

Each server is its own origin (``http://127.0.0.1:<port>``): start two to test that credentials
are not sent to another origin, or that a client fetches from the origins it allows only.

Given an :class:`ssl.SSLContext` (``tls``), it speaks HTTPS (``https://127.0.0.1:<port>``).
:attr:`SourceServer.connections_opened` counts the connections it accepted, and
:meth:`SourceServer.hang_up` closes the open ones, as a server does when a kept-alive connection
has been idle too long.

The server stops by itself after ``max_lifetime`` seconds, so a test that forgets it cannot
leave it running.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import ssl
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import Message
from email.utils import format_datetime, parsedate_to_datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["LOGGED_HEADERS", "MAX_STALL", "Content", "RequestRecord", "SourceServer"]

#: The address served on.
_HOST = "127.0.0.1"
#: The longest a stall may hold a request, in seconds.
MAX_STALL = 30.0
#: Request headers kept in the log (keys lower case).
LOGGED_HEADERS = (
    "authorization", "if-none-match", "if-modified-since", "user-agent", "host", "accept",
    "accept-encoding", "range", "cookie",
)
_BODY_FAULTS = frozenset({"truncate", "wrong_length", "corrupt"})


@dataclass(frozen=True, slots=True)
class Content:
    """What the server answers for one path: the body, its type, extra headers, its date."""

    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)
    last_modified: datetime | None = None
    etag: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "etag", f'"{hashlib.sha256(self.body).hexdigest()[:32]}"')

    def response_headers(self) -> dict[str, str]:
        """The headers of a 200 or 304 for this content (``Content-Length`` aside)."""
        headers = {"Content-Type": self.content_type, "ETag": self.etag}
        if self.last_modified is not None:
            headers["Last-Modified"] = format_datetime(
                self.last_modified.astimezone(UTC), usegmt=True)
        return headers | self.headers


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as the server saw it.

    ``path`` includes the query string; ``headers`` holds those of :data:`LOGGED_HEADERS` the
    request carried, keys lower case; ``status`` is None when the connection was dropped.
    """

    method: str
    path: str
    headers: dict[str, str]
    status: int | None


@dataclass(slots=True)
class _Fault:
    """A queued fault: ``kind`` and its parameters; ``times`` None means until cleared."""

    kind: str
    times: int | None
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    interval: float = 0.0
    head: bool = False
    endless: bool = False


_NO_FAULT = _Fault("none", None)


def _path_of(target: str) -> str:
    """A request target without its query string."""
    return target.partition("?")[0]


def _keys(target: str) -> tuple[str, ...]:
    """Where to look a request target up: ``path?query`` first, then the path."""
    path = _path_of(target)
    return (target,) if path == target else (target, path)


class SourceServer:
    """A threaded HTTP server on 127.0.0.1 serving registered content, with fault injection.

    :param max_lifetime: seconds after :meth:`start` at which the server stops by itself.
    :param delay: seconds to wait before answering each request (settable at any time).
    :param tls: serve HTTPS with this server-side context.
    """

    def __init__(self, *, max_lifetime: float = 600.0, delay: float = 0.0,
                 tls: ssl.SSLContext | None = None) -> None:
        self.delay = delay
        self.connections_opened = 0
        #: The most requests answered at once since the log was reset (see :meth:`reset_log`).
        self.most_at_once = 0
        self._answering = 0
        self._max_lifetime = max_lifetime
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._closed = threading.Event()
        self._contents: dict[str, Content] = {}
        self._streams: dict[str, tuple[Callable[[], Iterable[bytes]], str]] = {}
        self._gone: dict[str, int] = {}
        self._faults: dict[str, deque[_Fault]] = {}
        self._log: list[RequestRecord] = []
        self._body_bytes: dict[str, int] = {}
        self._connections: set[socket.socket] = set()
        self._httpd = _HTTPServer(self)
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self.base_url = f"{'https' if tls else 'http'}://{_HOST}:{self._httpd.server_port}"

    # -- lifetime --------------------------------------------------------------------------------

    def start(self) -> SourceServer:
        """Serve from a daemon thread; stop by itself after ``max_lifetime`` seconds."""
        if self._thread is not None or self._stopped.is_set():
            raise RuntimeError("a SourceServer starts once")
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name=f"SourceServer {self.base_url}", daemon=True)
        self._timer = threading.Timer(self._max_lifetime, self.stop)
        self._timer.daemon = True
        self._thread.start()
        self._timer.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and close open connections; calling it again does nothing."""
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
        if self._timer is not None:
            self._timer.cancel()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout)
        self._httpd.server_close()
        self.hang_up()
        self._closed.set()

    def hang_up(self) -> None:
        """Close every open connection (clients must open new ones)."""
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            _shut(connection)

    @property
    def running(self) -> bool:
        """Started and not yet closed: false only once the port refuses connections."""
        return self._thread is not None and not self._closed.is_set()

    def __enter__(self) -> SourceServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def url(self, path: str) -> str:
        """The absolute URL of ``path`` (which starts with ``/``) on this server."""
        if not path.startswith("/"):
            raise ValueError(f"path {path!r} must start with '/'")
        return self.base_url + path

    # -- content ---------------------------------------------------------------------------------

    def put(self, path: str, body: bytes, content_type: str = "application/octet-stream",
            headers: Mapping[str, str] | None = None, last_modified: datetime | None = None
            ) -> None:
        """Serve ``body`` at ``path`` (as sent on the wire; with ``?query`` to match only that).

        ``last_modified`` defaults to now; ``headers`` are added to every 200 and 304.
        """
        content = Content(body, content_type, dict(headers or {}),
                          last_modified or datetime.now(UTC))
        with self._lock:
            self._contents[path] = content
            self._streams.pop(path, None)
            self._gone.pop(path, None)

    def stream(self, path: str, chunks: Callable[[], Iterable[bytes]],
               content_type: str = "application/octet-stream") -> None:
        """Serve at ``path`` the body ``chunks()`` makes, sent as it is made
        (``Transfer-Encoding: chunked``, no validators): a body too large to hold, or without
        end. Faults but those of the body apply."""
        with self._lock:
            self._streams[path] = (chunks, content_type)
            self._contents.pop(path, None)
            self._gone.pop(path, None)

    def remove(self, path: str, status: int = 404) -> None:
        """Stop serving ``path``: later requests get ``status`` (404 or 410)."""
        with self._lock:
            self._contents.pop(path, None)
            self._streams.pop(path, None)
            self._gone[path] = status

    def get_body(self, path: str) -> bytes:
        """The body served at ``path``; KeyError if none."""
        with self._lock:
            return self._contents[path].body

    def _lookup(self, target: str
                ) -> Content | tuple[Callable[[], Iterable[bytes]], str] | int:
        """The content for a request target (a stream's chunks and type), else the status to
        answer with."""
        with self._lock:
            for key in _keys(target):
                if key in self._contents:
                    return self._contents[key]
                if key in self._streams:
                    return self._streams[key]
                if key in self._gone:
                    return self._gone[key]
        return HTTPStatus.NOT_FOUND

    # -- faults ----------------------------------------------------------------------------------

    def fail(self, path: str, status: int, times: int = 1,
             headers: Mapping[str, str] | None = None) -> None:
        """Answer ``status`` (with ``headers``, e.g. ``Retry-After``) to the next requests."""
        self._queue(path, _Fault("status", times, status=status, headers=dict(headers or {})))

    def stall(self, path: str, seconds: float, times: int = 1) -> None:
        """Wait ``seconds`` (at most :data:`MAX_STALL`), then answer normally."""
        self._queue(path, _Fault("stall", times, seconds=min(seconds, MAX_STALL)))

    def drip(self, path: str, interval: float, *, head: bool = False, endless: bool = False,
             seconds: float = MAX_STALL, times: int = 1) -> None:
        """Send the body one byte every ``interval`` seconds (the head too, with ``head``), for
        at most ``seconds`` (and :data:`MAX_STALL`), then close the connection. ``endless``:
        no ``Content-Length``, and the body repeated without end."""
        self._queue(path, _Fault("drip", times, seconds=min(seconds, MAX_STALL),
                                 interval=interval, head=head, endless=endless))

    def truncate(self, path: str, times: int = 1) -> None:
        """Declare the full ``Content-Length``, send half the body, close the connection."""
        self._queue(path, _Fault("truncate", times))

    def wrong_length(self, path: str, times: int = 1) -> None:
        """Declare a ``Content-Length`` one larger than the body, send it, close the connection."""
        self._queue(path, _Fault("wrong_length", times))

    def corrupt(self, path: str, times: int = 1) -> None:
        """Send the body with one byte flipped (same length, same ``ETag``)."""
        self._queue(path, _Fault("corrupt", times))

    def redirect(self, path: str, location: str, status: int = 302,
                 times: int | None = None) -> None:
        """Redirect to ``location``; ``times`` None: until :meth:`clear_faults`."""
        self._queue(path, _Fault("status", times, status=status, headers={"Location": location}))

    def drop(self, path: str, times: int = 1) -> None:
        """Close the connection without any response."""
        self._queue(path, _Fault("drop", times))

    def clear_faults(self) -> None:
        """Forget every queued fault."""
        with self._lock:
            self._faults.clear()

    def _queue(self, path: str, fault: _Fault) -> None:
        if fault.times is not None and fault.times < 1:
            raise ValueError(f"times must be at least 1, not {fault.times}")
        with self._lock:
            self._faults.setdefault(path, deque()).append(fault)

    def _take_fault(self, target: str) -> _Fault:
        """The fault for this request (:data:`_NO_FAULT` if none), consumed once."""
        with self._lock:
            for key in _keys(target):
                queue = self._faults.get(key)
                if not queue:
                    continue
                fault = queue[0]
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times == 0:
                        queue.popleft()
                return fault
        return _NO_FAULT

    # -- request log -----------------------------------------------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        """A copy of the request log, in the order answers began (a client holding a response
        finds its request here)."""
        with self._lock:
            return list(self._log)

    def count(self, path: str | None = None, method: str | None = "GET",
              status: int | None = None) -> int:
        """Requests logged for ``path`` (any query, unless ``path`` has one), ``method`` (None:
        any) and ``status`` (None: any)."""
        return sum(1 for record in self.requests if _matches(record, path, method, status))

    def reset_log(self) -> None:
        with self._lock:
            self._log.clear()
            self._body_bytes.clear()
            self.most_at_once = self._answering

    def body_bytes_sent(self, path: str) -> int:
        """Body bytes handed to clients for ``path`` (as requested, query included) since
        the log was reset; each write is counted as it begins, so whatever a client has
        received is counted."""
        with self._lock:
            return self._body_bytes.get(path, 0)

    def _sent(self, path: str, count: int) -> None:
        with self._lock:
            self._body_bytes[path] = self._body_bytes.get(path, 0) + count

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self._log.append(record)

    # -- used by the request handler -------------------------------------------------------------

    def _answering_one(self, more: int) -> None:
        with self._lock:
            self._answering += more
            self.most_at_once = max(self.most_at_once, self._answering)

    def _pause(self, seconds: float) -> None:
        """Wait, unless the server stops first."""
        if seconds > 0:
            self._stopped.wait(seconds)

    def _track(self, connection: socket.socket, *, open_: bool) -> None:
        with self._lock:
            if open_:
                self._connections.add(connection)
                self.connections_opened += 1
            else:
                self._connections.discard(connection)


def _matches(record: RequestRecord, path: str | None, method: str | None,
             status: int | None) -> bool:
    if path is not None and path != (record.path if "?" in path else _path_of(record.path)):
        return False
    return (method is None or record.method == method) and (
        status is None or record.status == status)


def _shut(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the client or the handler
        connection.shutdown(socket.SHUT_RDWR)


def _not_modified(content: Content, headers: Message) -> bool:
    """RFC 9110 13.1.2-13.1.3: ``If-None-Match`` wins over ``If-Modified-Since``."""
    if_none_match = headers.get("If-None-Match")
    if if_none_match is not None:
        tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
        return "*" in tags or content.etag in tags
    since = headers.get("If-Modified-Since")
    if since is None or content.last_modified is None:
        return False
    try:
        when = parsedate_to_datetime(since)
    except (TypeError, ValueError):
        return False
    if when.tzinfo is None:
        return False
    return content.last_modified.replace(microsecond=0) <= when


def _one_by_one(head: bytes, body: bytes, *, endless: bool) -> Iterator[tuple[bytes, bool]]:
    """An answer's bytes one at a time, each with whether it is the body's; ``endless``: the
    body again and again."""
    for byte in head:
        yield bytes([byte]), False
    while True:
        for byte in body:
            yield bytes([byte]), True
        if not endless or not body:
            return


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, source: SourceServer) -> None:
        self.source = source
        super().__init__((_HOST, 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about clients hanging up (which faults provoke); loud about anything else."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without this, a kept-alive connection waits for
    # the client's delayed ACK (about 40 ms) between them.
    disable_nagle_algorithm = True
    server_version = "ResourceSyncTestSource"
    sys_version = ""
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.source._track(self.connection, open_=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.source._track(self.connection, open_=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: no line per request on stderr."""

    def do_GET(self) -> None:
        self._answer()

    def do_HEAD(self) -> None:
        self._answer()

    def _answer(self) -> None:
        source = self.server.source
        source._answering_one(1)
        try:
            self._answer_now(source)
        finally:
            source._answering_one(-1)

    def _answer_now(self, source: SourceServer) -> None:
        source._pause(source.delay)
        fault = source._take_fault(self.path)
        if fault.kind == "drop":
            self._log(None)
            self.close_connection = True
            return
        if fault.kind == "status":
            self._send_status(fault.status, fault.headers)
            return
        if fault.kind == "stall":
            source._pause(fault.seconds)
        found = source._lookup(self.path)
        if isinstance(found, int):
            self._send_status(found, {})
        elif isinstance(found, tuple):
            self._stream(*found)
        elif _not_modified(found, self.headers):
            self._send(HTTPStatus.NOT_MODIFIED, found.response_headers(), None)
        elif fault.kind in _BODY_FAULTS:
            self._send_faulty(fault.kind, found)
        elif fault.kind == "drip":
            self._drip(fault, found)
        else:
            self._send(HTTPStatus.OK, found.response_headers(), found.body)

    def _log(self, status: int | None) -> None:
        """Record the request before its response goes out, so a client that has the response
        finds the request in the log."""
        headers = {name: value for name in LOGGED_HEADERS
                   if (value := self.headers.get(name)) is not None}
        self.server.source._record(RequestRecord(
            self.command, self.path, headers, None if status is None else int(status)))

    def _send_status(self, status: int, headers: Mapping[str, str]) -> None:
        try:
            body = f"{status} {HTTPStatus(status).phrase}\n".encode()
        except ValueError:
            body = f"{status}\n".encode()
        self._send(status, {"Content-Type": "text/plain"} | dict(headers), body)

    def _send_faulty(self, kind: str, content: Content) -> None:
        body, length = content.body, len(content.body)
        if kind == "truncate":
            body = body[: length // 2]
        elif kind == "wrong_length":
            length += 1
        elif body:  # corrupt
            middle = len(body) // 2
            body = body[:middle] + bytes([body[middle] ^ 0x01]) + body[middle + 1:]
        self._send(HTTPStatus.OK, content.response_headers(), body, length=length)
        self.close_connection = kind != "corrupt"

    def _drip(self, fault: _Fault, content: Content) -> None:
        """A 200 sent a byte at a time (see :meth:`SourceServer.drip`)."""
        source = self.server.source
        self._log(HTTPStatus.OK)
        self.close_connection = True
        headers = content.response_headers() | {"Connection": "close"}
        if not fault.endless:
            headers["Content-Length"] = str(len(content.body))
        head = "".join(["HTTP/1.1 200 OK\r\n", *(f"{name}: {value}\r\n"
                                                  for name, value in headers.items()),
                        "\r\n"]).encode("latin-1")
        if not fault.head:
            self.wfile.write(head)
            head = b""
        ends = time.monotonic() + fault.seconds
        for byte, of_body in _one_by_one(head, content.body, endless=fault.endless):
            source._pause(fault.interval)
            if source._stopped.is_set() or time.monotonic() >= ends:
                return
            if of_body:  # counted first: a client that has the byte finds it counted
                source._sent(self.path, 1)
            self.wfile.write(byte)

    def _stream(self, chunks: Callable[[], Iterable[bytes]], content_type: str) -> None:
        """A 200 whose body is sent chunk by chunk as ``chunks()`` makes it (see
        :meth:`SourceServer.stream`)."""
        source = self.server.source
        self._log(HTTPStatus.OK)
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if self.command == "HEAD":
            return
        for chunk in chunks():
            if source._stopped.is_set():
                self.close_connection = True
                return
            if chunk:
                source._sent(self.path, len(chunk))  # first, as in _drip
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")

    def _send(self, status: int, headers: Mapping[str, str], body: bytes | None, *,
              length: int | None = None) -> None:
        """Status line, headers, ``Content-Length`` (unless ``body`` is None: a 304), body
        (unless HEAD)."""
        self._log(status)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if body is not None and self.command != "HEAD":
            self.server.source._sent(self.path, len(body))  # first, as in _drip
            self.wfile.write(body)
