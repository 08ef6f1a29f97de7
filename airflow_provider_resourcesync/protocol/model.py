"""The ResourceSync document model (spec sections 6-13).

Every ResourceSync document is a Sitemap ``<urlset>`` or ``<sitemapindex>`` with a head (the root's
own ``rs:md`` and ``rs:ln``) and entries (``<url>`` or ``<sitemap>``). :class:`DocumentKind` names
each document of the standard and its index form; :class:`Head`, :class:`Entry`,
:class:`Metadata` and :class:`Link` carry every attribute of section 7. Attributes and elements we
do not model are kept in ``extra`` so that nothing read is lost when written again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum, StrEnum

from .hashes import Hashes

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
RS_NS = "http://www.openarchives.org/rs/terms/"

#: Section 7: the community limits for one ``<urlset>`` document.
MAX_ENTRIES = 50_000
MAX_DOCUMENT_BYTES = 50 * 1024 * 1024

#: Section 7: the absent ``pri`` of a link counts as this value, the lowest priority.
DEFAULT_PRI = 999_999


class Capability(StrEnum):
    """Values of the ``capability`` attribute defined in section 7."""

    DESCRIPTION = "description"
    CAPABILITY_LIST = "capabilitylist"
    RESOURCE_LIST = "resourcelist"
    RESOURCE_DUMP = "resourcedump"
    RESOURCE_DUMP_MANIFEST = "resourcedump-manifest"
    CHANGE_LIST = "changelist"
    CHANGE_DUMP = "changedump"
    CHANGE_DUMP_MANIFEST = "changedump-manifest"

    @classmethod
    def lenient(cls, value: str | None) -> Capability | None:
        """The capability a Source meant, accepting case and space slips (``resourceList``)."""
        if value is None:
            return None
        try:
            return cls(value.strip().lower())
        except ValueError:
            return None


class Change(StrEnum):
    """Values of the ``change`` attribute (section 7)."""

    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"


class Root(StrEnum):
    """The two Sitemap document formats (section 6.1)."""

    URLSET = "urlset"
    SITEMAPINDEX = "sitemapindex"

    @property
    def entry_tag(self) -> str:
        return "url" if self is Root.URLSET else "sitemap"


class DocumentKind(Enum):
    """Every document of the standard, and the index form of each that has one."""

    SOURCE_DESCRIPTION = (Capability.DESCRIPTION, False, "Source Description", "8")
    SOURCE_DESCRIPTION_INDEX = (Capability.DESCRIPTION, True, "Source Description Index", "8")
    CAPABILITY_LIST = (Capability.CAPABILITY_LIST, False, "Capability List", "9")
    CAPABILITY_LIST_INDEX = (Capability.CAPABILITY_LIST, True, "Capability List Index", "9")
    RESOURCE_LIST = (Capability.RESOURCE_LIST, False, "Resource List", "10.1")
    RESOURCE_LIST_INDEX = (Capability.RESOURCE_LIST, True, "Resource List Index", "10.2")
    RESOURCE_DUMP = (Capability.RESOURCE_DUMP, False, "Resource Dump", "11.1")
    RESOURCE_DUMP_INDEX = (Capability.RESOURCE_DUMP, True, "Resource Dump Index", "11.1")
    RESOURCE_DUMP_MANIFEST = (
        Capability.RESOURCE_DUMP_MANIFEST, False, "Resource Dump Manifest", "11.2")
    CHANGE_LIST = (Capability.CHANGE_LIST, False, "Change List", "12.1")
    CHANGE_LIST_INDEX = (Capability.CHANGE_LIST, True, "Change List Index", "12.2")
    CHANGE_DUMP = (Capability.CHANGE_DUMP, False, "Change Dump", "13.1")
    CHANGE_DUMP_INDEX = (Capability.CHANGE_DUMP, True, "Change Dump Index", "13.1")
    CHANGE_DUMP_MANIFEST = (Capability.CHANGE_DUMP_MANIFEST, False, "Change Dump Manifest", "13.2")

    def __init__(self, capability: Capability, is_index: bool, title: str, section: str) -> None:
        self.capability = capability
        self.is_index = is_index
        self.title = title
        self.section = section

    @property
    def root(self) -> Root:
        return Root.SITEMAPINDEX if self.is_index else Root.URLSET

    @classmethod
    def of(cls, capability: Capability | None, root: Root) -> DocumentKind | None:
        """The kind for a capability and a root element; None where the standard has none."""
        for kind in cls:
            if kind.capability is capability and kind.is_index == (root is Root.SITEMAPINDEX):
                return kind
        return None

    @property
    def uses_at(self) -> bool:
        """Appendix A: documents that describe a snapshot carry ``at``/``completed``."""
        return self.capability in _SNAPSHOT_CAPABILITIES

    @property
    def uses_from(self) -> bool:
        """Appendix A: documents that describe changes carry ``from``/``until``."""
        return self.capability in _CHANGE_CAPABILITIES


_SNAPSHOT_CAPABILITIES = frozenset(
    {Capability.RESOURCE_LIST, Capability.RESOURCE_DUMP, Capability.RESOURCE_DUMP_MANIFEST})
_CHANGE_CAPABILITIES = frozenset(
    {Capability.CHANGE_LIST, Capability.CHANGE_DUMP, Capability.CHANGE_DUMP_MANIFEST})


@dataclass(slots=True)
class Link:
    """An ``<rs:ln>`` element (section 7): a link to a related resource or document.

    ``extra`` keeps attributes the spec does not define, keyed by name (``{namespace}name`` for
    namespaced ones), values as written.
    """

    rel: str
    href: str
    pri: int | None = None
    modified: datetime | None = None
    hash: Hashes | None = None
    length: int | None = None
    type: str | None = None
    encoding: str | None = None
    path: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def priority(self) -> int:
        """``pri`` with the spec's default for an absent value (lower is preferred)."""
        return DEFAULT_PRI if self.pri is None else self.pri

    @property
    def rels(self) -> tuple[str, ...]:
        """The space-separated relation types of ``rel``."""
        return tuple(self.rel.split())


