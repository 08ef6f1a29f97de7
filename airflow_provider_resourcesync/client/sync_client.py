"""The sync client: documents with conditional GETs, verified downloads, discovery pages."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from http.cookiejar import CookieJar
from typing import BinaryIO, Protocol, TypedDict, TypeVar

import httpx

from ..cores import usable_cores
from ..errors import ContentMismatchError, FetchError, UnsafeContentError
from ..protocol.closing import ClosedOnExit
from ..protocol.model import Document, Entry, Metadata
from ..protocol.reader import DocumentReader, read_document
from .auth import OriginBoundAuth
from .cache import DocumentCache
from .exchange import Exchange
from .guard import HostGuard
from .policy import ClientPolicy
from .retry import RetryBudget
from .sinks import (
    DocumentSink,
    Download,
    FetchedDocument,
    Page,
    PageSink,
    ResourceSink,
    response_fields,
)
from .transport import SocketTransport, default_transport

__all__ = ["BULK_AFTER", "MAX_PAGE_BYTES", "HttpxSettings", "ResourceSyncClient", "Sink",
           "bulk_slots", "duplicate_urls", "httpx_settings"]

log = logging.getLogger(__name__)

#: Size cap of a discovery page (HTML, robots.txt).
MAX_PAGE_BYTES = 5 * 1024 * 1024
#: A listed resource of at least this many bytes is a bulk download: bound by the cores that
#: receive, verify and write it, not by the Source's latency (see
#: :meth:`ResourceSyncClient.download`).
BULK_AFTER = 8 * 1024 * 1024
#: A GET's body: none.
_NO_BODY = httpx.ByteStream(b"")

T = TypeVar("T", covariant=True)


class Sink(Protocol[T]):
    """Where one body goes (see :mod:`.sinks`)."""

    def start(self, response: httpx.Response, fields: Mapping[str, str], url: str, tries: int
              ) -> None: ...
    def write(self, chunk: bytes) -> None: ...
    def finish(self) -> T: ...
    def discard(self) -> None: ...
    def received(self) -> str: ...


class HttpxSettings(TypedDict):
    """Keyword arguments of ``httpx.Client`` and ``httpx.AsyncClient`` (:func:`httpx_settings`)."""

    timeout: httpx.Timeout
    limits: httpx.Limits
    verify: bool
    headers: dict[str, str]
    follow_redirects: bool
    auth: OriginBoundAuth | None


def httpx_settings(policy: ClientPolicy) -> HttpxSettings:
    """Keyword arguments of ``httpx.Client`` / ``httpx.AsyncClient`` for a policy."""
    return {
        "timeout": httpx.Timeout(policy.read_timeout, connect=policy.connect_timeout),
        "limits": httpx.Limits(max_connections=None,
                               max_keepalive_connections=4 * policy.concurrency_per_host),
        "verify": policy.verify,
        "headers": {"User-Agent": policy.user_agent},
        "follow_redirects": False,
        "auth": OriginBoundAuth(policy.credentials) if policy.credentials else None,
    }


def bulk_slots() -> int:
    """Bulk downloads at once in one client: two per usable core."""
    return max(2, 2 * int(usable_cores()))


def duplicate_urls(entry: Entry) -> list[str]:
    """The http(s) URLs of a resource's ``duplicate`` links (its mirrors, 14.2), by ``pri``."""
    return [link.href for link in entry.links_for("duplicate")
            if link.href.lower().startswith(("http://", "https://"))]


class _Cookies(httpx.Cookies):
    """httpx's cookie store, which skips the cookie machinery for a response that sets none
    (the common case; httpx builds a ``urllib`` request for every response otherwise)."""

    def extract_cookies(self, response: httpx.Response) -> None:
        if "set-cookie" in response.headers or "set-cookie2" in response.headers:
            super().extract_cookies(response)


class _Client(httpx.Client):
    """httpx's client whose cookie store, its ``cookies``, is a :class:`_Cookies` (httpx's
    client reads and fills its store through that property)."""

    def __init__(self, transport: httpx.BaseTransport | None, settings: HttpxSettings) -> None:
        super().__init__(transport=transport, **settings)
        self._store = _Cookies()

    @property
    def cookies(self) -> httpx.Cookies:
        return self._store

    @cookies.setter
    def cookies(self, cookies: httpx.Cookies | CookieJar | dict[str, str] | list[tuple[str, str]]
                ) -> None:
        self._store = _Cookies(cookies)


