"""A ResourceSync Source for tests, publishing documents written by our protocol core.

:class:`ResourceSyncSource` keeps a set of named resources on a :class:`SourceServer`, records
every create, update and delete with its datetime, and on :meth:`~ResourceSyncSource.publish`
writes the Source Description (6.3.2), the Capability List (9), the Resource List (10), the
Change Lists and their index (12), and optionally a Resource Dump (11) and a Change Dump (13).

Time comes from a clock; the default :class:`FakeClock` gives distinct, deterministic datetimes.
"""

from __future__ import annotations

import gzip
import io
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from html import escape
from typing import IO, Literal
from urllib.parse import quote, urlsplit

from ..protocol.hashes import Digester, Hashes
from ..protocol.model import (
    MAX_ENTRIES,
    Capability,
    Change,
    Document,
    Entry,
    Head,
    Link,
    Metadata,
    Root,
)
from ..protocol.package import PackageWriter
from ..protocol.split import write_split
from ..protocol.writer import document_bytes
from .server import SourceServer

__all__ = ["WELL_KNOWN_PATH", "ChangeListStyle", "ChangeRecord", "FakeClock",
           "ResourceSyncSource"]

#: Section 6.3.2: where a Source publishes its Source Description.
WELL_KNOWN_PATH = "/.well-known/resourcesync"
#: ``"1.1"``: change times in ``rs:md datetime``; ``"1.0"``: in ``lastmod``, no ``datetime``.
ChangeListStyle = Literal["1.1", "1.0"]

_START = datetime(2026, 1, 1, tzinfo=UTC)
_ZIP = "application/zip"


class FakeClock:
    """Deterministic time: ``start``, then one ``step`` later each time it is read."""

    def __init__(self, start: datetime = _START, step: timedelta = timedelta(seconds=1)) -> None:
        self._next = start
        self._step = step
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            now, self._next = self._next, self._next + self._step
            return now


@dataclass(frozen=True, slots=True)
class ChangeRecord:
    """One change: the resource's URI, what happened, when, and its body after (None: deleted)."""

    uri: str
    change: Change
    datetime: datetime
    body: bytes | None


@dataclass(frozen=True, slots=True)
class _Resource:
    body: bytes
    lastmod: datetime


