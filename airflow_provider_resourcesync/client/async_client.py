"""The async client, for triggers: the sync client's policy and plan, over ``httpx.AsyncClient``."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from types import TracebackType
from typing import TypeVar
from urllib.parse import urlsplit

import httpx

from ..errors import ContentMismatchError
from .addresses import checked_async_transport
from .cache import DocumentCache
from .exchange import Exchange
from .guard import HostGuard
from .policy import ClientPolicy
from .retry import RetryBudget
from .sinks import DocumentSink, FetchedDocument, Page, PageSink, response_fields
from .sync_client import MAX_PAGE_BYTES, Sink, httpx_settings
from .transport import proxy_in_environment

__all__ = ["AsyncResourceSyncClient"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class AsyncResourceSyncClient:
    """Async HTTP access to one ResourceSync Source (documents and pages; triggers poll with it).

    :param policy: timeouts, retries, limits, credentials and reachable hosts.
    :param source_urls: URLs whose origins are the Source's (at least the base URL).
    :param transport: the wire; by default httpx's, connecting only to the addresses checked
        (:mod:`.addresses`). With any other (and behind a proxy) each request's host is
        resolved and checked beforehand, and the wire may resolve it again.
    """

    def __init__(self, policy: ClientPolicy | None = None, *, source_urls: Iterable[str] = (),
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.policy = policy or ClientPolicy()
        self.guard = HostGuard(self.policy, source_urls)
        self.budget = RetryBudget(self.policy.retry_budget)
        self.cache = DocumentCache()
        settings = httpx_settings(self.policy)
        self._precheck = transport is not None or proxy_in_environment()
        if not self._precheck and not self.policy.allow_private:
            transport = checked_async_transport(settings["verify"], settings["limits"],
                                                self.guard.check_resolved)
        self._http = httpx.AsyncClient(transport=transport, **settings)
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
        exchange = Exchange(self.policy, self.guard, self.budget, url, headers=headers)
        while True:
            if self._precheck:
                await self.guard.acheck_addresses(exchange.url)
            try:
                async with self._slot(exchange.url), asyncio.timeout(
                        exchange.begin() - time.monotonic()), self._http.stream(
                        "GET", exchange.url, headers=exchange.headers) as response:
                    step = exchange.on_response(response)
                    if step.deliver:
                        fields = response_fields(response)
                        sink.start(response, fields, exchange.url, exchange.tries)
                        async for chunk in response.aiter_bytes():
                            exchange.check_deadline()
                            sink.write(chunk)
                        return sink.finish()
            except (httpx.TransportError, TimeoutError) as error:
                sink.discard()
                step = exchange.on_error(error, sink.received)
            except ContentMismatchError as error:
                sink.discard()
                step = exchange.on_mismatch(error)
            except BaseException:
                sink.discard()
                raise
            if step.delay:
                self.budget.note_retry(exchange.url, step.delay, exchange.tries + 1)
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