def _body(response: httpx.Response, fields: Mapping[str, str]) -> Iterator[bytes]:
    """The body's pieces, decoded where it has a content coding (httpx's decoders); without
    one, as they arrive, past httpx's decoding layers."""
    return response.iter_bytes() if "content-encoding" in fields else response.iter_raw()


class ResourceSyncClient(ClosedOnExit):
    """HTTP access to one ResourceSync Source, safe to share between threads.

    :param policy: timeouts, retries, limits, credentials and reachable hosts.
    :param source_urls: URLs whose origins are the Source's (at least the base URL).
    :param transport: the wire; by default :class:`.transport.SocketTransport`, which checks
        the addresses it connects to. With any other (and behind a proxy) each request's host
        is resolved and checked beforehand, and the wire may resolve it again.
    """

    def __init__(self, policy: ClientPolicy | None = None, *, source_urls: Iterable[str] = (),
                 transport: httpx.BaseTransport | None = None) -> None:
        self.policy = policy or ClientPolicy()
        self.guard = HostGuard(self.policy, source_urls)
        self.budget = RetryBudget(self.policy.retry_budget)
        self.cache = DocumentCache()
        #: Our own wire, which GETs go to directly (see :meth:`_send`); None: httpx's client
        #: sends them (a transport given, or httpx's own, which honours proxies).
        self._wire: SocketTransport | None = None
        if transport is None:
            transport = self._wire = default_transport(self.policy, self.guard.check_resolved)
            self._precheck = transport is None  # a proxy connects: check before asking it
        else:
            self._precheck = True
        settings = httpx_settings(self.policy)
        self._http = _Client(transport, settings)
        self._defaults = self._http.headers.raw  # merged into every request (see _request)
        self._auth = settings["auth"]
        self._timeouts = self._http.timeout.as_dict()
        self._slots: dict[str, threading.BoundedSemaphore] = {}
        self._slots_lock = threading.Lock()
        self._bulk = threading.BoundedSemaphore(bulk_slots())

    # -- documents -------------------------------------------------------------------------------

    def fetch_document(self, url: str) -> FetchedDocument:
        """GET a document, conditionally when we hold it: unchanged, it costs one 304."""
        sink = DocumentSink(self.cache, url, self.policy.max_document_bytes)
        return self._get(url, sink, headers=self.cache.validators(url))

    def open_document(self, url: str) -> DocumentReader:
        """A streaming reader over the document at ``url`` (its head already read)."""
        fetched = self.fetch_document(url)
        return DocumentReader(fetched.path, url=fetched.url,
                              max_bytes=self.policy.max_document_bytes)

    def read_document(self, url: str) -> Document:
        """A whole document, for small ones (Capability Lists, indexes)."""
        fetched = self.fetch_document(url)
        return read_document(fetched.path, url=fetched.url,
                             max_bytes=self.policy.max_document_bytes)

    def fetch_page(self, url: str) -> Page:
        """A small page (HTML, robots.txt), whatever its status, for discovery."""
        return self._get(url, PageSink(url, MAX_PAGE_BYTES))

    # -- resources -------------------------------------------------------------------------------

    def download(self, url: str, dest: BinaryIO, *, expected: Metadata | None = None
                 ) -> Download:
        """Stream ``url`` into ``dest`` (empty, seekable; rewound for each retry) and verify it
        against ``expected`` (hash and length; a body longer than the length is cut off).

        A resource listed at :data:`BULK_AFTER` bytes or more waits, before its request, until
        fewer than :func:`bulk_slots` such downloads are under way in this client: more at once
        only share the same cores, and each one's buffers and switches cost more than the
        latency they hide (docs/design.md, "Large resources"). Smaller ones are not counted.

        :raises ContentMismatchError: still mismatched after the policy's tries.
        """
        sink = ResourceSink(dest, expected, self.policy.max_resource_bytes)
        if expected is None or expected.length is None or expected.length < BULK_AFTER:
            return self._get(url, sink)
        with self._bulk:
            return self._get(url, sink)

    def download_entry(self, entry: Entry, dest: BinaryIO) -> Download:
        """Download a listed resource from its mirrors in ``pri`` order, falling back to
        ``loc``. A mirror outside the allowed origins is skipped with a warning.

        :raises UnsafeContentError: ``loc`` is outside the allowed origins (nothing fetched).
        """
        candidates = duplicate_urls(entry)
        if candidates:  # else ``loc`` alone, checked as its GET starts
            self.guard.check_url(entry.loc)
            candidates = [url for url in candidates if self._may_fetch(entry, url)]
        candidates.append(entry.loc)
        *others, last = candidates
        for url in others:
            try:
                return self.download(url, dest, expected=entry.md)
            except (FetchError, ContentMismatchError, UnsafeContentError) as error:
                log.warning("Fetching %s from %s failed, trying the next: %s", entry.loc, url,
                            error)
        return self.download(last, dest, expected=entry.md)  # its failure is the caller's

    def _may_fetch(self, entry: Entry, duplicate: str) -> bool:
        try:
            self.guard.check_url(duplicate)
        except UnsafeContentError as error:
            log.warning("Not fetching %s from its duplicate link: %s", entry.loc, error)
            return False
        return True

    # -- the one loop ----------------------------------------------------------------------------

    def _get(self, url: str, sink: Sink[T], *, headers: dict[str, str] | None = None) -> T:
        exchange = Exchange(self.policy, self.guard, self.budget, url, headers=headers)
        while True:
            if self._precheck:
                self.guard.check_addresses(exchange.url)
            try:
                target = httpx.URL(exchange.url)
                with self._slot(target):
                    request = self._request(target, exchange.headers, exchange.begin())
                    response, fields = self._send(request)
                    try:
                        step = exchange.on_response(response)
                        if step.deliver:
                            sink.start(response, fields, exchange.url, exchange.tries)
                            for chunk in _body(response, fields):
                                exchange.check_deadline()
                                sink.write(chunk)
                            return sink.finish()
                    finally:
                        response.close()
            except httpx.TransportError as error:
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
                time.sleep(step.delay)

    def _request(self, target: httpx.URL, headers: Mapping[str, str], deadline: float
                 ) -> httpx.Request:
        """The GET ``httpx.Client.build_request`` would make (``Host``, the client's headers
        with ``headers`` over them, its cookies), built without merging the client's headers
        anew for each request; ``send`` adds the timeouts and the auth flow."""
        fields = [(name.encode("ascii"), value.encode("ascii")) for name, value in headers.items()]
        own = {name.lower() for name, _ in fields}
        request = httpx.Request("GET", target, headers=[
            (b"Host", target.netloc),
            *(pair for pair in self._defaults if pair[0].lower() not in own),
            *fields], stream=_NO_BODY, extensions={"deadline": deadline})
        if self._http.cookies:
            self._http.cookies.set_cookie_header(request)
        return request

    def _send(self, request: httpx.Request) -> tuple[httpx.Response, dict[str, str]]:
        """Send a GET built by :meth:`_request`, its body streamed: the response and its header
        fields. Over our own wire, what ``httpx.Client.send`` does for it is done here, without
        its layers of redirect and auth-flow handling: the credentials for their origin only,
        the client's timeouts, the cookies a response sets into the store."""
        wire = self._wire
        if wire is None:
            response = self._http.send(request, stream=True)
            return response, response_fields(response)
        if self._http.is_closed:
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        if self._auth is not None:
            self._auth.apply(request)
        request.extensions["timeout"] = self._timeouts
        response = wire.handle_request(request)
        response.request = request
        fields = response_fields(response)
        if "set-cookie" in fields or "set-cookie2" in fields:
            self._http.cookies.extract_cookies(response)
        return response, fields

    def _slot(self, url: httpx.URL) -> threading.BoundedSemaphore:
        host = url.host
        slot = self._slots.get(host)
        if slot is None:
            with self._slots_lock:
                slot = self._slots.setdefault(
                    host, threading.BoundedSemaphore(self.policy.concurrency_per_host))
        return slot

    def close(self) -> None:
        self._http.close()
        self.cache.close()
