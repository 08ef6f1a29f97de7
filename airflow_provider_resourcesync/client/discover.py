"""Discovery over the wire (spec 6.3): from any URL to a Source's Capability Lists.

Routes, in order: the URL itself if it is a ResourceSync document; the well-known URI at its
origin (6.3.2); its HTTP ``Link`` header (6.3.3); an HTML ``<link>`` in its body (6.3.3); the
``Sitemap:`` lines of the origin's robots.txt (6.3.4). From what a route finds, ``up`` links (6.2)
lead to the Capability List and the Source Description, whose Capability Lists are read too.
Every URL is fetched at most once, the climb is bounded and stops at a loop, and every try is
recorded in :attr:`Discovery.steps`. Hosts are never added to the client's guard: a document on a
host it refuses is noted and skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from ..errors import (
    DocumentError,
    FetchError,
    ResourceSyncError,
    SourceNotFoundError,
    UnsafeContentError,
)
from ..protocol.discovery import (
    resourcesync_links_from_header,
    resourcesync_links_from_html,
    sitemaps_from_robots,
)
from ..protocol.model import Capability, Document, DocumentKind
from ..protocol.reader import DocumentReader
from .navigate import capabilities_in
from .sinks import FetchedDocument
from .sync_client import MAX_PAGE_BYTES, ResourceSyncClient

__all__ = ["MAX_UP_HOPS", "WELL_KNOWN_PATH", "CapabilityListInfo", "Discovery", "discover"]

#: Section 6.3.2: where a Source publishes its Source Description.
WELL_KNOWN_PATH = "/.well-known/resourcesync"
#: ``up`` links followed from one found document (a part, its index, the Capability List, ...).
MAX_UP_HOPS = 4

_LISTING = frozenset({DocumentKind.SOURCE_DESCRIPTION, DocumentKind.CAPABILITY_LIST})


@dataclass(frozen=True, slots=True)
class CapabilityListInfo:
    """A Capability List (9): its capabilities (capability -> document URL) and ``describedby``."""

    url: str
    capabilities: dict[Capability, str]
    describedby: str | None


@dataclass(frozen=True, slots=True)
class Discovery:
    """What discovery found from ``start_url``, by which ``route``, and the trail of every try.

    ``route`` is ``"document"`` (the URL itself is a ResourceSync document), ``"well-known"``,
    ``"link-header"``, ``"html-link"`` or ``"robots.txt"``. The Capability Lists a route led to
    come first, then the Source Description's others in its order.
    """

    start_url: str
    route: str
    source_description: str | None
    capability_lists: tuple[CapabilityListInfo, ...]
    steps: tuple[str, ...]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def _failure(error: ResourceSyncError) -> str:
    """What went wrong, without the URL the step already names."""
    if isinstance(error, FetchError):
        return f"HTTP {error.status}" if error.status is not None else str(error).split(": ", 1)[-1]
    if isinstance(error, UnsafeContentError):
        return f"refused: {error.message}"
    if isinstance(error, DocumentError):
        return error.message
    return str(error)


class _Explorer:
    """The state of one discovery: documents read (each URL once), findings, the trail."""

    def __init__(self, client: ResourceSyncClient) -> None:
        self._client = client
        self._documents: dict[str, Document | None] = {}
        self._pages: dict[str, FetchedDocument] = {}
        self.steps: list[str] = []
        self.source_description: str | None = None
        self.capability_lists: dict[str, CapabilityListInfo] = {}
        self._unanswered: set[str] = set()  # URLs that got no answer at all

    @property
    def found(self) -> bool:
        return self.source_description is not None or bool(self.capability_lists)

    def note(self, step: str) -> None:
        self.steps.append(step)

    def unanswered(self, url: str) -> bool:
        """Whether ``url`` was fetched and got no answer (refused, reset, timed out)."""
        return url in self._unanswered

    # -- fetching, each URL once -----------------------------------------------------------------

    def document(self, url: str) -> Document | None:
        """The ResourceSync document at ``url`` (entries read for Source Descriptions and
        Capability Lists only); None, noted, if it cannot be fetched or is not one."""
        if url not in self._documents:
            self._documents[url] = self._fetch(url)
        return self._documents[url]

    def _fetch(self, url: str) -> Document | None:
        try:
            fetched = self._client.fetch_document(url)
        except ResourceSyncError as error:
            self.note(f"GET {url} -> {_failure(error)}")
            if isinstance(error, FetchError) and error.status is None:
                self._unanswered.add(url)
            return None
        self._pages[url] = fetched
        if (fetched.content_type or "").split(";")[0].strip().lower() == "text/html":
            self.note(f"GET {url} -> an HTML page")
            return None
        try:
            with DocumentReader(fetched.path, url=fetched.url,
                                max_bytes=self._client.policy.max_document_bytes) as reader:
                document = Document(reader.head, list(reader) if reader.head.kind in _LISTING
                                    else [])
        except DocumentError as error:
            self.note(f"GET {url} -> not a ResourceSync document ({error.message})")
            return None
        if document.kind is None:
            capability = document.head.md.capability if document.head.md else None
            self.note(f"GET {url} -> not a ResourceSync document (capability {capability!r})")
            return None
        self.note(f"GET {url} -> {document.kind.title}")
        return document

    # -- the routes (6.3) ------------------------------------------------------------------------

    def well_known(self, url: str) -> list[str]:
        return [_origin(url) + WELL_KNOWN_PATH]

    def header_links(self, url: str) -> list[str]:
        page = self._pages.get(url)
        if page is None:
            self.note(f"Link header of {url} -> no response to read")
            return []
        links = resourcesync_links_from_header(page.link_headers, page.url)
        self.note(f"Link header of {url} -> {' '.join(links) or 'no rel=resourcesync link'}")
        return links

    def html_links(self, url: str) -> list[str]:
        page = self._pages.get(url)
        if page is None:
            self.note(f"HTML of {url} -> no response to read")
            return []
        with page.path.open("rb") as body:
            links = resourcesync_links_from_html(body.read(MAX_PAGE_BYTES), page.url)
        self.note(f"HTML of {url} -> {' '.join(links) or 'no rel=resourcesync link'}")
        return links

    def robots_sitemaps(self, url: str) -> list[str]:
        robots = _origin(url) + "/robots.txt"
        try:
            page = self._client.fetch_page(robots)
        except ResourceSyncError as error:
            self.note(f"GET {robots} -> {_failure(error)}")
            return []
        if page.status != 200:
            self.note(f"GET {robots} -> HTTP {page.status}")
            return []
        sitemaps = sitemaps_from_robots(page.text, page.url)
        self.note(f"GET {robots} -> Sitemap: {' '.join(sitemaps) or 'none'}")
        return sitemaps

    # -- from a found document up (6.2) ----------------------------------------------------------

    def climb(self, url: str) -> None:
        """Follow ``up`` links (an ``index`` link where a part has none) from ``url`` to the
        Source Description, keeping the Capability Lists met on the way."""
        visited = {url}
        for _ in range(MAX_UP_HOPS + 1):
            document = self.document(url)
            if document is None:
                return
            if document.kind is DocumentKind.SOURCE_DESCRIPTION:
                self._describe(url, document)
                return
            if document.kind is DocumentKind.CAPABILITY_LIST:
                self._keep(url, document)
            up = document.head.up or document.head.index
            if up is None:
                self.note(f"{url} : no up link")
                return
            if up in visited:
                self.note(f"{url} : up link to {up} loops, stopped")
                return
            visited.add(up)
            url = up
        self.note(f"{MAX_UP_HOPS} up links followed, not following {url}")

    def _describe(self, url: str, document: Document) -> None:
        """Read the Capability Lists a Source Description lists (8)."""
        if self.source_description is None:
            self.source_description = url
        for entry in document.entries:
            if entry.md is None or entry.md.capability_value is not Capability.CAPABILITY_LIST:
                continue
            listed = self.document(entry.loc)
            if listed is not None and listed.kind is DocumentKind.CAPABILITY_LIST:
                self._keep(entry.loc, listed)
            elif listed is not None:
                self.note(f"{entry.loc} : listed as a Capability List by {url} , skipped")

    def _keep(self, url: str, document: Document) -> None:
        describedby = document.head.link("describedby")
        self.capability_lists.setdefault(url, CapabilityListInfo(
            url, capabilities_in(document.entries), describedby.href if describedby else None))

    def result(self, start_url: str, route: str) -> Discovery:
        return Discovery(start_url, route, self.source_description,
                         tuple(self.capability_lists.values()), tuple(self.steps))


def discover(client: ResourceSyncClient, url: str) -> Discovery:
    """Find the ResourceSync Source behind ``url`` (6.3) and its Capability Lists (6.2, 8, 9).

    :raises SourceNotFoundError: no route found a Source; the message lists every step tried.
    """
    explorer = _Explorer(client)
    if explorer.document(url) is not None:
        explorer.climb(url)
        return explorer.result(url, "document")
    routes = (("well-known", explorer.well_known), ("link-header", explorer.header_links),
              ("html-link", explorer.html_links), ("robots.txt", explorer.robots_sitemaps))
    for route, candidates in routes:
        for candidate in candidates(url):
            explorer.climb(candidate)
        if explorer.found:
            return explorer.result(url, route)
    raise SourceNotFoundError("no ResourceSync Source found; tried " + " ; ".join(explorer.steps),
                              url=url, unreachable=explorer.unanswered(url))
