"""httpx's async transport interface over an httpcore connection pool the caller builds.

httpx's ``AsyncHTTPTransport`` builds its pool itself and passes on none of httpcore's
``network_backend``; :class:`PoolTransport` takes any ``httpcore.AsyncConnectionPool`` and does
what httpx's transport does with it: requests and responses converted between the two, and
httpcore's errors raised as their httpx namesakes.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import contextmanager

import httpcore
import httpx

__all__ = ["PoolTransport"]

#: httpcore's errors and the httpx errors raised for them (httpx's own transport's mapping).
_ERRORS: dict[type[Exception], type[httpx.TransportError]] = {
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.ProxyError: httpx.ProxyError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
    httpcore.ProtocolError: httpx.ProtocolError,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
}


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """httpcore's errors raised as the httpx error of the nearest class; others as they are."""
    try:
        yield
    except Exception as error:
        for kind in type(error).__mro__:
            if kind in _ERRORS:
                raise _ERRORS[kind](str(error)) from error
        raise


class _Body(httpx.AsyncByteStream):
    """A response body from httpcore, its errors raised as httpx's."""

    def __init__(self, parts: AsyncIterable[bytes]) -> None:
        self._parts = parts

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for part in self._parts:
                yield part

    async def aclose(self) -> None:
        if hasattr(self._parts, "aclose"):  # httpcore's body gives its connection back
            await self._parts.aclose()


class PoolTransport(httpx.AsyncBaseTransport):
    """httpx's async transport over ``pool`` (closed with the transport)."""

    def __init__(self, pool: httpcore.AsyncConnectionPool) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port,
                             target=url.raw_path),
            headers=request.headers.raw, content=request.stream, extensions=request.extensions)
        with _as_httpx_errors():
            response = await self._pool.handle_async_request(core)
        assert isinstance(response.stream, AsyncIterable)
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_Body(response.stream), extensions=response.extensions)

    async def aclose(self) -> None:
        await self._pool.aclose()