class ResourceSyncSource:
    """Named resources served at ``{prefix}/res/{name}``, their changes, and their documents.

    Mutations change the served content at once and are recorded in the open Change List;
    documents change only when :meth:`publish` is called. All methods may be called while clients
    read from the server.

    :param server: the started server to publish on (one Source per server: the Source
        Description lives at the server's well-known URI).
    :param prefix: the path under which the Source's resources and documents live.
    :param resources: the initial resources, name -> body; they exist when the Source is created
        and are not changes.
    :param content_type: the media type of every resource.
    :param clock: returns aware datetimes, never earlier than the last; defaults to a
        :class:`FakeClock`.
    :param keep_change_lists: once lists were closed, publish only the last this many in the
        Change List Index, and stop serving the older ones (404), as Sources that rotate their
        lists do; None: keep them all. May be set later (the attribute of that name), as the
        next :meth:`publish` reads it.
    """

    def __init__(
        self,
        server: SourceServer,
        *,
        prefix: str = "/dataset1",
        resources: Mapping[str, bytes] | None = None,
        content_type: str = "text/plain",
        clock: Callable[[], datetime] | None = None,
        keep_change_lists: int | None = None,
    ) -> None:
        if prefix and (not prefix.startswith("/") or prefix.endswith("/")):
            raise ValueError(f"prefix {prefix!r} must start with '/' and not end with it")
        if keep_change_lists is not None and keep_change_lists < 1:
            raise ValueError(f"keep_change_lists {keep_change_lists!r} must be at least 1")
        self.keep_change_lists = keep_change_lists
        self.server = server
        self.prefix = prefix
        self.content_type = content_type
        self._clock = clock or FakeClock()
        self._lock = threading.RLock()
        #: When the Source was created: the ``from`` of its first Change List.
        self.created = self._clock()
        self._resources: dict[str, _Resource] = {}
        self._starts = [self.created]  # the from of each Change List window
        self._windows: list[list[ChangeRecord]] = [[]]  # the changes of each window
        self._suffix = ".xml"
        for name, body in (resources or {}).items():
            self._serve(name, body, self.created)

    # -- addresses -------------------------------------------------------------------------------

    def uri(self, name: str) -> str:
        """The URI of the resource ``name``."""
        return self.server.url(self._path(name))

    @property
    def source_description_url(self) -> str:
        return self.server.url(WELL_KNOWN_PATH)

    @property
    def capability_list_url(self) -> str:
        return self._document_url("capabilitylist")

    @property
    def resource_list_url(self) -> str:
        return self._document_url("resourcelist")

    @property
    def change_list_url(self) -> str:
        """The Change List, or the Change List Index once a list was closed."""
        return self._document_url("changelist")

    @property
    def resource_dump_url(self) -> str:
        return self._document_url("resourcedump")

    @property
    def change_dump_url(self) -> str:
        return self._document_url("changedump")

    # -- resources and changes -------------------------------------------------------------------

    def create(self, name: str, body: bytes) -> ChangeRecord:
        """Create the resource ``name``; ValueError if it exists."""
        with self._lock:
            if name in self._resources:
                raise ValueError(f"resource {name!r} exists: update it")
            return self._change(name, Change.CREATED, body)

    def update(self, name: str, body: bytes) -> ChangeRecord:
        """Replace the body of ``name``; KeyError if it does not exist."""
        with self._lock:
            self._require(name)
            return self._change(name, Change.UPDATED, body)

    def delete(self, name: str) -> ChangeRecord:
        """Delete ``name`` (later GETs answer 404); KeyError if it does not exist."""
        with self._lock:
            self._require(name)
            return self._change(name, Change.DELETED, None)

    def close_changelist(self) -> datetime:
        """Close the open Change List (its ``until``: now, returned) and open the next one."""
        with self._lock:
            until = self._clock()
            self._starts.append(until)
            self._windows.append([])
            return until

    def state(self) -> dict[str, bytes]:
        """The resources the Source holds now, URI -> body."""
        with self._lock:
            return {self.uri(name): res.body for name, res in self._resources.items()}

    def changes(self) -> list[ChangeRecord]:
        """Every change since the Source was created, in order."""
        with self._lock:
            return [record for window in self._windows for record in window]

    def _require(self, name: str) -> None:
        if name not in self._resources:
            raise KeyError(f"no resource {name!r}")

    def _change(self, name: str, change: Change, body: bytes | None) -> ChangeRecord:
        when = self._clock()
        if body is None:
            del self._resources[name]
            self.server.remove(self._path(name))
        else:
            self._serve(name, body, when)
        record = ChangeRecord(self.uri(name), change, when, body)
        self._windows[-1].append(record)
        return record

    def _serve(self, name: str, body: bytes, when: datetime) -> None:
        self._resources[name] = _Resource(body, when)
        self.server.put(self._path(name), body, self.content_type, last_modified=when)

    def _path(self, name: str) -> str:
        return f"{self.prefix}/res/{quote(name, safe='/')}"

    # -- publishing ------------------------------------------------------------------------------

    def publish(
        self,
        *,
        resource_list: bool = True,
        change_list: bool = True,
        resource_dump: bool = False,
        change_dump: bool = False,
        max_entries: int = MAX_ENTRIES,
        gzip: bool = False,
        changelist_style: ChangeListStyle = "1.1",
    ) -> list[str]:
        """Write the chosen capabilities, the Capability List and the Source Description.

        :param max_entries: entries per document before a Resource List (or a lone Change List)
            is split into parts under an index.
        :param gzip: serve the documents under the prefix gzip-compressed, named ``.xml.gz``.
        :param changelist_style: ``"1.0"`` puts change times in ``lastmod``, without ``datetime``.
        :returns: the URLs of the documents written (not of the ZIP packages), the Source
            Description last.
        """
        with self._lock:
            self._suffix = ".xml.gz" if gzip else ".xml"
            now = self._clock()
            written: list[str] = []
            capabilities: list[tuple[Capability, str]] = []
            if resource_list:
                written += self._write_resource_list(now, max_entries)
                capabilities.append((Capability.RESOURCE_LIST, self.resource_list_url))
            if resource_dump:
                written += self._write_resource_dump(now)
                capabilities.append((Capability.RESOURCE_DUMP, self.resource_dump_url))
            if change_list:
                written += self._write_change_lists(changelist_style, max_entries)
                capabilities.append((Capability.CHANGE_LIST, self.change_list_url))
            if change_dump:
                written += self._write_change_dump(now)
                capabilities.append((Capability.CHANGE_DUMP, self.change_dump_url))
            written.append(self._write_capability_list(capabilities))
            written.append(self._write_source_description())
            return written

    def serve_discovery_pages(self) -> None:
        """Serve the discovery hints of 6.3.3 and 6.3.4, naming the documents as last published:
        ``/index.html`` with a ``<link rel="resourcesync">``, ``/page-with-header`` with a
        ``Link`` header, both to the Capability List, and ``/robots.txt`` with a ``Sitemap:``
        line for the Resource List."""
        capability_list = self.capability_list_url
        page = (f'<!DOCTYPE html>\n<html>\n<head>\n<title>Test Source</title>\n'
                f'<link rel="resourcesync" href="{escape(capability_list)}">\n</head>\n'
                f"<body><p>A page covered by the Capability List.</p></body>\n</html>\n")
        self.server.put("/index.html", page.encode(), "text/html; charset=utf-8")
        self.server.put("/page-with-header", b"A resource with a discovery header.\n",
                        "text/plain", headers={"Link": f'<{capability_list}>; rel="resourcesync"'})
        robots = f"User-agent: *\nDisallow: /private/\nSitemap: {self.resource_list_url}\n"
        self.server.put("/robots.txt", robots.encode(), "text/plain")

    # -- the documents ---------------------------------------------------------------------------

    @property
    def _up(self) -> Link:
        return Link(rel="up", href=self.capability_list_url)

    def _write_source_description(self) -> str:
        head = Head(md=Metadata(capability=Capability.DESCRIPTION))
        entry = Entry(self.capability_list_url,
                      md=Metadata(capability=Capability.CAPABILITY_LIST))
        return self._put_document(self.source_description_url, Document(head, [entry]))

    def _write_capability_list(self, capabilities: Iterable[tuple[Capability, str]]) -> str:
        head = Head(md=Metadata(capability=Capability.CAPABILITY_LIST),
                    links=(Link(rel="up", href=self.source_description_url),))
        entries = [Entry(url, md=Metadata(capability=capability))
                   for capability, url in capabilities]
        return self._put_document(self.capability_list_url, Document(head, entries))

    def _write_resource_list(self, now: datetime, max_entries: int) -> list[str]:
        head = Head(md=Metadata(capability=Capability.RESOURCE_LIST, at=now), links=(self._up,))
        entries = (
            Entry(self.uri(name), lastmod=res.lastmod, md=self._described(res.body))
            for name, res in sorted(self._resources.items())
        )
        return write_split(head, entries, url=self.resource_list_url, open_output=self._output,
                           max_entries=max_entries)

    def _write_change_lists(self, style: ChangeListStyle, max_entries: int) -> list[str]:
        """One Change List at ``changelist``; once one was closed, an index there over the
        lists at ``changelist-N`` (12.2), the last :attr:`keep_change_lists` of them."""
        index_url = self.change_list_url
        if len(self._windows) == 1:
            head = Head(md=Metadata(capability=Capability.CHANGE_LIST, from_=self.created),
                        links=(self._up,))
            entries = (self._change_entry(record, style) for record in self._windows[0])
            return write_split(head, entries, url=index_url, open_output=self._output,
                               max_entries=max_entries)
        written, children = [], []
        lists = list(enumerate(self._intervals(), 1))
        kept = lists[-self.keep_change_lists:] if self.keep_change_lists else lists
        for number, _ in lists[:len(lists) - len(kept)]:
            self.server.remove(urlsplit(self._document_url(f"changelist-{number}")).path)
        for number, (start, until, records) in kept:
            url = self._document_url(f"changelist-{number}")
            head = Head(md=Metadata(capability=Capability.CHANGE_LIST, from_=start, until=until),
                        links=(self._up, Link(rel="index", href=index_url)))
            written += write_split(head, (self._change_entry(r, style) for r in records),
                                   url=url, open_output=self._output, max_entries=max_entries)
            children.append(Entry(url, md=Metadata(from_=start, until=until)))
        head = Head(root=Root.SITEMAPINDEX, links=(self._up,),
                    md=Metadata(capability=Capability.CHANGE_LIST, from_=kept[0][1][0]))
        written.append(self._put_document(index_url, Document(head, children)))
        return written

    def _write_resource_dump(self, now: datetime) -> list[str]:
        manifest = Head(md=Metadata(capability=Capability.RESOURCE_DUMP_MANIFEST, at=now),
                        links=(self._up,))
        items = [(Entry(self.uri(name), lastmod=res.lastmod, md=Metadata(type=self.content_type)),
                  res.body) for name, res in sorted(self._resources.items())]
        package, manifest_url = self._write_package("resourcedump-1", manifest, items)
        head = Head(md=Metadata(capability=Capability.RESOURCE_DUMP, at=now), links=(self._up,))
        return [manifest_url, self._put_document(self.resource_dump_url, Document(head, [package]))]

    def _write_change_dump(self, now: datetime) -> list[str]:
        """One package per Change List window; the open window's ends now (13.1)."""
        written, packages = [], []
        for number, (start, until, records) in enumerate(self._intervals(), 1):
            manifest = Head(links=(self._up,), md=Metadata(
                capability=Capability.CHANGE_DUMP_MANIFEST, from_=start, until=until or now))
            items = [(self._change_entry(record, "1.1"), record.body) for record in records]
            package, manifest_url = self._write_package(f"changedump-{number}", manifest, items)
            written.append(manifest_url)
            packages.append(package)
        head = Head(md=Metadata(capability=Capability.CHANGE_DUMP, from_=self.created),
                    links=(self._up,))
        return [*written, self._put_document(self.change_dump_url, Document(head, packages))]

    def _write_package(self, name: str, manifest: Head,
                       items: Iterable[tuple[Entry, bytes | None]]) -> tuple[Entry, str]:
        """A ZIP package at ``{prefix}/{name}.zip`` and a copy of its manifest: the dump's entry
        for it (with the manifest's time attributes) and the copy's URL."""
        buffer = io.BytesIO()
        recorded = []
        with PackageWriter(buffer, manifest) as package:
            for entry, body in items:
                recorded.append(
                    package.add_deleted(entry) if body is None else package.add(entry, body))
        data = buffer.getvalue()
        path = f"{self.prefix}/{name}.zip"
        self.server.put(path, data, _ZIP)
        manifest_url = self._put_document(self._document_url(f"{name}-manifest"),
                                          Document(manifest, recorded))
        times = manifest.md or Metadata()
        md = Metadata(at=times.at, from_=times.from_, until=times.until, hash=_hashes(data),
                      length=len(data), type=_ZIP)
        contents = Link(rel="contents", href=manifest_url, type=self._document_type)
        return Entry(self.server.url(path), md=md, links=(contents,)), manifest_url

    # -- helpers ---------------------------------------------------------------------------------

    def _intervals(self) -> Iterator[tuple[datetime, datetime | None, list[ChangeRecord]]]:
        """Each Change List window: from, until (None: open), its changes."""
        ends: list[datetime | None] = [*self._starts[1:], None]
        yield from zip(self._starts, ends, self._windows, strict=True)

    def _change_entry(self, record: ChangeRecord, style: ChangeListStyle) -> Entry:
        """A change as an entry: time in ``datetime`` (1.1) or ``lastmod`` (1.0)."""
        old = style == "1.0"
        md = Metadata(change=record.change, datetime=None if old else record.datetime)
        if record.body is not None:
            described = self._described(record.body)
            md = replace(md, hash=described.hash, length=described.length, type=described.type)
        return Entry(record.uri, lastmod=record.datetime if old else None, md=md)

    def _described(self, body: bytes) -> Metadata:
        return Metadata(hash=_hashes(body), length=len(body), type=self.content_type)

    def _document_url(self, stem: str) -> str:
        return self.server.url(f"{self.prefix}/{stem}{self._suffix}")

    @property
    def _document_type(self) -> str:
        return "application/gzip" if self._suffix.endswith(".gz") else "application/xml"

    def _put_document(self, url: str, document: Document) -> str:
        self._put_bytes(url, document_bytes(document))
        return url

    def _put_bytes(self, url: str, data: bytes) -> None:
        """Serve a written document at ``url``, gzip-compressed if its name ends ``.gz``."""
        content_type = "application/xml"
        if url.endswith(".gz"):
            data, content_type = gzip.compress(data, mtime=0), "application/gzip"
        self.server.put(urlsplit(url).path, data, content_type)

    @contextmanager
    def _output(self, url: str) -> Iterator[IO[bytes]]:
        """``write_split``'s outputs: served once written whole."""
        buffer = io.BytesIO()
        yield buffer
        self._put_bytes(url, buffer.getvalue())


def _hashes(data: bytes) -> Hashes:
    digester = Digester(("md5", "sha-256"))
    digester.update(data)
    return digester.hashes()
