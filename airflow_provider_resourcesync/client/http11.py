"""One HTTP/1.1 connection of the sync client's wire: a socket, and h11 (python-hyper/h11, a
maintained parser with no I/O of its own) saying what the bytes on it mean.

h11 frames and checks every message (RFC 9112): request heads it will not send, response heads
and bodies that break the protocol, a connection that cannot carry another request. This module
only moves bytes between the socket and h11, with a deadline on every read, and says plainly why
a connection may not be reused.
"""

from __future__ import annotations

import os
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator

import h11
import httpx

__all__ = ["MAX_HEAD", "READ_SIZE", "Connection", "request_head"]

#: The most bytes of a response head h11 holds while waiting for its end.
MAX_HEAD = 64 * 1024
#: The most bytes read from the socket at a time: a body's pieces are at most this. Big reads
#: let h11 hand a large body over in big pieces (docs/design.md, "The wire").
READ_SIZE = 1024 * 1024

#: The end of a request without a body (h11's events are immutable: one serves every request).
_END = h11.EndOfMessage()

#: Each thread's read buffer (h11 copies what it is given, so one buffer serves every read).
_buffers = threading.local()


def request_head(request: httpx.Request) -> h11.Request:
    """The head of ``request`` as h11 will send it.

    :raises h11.LocalProtocolError: a header or the target holds what HTTP forbids (a line
        break, NUL): the request cannot be sent.
    """
    return h11.Request(method=request.method, target=request.url.raw_path,
                       headers=request.headers.raw)


class Connection:
    """A socket carrying one request after another. Each read of the socket has the read
    timeout, shortened to what is left of the request's ``deadline`` (:func:`time.monotonic`
    time): a Source sending a byte now and then cannot hold a request past it."""

    __slots__ = ("deadline", "plain", "poller", "read_timeout", "sock", "state")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.plain = not isinstance(sock, ssl.SSLSocket)  # bytes on the socket are the wire
        self.poller = select.poll()  # watching the socket for :meth:`alive`
        self.poller.register(sock, select.POLLIN)
        self.state = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        self.read_timeout: float | None = None
        self.deadline: float | None = None

    def send(self, head: h11.Request, body: bytes) -> None:
        """Send a request whole (its ``head`` from :func:`request_head`)."""
        wire = self.state.send(head)
        if body:
            wire += self.state.send(h11.Data(data=body))
        wire += self.state.send(_END)
        self._arm()
        if self.plain:  # most requests go whole into the socket's buffer, with no wait first
            wire = wire[_write(self.sock, wire):]
        if wire:
            self.sock.sendall(wire)

    def response(self) -> h11.Response:
        """The final response's head (interim 1xx answers passed over, RFC 9110 section 15.2)."""
        while True:
            event = self._next()
            if isinstance(event, h11.Response):
                return event
            if not isinstance(event, h11.InformationalResponse):
                raise h11.RemoteProtocolError(f"expected a response, got {event!r}")

    def body(self) -> Iterator[bytes]:
        """The response body's pieces as they arrive, up to its end."""
        while True:
            event = self._next()
            if isinstance(event, h11.Data):
                yield event.data
            elif isinstance(event, h11.EndOfMessage):
                return
            else:
                raise h11.RemoteProtocolError(f"expected a response body, got {event!r}")

    def empty(self) -> bool:
        """Whether the response's body is over with nothing to read (HEAD, 204, 304, a length
        of 0): a response closed unread leaves its connection reusable only then."""
        try:
            return isinstance(self.state.next_event(), h11.EndOfMessage)
        except h11.ProtocolError:
            return False

    def renew(self) -> bool:
        """After a whole response: ready the connection for the next request, if it can carry
        one (both sides done, nothing received past the response's end: a Source's extra bytes
        are never read as the next response)."""
        state = self.state
        data, closed = state.trailing_data
        if data or closed or state.our_state is not h11.DONE or state.their_state is not h11.DONE:
            return False
        state.start_next_cycle()
        return True

    def alive(self) -> bool:
        """Whether an idle connection can carry a request: the server has sent nothing on it
        (had it closed it, or sent more, the socket would be readable). ``poll``, unlike
        ``select``, watches descriptors past 1023; a socket closed already is never idle in
        the pool (it answers ``POLLNVAL``)."""
        return not self.poller.poll(0)

    def close(self) -> None:
        self.sock.close()

    def _next(self) -> h11.Event | type[h11.PAUSED] | type[h11.NEED_DATA]:
        """h11's next event, received until it has one (never ``NEED_DATA``: the type of h11's
        sentinel classes cannot say so)."""
        state = self.state
        while (event := state.next_event()) is h11.NEED_DATA:
            self._arm()
            buffer = _buffer()
            size = self.sock.recv_into(buffer)
            if not size and state.their_state is h11.SEND_RESPONSE and not state.trailing_data[0]:
                raise h11.RemoteProtocolError(
                    "the server closed the connection without sending a response")
            # h11 appends to a bytearray of its own, which takes any bytes-like object: a view
            # spares a copy of each read; h11 annotates bytes
            state.receive_data(buffer[:size])  # type: ignore[arg-type]
        return event

    def _arm(self) -> None:
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


def _write(sock: socket.socket, data: bytes) -> int:
    """Write what the socket takes of ``data`` now, without the wait for room that a socket
    with a timeout makes before every send (a system call); 0 where it takes nothing."""
    if sock.gettimeout() is None:  # a blocking socket: sendall waits as it should
        return 0
    try:
        return os.write(sock.fileno(), data)
    except (BlockingIOError, InterruptedError):
        return 0


def _buffer() -> memoryview:
    buffer: memoryview | None = getattr(_buffers, "view", None)
    if buffer is None:
        buffer = _buffers.view = memoryview(bytearray(READ_SIZE))
    return buffer
