"""The async client, for triggers: the sync client's policy and plan, over ``httpx.AsyncClient``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from types import TracebackType
from typing import TypeVar
from urllib.parse import urlsplit

import httpx

from ..errors import ContentMismatchError
from .cache import DocumentCache
from .exchange import Exchange
from .guard import HostGuard
from .policy import ClientPolicy
from .sinks import DocumentSink, FetchedDocument, Page, PageSink
from .sync_client import MAX_PAGE_BYTES, Sink, httpx_settings

__all__ = ["AsyncResourceSyncClient"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class AsyncResourceSyncClient:
    """Async HTTP access to one ResourceSync Source (documents and pages; triggers poll with it).

    :param policy: timeouts, retries, limits, credentials and reachable hosts.
    :param source_urls: URLs whose hosts are the Source's (at least the base URL).
    """

    def __init__(self, policy: ClientPolicy | None = None, *, source_urls: Iterable[str] = (),
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.policy = policy or ClientPolicy()
        self.guard = HostGuard(self.policy, source_urls)
        self.cache = DocumentCache()
        self._http = httpx.AsyncClient(transport=transport, **httpx_settings(self.policy))
        self._slots: dict[str, asyncio.Semaphore] = {}

    async def fetch_document(self, url: str) -> FetchedDocument:
        """GET a document, conditionally when we hold it: unchanged, it costs one 304."""
        sink = DocumentSink(self.cache, url, self.policy.max_document_bytes)
        return await self._get(url, sink, headers=self.cache.validators(url))

    async def fetch_page(self, url: str) -> Page:
        """A small page (HTML, robots.txt), whatever its status."""
        return await self._get(url, PageSink(url, MAX_PAGE_BYTES))

    async def _get(self, url: str, sink: Sink[T], *, headers: dict[str, str] | None = None
                   ) -> T:
        exchange = Exchange(self.policy, self.guard, url, headers=headers)
        while True:
            await self.guard.acheck_addresses(exchange.url)
            try:
                async with self._slot(exchange.url), self._http.stream(
                        "GET", exchange.url, headers=exchange.headers) as response:
                    step = exchange.on_response(response)
                    if step.deliver:
                        sink.start(response, exchange.url, exchange.tries)
                        async for chunk in response.aiter_bytes():
                            sink.write(chunk)
                        return sink.finish()
            except httpx.TransportError as error:
                sink.discard()
                step = exchange.on_error(error)
            except ContentMismatchError as error:
                sink.discard()
                step = exchange.on_mismatch(error)
            except BaseException:
                sink.discard()
                raise
            if step.delay:
                log.info("Retrying %s in %.1f s (try %d)", exchange.url, step.delay,
                         exchange.tries + 1)
                await asyncio.sleep(step.delay)

    def _slot(self, url: str) -> asyncio.Semaphore:
        host = urlsplit(url).hostname or ""
        slot = self._slots.get(host)
        if slot is None:
            slot = self._slots[host] = asyncio.Semaphore(self.policy.concurrency_per_host)
        return slot

    async def aclose(self) -> None:
        await self._http.aclose()
        self.cache.close()

    async def __aenter__(self) -> AsyncResourceSyncClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