@dataclass(slots=True)
class Metadata:
    """An ``<rs:md>`` element (section 7), of the document itself or of one entry.

    ``from_`` holds the ``from`` attribute (a Python keyword). ``capability`` and ``change``
    keep the value as written; :attr:`capability_value` and :attr:`change_value` interpret it.
    """

    capability: str | None = None
    at: datetime | None = None
    completed: datetime | None = None
    from_: datetime | None = None
    until: datetime | None = None
    change: str | None = None
    datetime: datetime | None = None
    hash: Hashes | None = None
    length: int | None = None
    type: str | None = None
    encoding: str | None = None
    path: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def capability_value(self) -> Capability | None:
        return Capability.lenient(self.capability)

    @property
    def change_value(self) -> Change | None:
        try:
            return Change(self.change) if self.change is not None else None
        except ValueError:
            return None


@dataclass(slots=True)
class Entry:
    """A ``<url>`` (or ``<sitemap>``, in an index) with its children (section 7).

    ``extra`` keeps child elements we do not model (other namespaces, ``<priority>``...) as
    serialized XML. ``line`` is where the entry started in the document it was read from.
    """

    loc: str
    lastmod: datetime | None = None
    changefreq: str | None = None
    md: Metadata | None = None
    links: tuple[Link, ...] = ()
    extra: tuple[str, ...] = ()
    line: int | None = field(default=None, compare=False)

    @property
    def change(self) -> Change | None:
        return self.md.change_value if self.md is not None else None

    @property
    def change_time(self) -> datetime | None:
        """When the change happened: ``datetime`` (1.1), else ``lastmod`` (1.0 Change Lists)."""
        if self.md is not None and self.md.datetime is not None:
            return self.md.datetime
        return self.lastmod

    def links_for(self, rel: str) -> list[Link]:
        """Links having ``rel`` among their relation types, highest priority (lowest pri) first."""
        return sorted((ln for ln in self.links if rel in ln.rels), key=lambda ln: ln.priority)


@dataclass(slots=True)
class Head:
    """What a document says about itself: its root, ``rs:md`` and ``rs:ln`` (section 7).

    ``extra`` keeps root-level child elements we do not model, serialized; a streaming reader
    appends those that follow the entries as it reaches them. ``namespaces`` maps
    prefixes declared on the root to namespace URIs, so a writer can declare them again.
    """

    root: Root = Root.URLSET
    md: Metadata | None = None
    links: tuple[Link, ...] = ()
    extra: tuple[str, ...] = ()
    namespaces: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def capability(self) -> Capability | None:
        return self.md.capability_value if self.md is not None else None

    @property
    def kind(self) -> DocumentKind | None:
        return DocumentKind.of(self.capability, self.root)

    @property
    def is_index(self) -> bool:
        return self.root is Root.SITEMAPINDEX

    def link(self, rel: str) -> Link | None:
        """The first link having ``rel`` among its relation types."""
        return next((ln for ln in self.links if rel in ln.rels), None)

    @property
    def up(self) -> str | None:
        """Section 6.2: the document above this one (Capability List, Source Description)."""
        found = self.link("up")
        return found.href if found else None

    @property
    def index(self) -> str | None:
        """Section 6.2: the index this document belongs to."""
        found = self.link("index")
        return found.href if found else None


@dataclass(slots=True)
class Document:
    """A whole document held in memory: fine for Capability Lists, indexes and tests.

    Large Resource and Change Lists are read entry by entry with the streaming reader instead.
    """

    head: Head
    entries: list[Entry] = field(default_factory=list)

    @property
    def kind(self) -> DocumentKind | None:
        return self.head.kind

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)
