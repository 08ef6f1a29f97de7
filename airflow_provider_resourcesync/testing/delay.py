"""A store far away, on loopback: a TCP proxy that holds each HTTP request a while.

:class:`DelayingProxy` listens on 127.0.0.1 and passes each connection on to a server (moto's
S3, say), holding each request ``delay`` seconds before passing it on, as a round trip to
another region would. A request is what a client sends after the server's last answer on the
connection (HTTP/1.1 without pipelining, as boto3, the AWS CLI and rclone speak it). It counts
the requests passed on and the most that were waiting for an answer at once (:attr:`peak`):
reads that overlap show there, whatever the machine's speed.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType

__all__ = ["DelayingProxy"]

_CHUNK = 256 * 1024


class DelayingProxy:
    """A proxy to ``host:port`` holding each request ``delay`` seconds; ``url`` is where it
    listens, while it is open (``with``)."""

    def __init__(self, host: str, port: int, delay: float) -> None:
        self.target = (host, port)
        self.delay = delay
        self.requests = 0
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._open: list[socket.socket] = []
        self._stopped = threading.Event()
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def __enter__(self) -> DelayingProxy:
        threading.Thread(target=self._accept, name="delaying_proxy", daemon=True).start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stopped.set()
        self._listener.close()
        with self._lock:
            for connection in self._open:
                _close(connection)

    def reset(self) -> None:
        """Count from zero again."""
        with self._lock:
            self.requests = self.peak = 0

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=30)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            for connection in (client, upstream):
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._open += [client, upstream]
            state = _Connection()
            threading.Thread(target=self._requests, args=(client, upstream, state),
                             daemon=True).start()
            threading.Thread(target=self._answers, args=(upstream, client, state),
                             daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket,
                  state: _Connection) -> None:
        """Client to server: the first bytes of each request held ``delay`` seconds."""
        while data := _received(client):
            with self._lock:
                new = not state.asking
                state.asking = True
            if new:
                time.sleep(self.delay)
                with self._lock:
                    self.requests += 1
                    self.in_flight += 1
                    self.peak = max(self.peak, self.in_flight)
            try:
                upstream.sendall(data)
            except OSError:
                break
        _close(upstream)

    def _answers(self, upstream: socket.socket, client: socket.socket,
                 state: _Connection) -> None:
        """Server to client: the first bytes of an answer end the request."""
        while data := _received(upstream):
            with self._lock:
                if state.asking:
                    state.asking = False
                    self.in_flight -= 1
            try:
                client.sendall(data)
            except OSError:
                break
        with self._lock:
            if state.asking:
                state.asking = False
                self.in_flight -= 1
        _close(client)


class _Connection:
    __slots__ = ("asking",)

    def __init__(self) -> None:
        self.asking = False  # a request passed on, its answer not begun


def _received(connection: socket.socket) -> bytes:
    try:
        return connection.recv(_CHUNK)
    except OSError:
        return b""


def _close(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
    connection.close()
