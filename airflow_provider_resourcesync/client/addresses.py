"""Connections that go to the address checked: a host name is resolved once, every address it
resolved to is checked (the guard's private-address rule), and the connection is made to one
of those very addresses. A name that resolves to a public address for a check and to a private
one for the connection (DNS rebinding) cannot reach the private one.

:func:`open_checked` serves the sync transport; :func:`checked_async_transport` gives the async
client a transport over an httpcore network backend doing the same.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

from .pooled import PoolTransport

__all__ = ["AddressCheck", "checked_async_transport", "open_checked"]

#: ``check(url, addresses)``: raises when ``url``'s host may not be reached at ``addresses``.
AddressCheck = Callable[[str, Sequence[str]], None]

#: The URL the async transport is connecting for (the network backend is told the host only).
_URL: ContextVar[str] = ContextVar("resourcesync_connecting_url")


def open_checked(url: str, host: str, port: int, timeout: float | None,
                 check: AddressCheck | None) -> socket.socket:
    """A TCP connection to ``host``: resolved once, every address checked by ``check`` (None:
    none is), then connected to the first that answers.

    :raises OSError: no address, or none could be connected to (the last failure).
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    if check is not None:
        check(url, _addresses(infos))
    failure: OSError | None = None
    for family, kind, protocol, _, address in infos:
        sock = socket.socket(family, kind, protocol)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
        except OSError as error:
            sock.close()
            failure = error
            continue
        return sock
    raise failure or OSError(f"{host!r} resolves to no address")


def _addresses(infos: Iterable[tuple[Any, ...]]) -> list[str]:
    return [str(info[4][0]) for info in infos]


class _CheckedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to checked addresses."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend, check: AddressCheck) -> None:
        self._inner = inner
        self._check = check

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                infos = await asyncio.get_running_loop().getaddrinfo(
                    host, port, type=socket.SOCK_STREAM)
        except TimeoutError as error:
            raise httpcore.ConnectTimeout(f"resolving {host!r} timed out") from error
        except OSError as error:
            raise httpcore.ConnectError(f"resolving {host!r}: {error}") from error
        addresses = _addresses(infos)
        self._check(_URL.get(f"//{host}:{port}"), addresses)
        failure: httpcore.ConnectError | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address,
                    socket_options=socket_options)
            except httpcore.ConnectError as error:
                failure = error
        raise failure or httpcore.ConnectError(f"{host!r} resolves to no address")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _CheckedTransport(PoolTransport):
    """The async transport, telling its network backend which URL it connects for."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        token = _URL.set(str(request.url))
        try:
            return await super().handle_async_request(request)
        finally:
            _URL.reset(token)


def checked_async_transport(verify: bool, limits: httpx.Limits, check: AddressCheck
                            ) -> httpx.AsyncBaseTransport:
    """An async transport as httpx's own with ``verify`` and ``limits``, connecting only to
    addresses ``check`` accepts (httpcore's pool over :class:`_CheckedBackend`; httpx's
    transport would not take the backend)."""
    return _CheckedTransport(httpcore.AsyncConnectionPool(
        ssl_context=httpx.create_ssl_context(verify=verify),
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=_CheckedBackend(httpcore.AnyIOBackend(), check)))
