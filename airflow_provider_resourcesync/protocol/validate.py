"""Conformance validator: what a document does against ANSI/NISO Z39.99-2017, section by section.

The reader is lenient (``capability="resourceList"``, non-hex hashes, entries with no time); this
module says what the spec makes of such a document. Every :class:`Finding` names the section of
the spec its rule comes from; a document is *clean* when it has no :attr:`Severity.ERROR` finding
(warnings allowed).

:func:`validate` streams: it consumes the entries once, and each check keeps O(1) state (the
Capability List's set of capabilities is the one small exception), so a million-entry Change List
is validated in flat memory. Checks are small functions in two registries, run in order: head
checks, and entry checks (each a factory that looks at the head once, returns None where it does
not apply, and otherwise a function called with every entry).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from .datetimes import format_datetime, zone_assumed
from .hashes import Hashes
from .model import (
    DEFAULT_PRI,
    MAX_ENTRIES,
    RS_NS,
    Capability,
    Change,
    Document,
    DocumentKind,
    Entry,
    Head,
    Link,
    Metadata,
    Root,
)
from .order import (
    CHANGE_DOCUMENTS,
    CHANGE_INDEXES,
    ChangeOrder,
    ForwardOrder,
    child_from,
    package_start,
)
from .paths import manifest_path_problem
from .reader import DocumentReader, Source

__all__ = [
    "Finding",
    "Severity",
    "has_errors",
    "validate",
    "validate_document",
    "validate_source",
]

_APPENDIX_A = "Appendix A"
#: Section 14.4: the relation type of a link to a description of a resource's changes.
_PATCH = f"{RS_NS}patch"

_CAPABILITIES = frozenset(c.value for c in Capability)
_CHANGES = ", ".join(c.value for c in Change)
_CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})

_MANIFESTS = frozenset({DocumentKind.RESOURCE_DUMP_MANIFEST, DocumentKind.CHANGE_DUMP_MANIFEST})
#: Appendix A, table 4: documents whose entries carry ``at`` / ``from`` in their ``rs:md``.
_CHILD_AT = frozenset({
    DocumentKind.RESOURCE_LIST_INDEX, DocumentKind.RESOURCE_DUMP, DocumentKind.RESOURCE_DUMP_INDEX,
})
_CHILD_FROM = frozenset({
    DocumentKind.CHANGE_LIST_INDEX, DocumentKind.CHANGE_DUMP, DocumentKind.CHANGE_DUMP_INDEX,
})
_TOP = frozenset({DocumentKind.SOURCE_DESCRIPTION, DocumentKind.SOURCE_DESCRIPTION_INDEX})


class Severity(StrEnum):
    """ERROR: the document breaks a *must* of the spec. WARNING: a *should*, or a likely slip."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the spec says about a document: severity, section, and where (if an entry)."""

    severity: Severity
    section: str
    message: str
    line: int | None = None
    loc: str | None = None

    def __str__(self) -> str:
        parts = [f"{self.severity} [{self.section}]"]
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.loc is not None:
            parts.append(self.loc)
        return f"{' '.join(parts)}{' :' if self.loc is not None else ':'} {self.message}"


def has_errors(findings: Iterable[Finding]) -> bool:
    """Whether any finding is an error: a document is clean when this is False."""
    return any(finding.severity is Severity.ERROR for finding in findings)


def validate(head: Head, entries: Iterable[Entry]) -> Iterator[Finding]:
    """Findings for a document's head, then for its entries as they stream by (each read once)."""
    for head_check in _HEAD_CHECKS:
        yield from head_check(head)
    checks = [check for factory in _ENTRY_CHECKS if (check := factory(head)) is not None]
    for entry in entries:
        for check in checks:
            yield from check(entry)


def validate_document(document: Document) -> list[Finding]:
    """All findings for a document held in memory."""
    return list(validate(document.head, document.entries))


def validate_source(source: Source, *, url: str | None = None) -> list[Finding]:
    """Read a document with :class:`DocumentReader` and validate it as it streams.

    A document the reader refuses (malformed XML, a value that cannot be parsed, a DTD) raises
    :class:`~airflow_provider_resourcesync.errors.DocumentError` from here, with its URL, line and
    section: the caller reports it. Findings are only for documents that could be read.
    """
    with DocumentReader(source, url=url) as reader:
        return list(validate(reader.head, reader))


# -- building findings -------------------------------------------------------------------------

def _error(section: str, message: str, entry: Entry | None = None) -> Finding:
    return _finding(Severity.ERROR, section, message, entry)


def _warning(section: str, message: str, entry: Entry | None = None) -> Finding:
    return _finding(Severity.WARNING, section, message, entry)


def _finding(severity: Severity, section: str, message: str, entry: Entry | None) -> Finding:
    if entry is None:
        return Finding(severity, section, message)
    return Finding(severity, section, message, entry.line, entry.loc)


def _time(value: datetime) -> str:
    """A datetime for a message: the spec's UTC form (naive ones, built by hand, as they are)."""
    return format_datetime(value) if value.tzinfo is not None else value.isoformat()


# -- shared by head and entries ----------------------------------------------------------------

def _interval_findings(md: Metadata, owner: str, entry: Entry | None) -> Iterator[Finding]:
    """Section 7: ``completed`` is not before ``at``, ``until`` is not before ``from``."""
    for start_name, start, end_name, end in (
        ("at", md.at, "completed", md.completed), ("from", md.from_, "until", md.until)
    ):
        if start is not None and end is not None and end < start:
            yield _error("7", f"{owner} {end_name} {_time(end)} is before its "
                              f"{start_name} {_time(start)}", entry)


def _zone_findings(md: Metadata | None, owner: str, entry: Entry | None) -> Iterator[Finding]:
    """Section 7: values are W3C Datetimes, whose times carry a zone designator (read as UTC
    when they lack one)."""
    times = [] if md is None else [("at", md.at), ("completed", md.completed),
                                   ("from", md.from_), ("until", md.until),
                                   ("datetime", md.datetime)]
    if entry is not None:
        times.append(("<lastmod>", entry.lastmod))
    for name, value in times:
        if value is not None and zone_assumed(value):
            yield _error("7", f"{owner} {name} {value.replace(tzinfo=None).isoformat()} has no "
                              "time zone designator (a W3C Datetime needs Z or +hh:mm); read "
                              "as UTC", entry)


def _hash_findings(hashes: Hashes | None, owner: str, entry: Entry | None) -> Iterator[Finding]:
    """Section 7: ``hash`` is a list of ``algorithm:hexdigest`` tokens, one at least."""
    if hashes is None:
        return
    if not hashes:
        yield _error("7", f"{owner} hash is empty (expected algorithm:hexdigest tokens; leave "
                          "the attribute out where no digest is known)", entry)
    for problem in hashes.problems:
        yield _error("7", f"{owner} hash: {problem} (expected algorithm:hexdigest)", entry)
    for value in hashes.values:
        if value.algorithm and value.is_hex and not value.is_known:
            yield _warning("7", f"{owner} hash algorithm {value.algorithm!r} is unknown "
                                "(known: md5, sha-1, sha-256); it cannot be verified", entry)


def _link_findings(link: Link, entry: Entry | None) -> Iterator[Finding]:
    """Section 7: ``rel`` and ``href`` mandatory, ``pri`` in 1..999999, ``length`` >= 0."""
    owner = f'<rs:ln rel="{link.rel}">'
    if not link.rel.strip() or not link.href.strip():
        yield _error("7", f"{owner} needs both rel and href (both are mandatory)", entry)
    if link.pri is not None and not 1 <= link.pri <= DEFAULT_PRI:
        yield _error("7", f"{owner} pri {link.pri} is outside 1..{DEFAULT_PRI}", entry)
    if link.length is not None and link.length < 0:
        yield _error("7", f"{owner} length {link.length} is negative", entry)
    yield from _hash_findings(link.hash, owner, entry)


# -- head checks -------------------------------------------------------------------------------

def _head_capability(head: Head) -> Iterator[Finding]:
    """Section 7: the document's own ``rs:md`` is mandatory, with a defined ``capability``."""
    md = head.md
    if md is None:
        yield _error("7", "the document has no <rs:md> of its own; it is mandatory and must "
                          "carry the capability attribute")
    elif md.capability is None:
        yield _error("7", "the document's <rs:md> has no capability attribute; it is mandatory")
    elif md.capability not in _CAPABILITIES:
        yield _error("7", f"capability {md.capability!r} is not a defined value"
                          f"{_suggestion(md)}")


def _suggestion(md: Metadata) -> str:
    meant = md.capability_value
    if meant is not None:
        return f"; did you mean {meant.value!r}?"
    return f" (defined: {', '.join(sorted(_CAPABILITIES))})"


def _head_root(head: Head) -> Iterator[Finding]:
    """Sections 9, 11.2, 13.2: the capabilities that have no ``<sitemapindex>`` form."""
    if head.kind is DocumentKind.CAPABILITY_LIST_INDEX:
        yield _warning("9", "a Capability List Index: a Capability List never approaches the "
                            "limits of one document, and Sources should not generate an index")
    elif head.kind is None and (kind := DocumentKind.of(head.capability, Root.URLSET)):
        yield _error(kind.section, f"a {kind.title} is a <urlset> document; it has no "
                                   "<sitemapindex> form")


def _head_times_required(head: Head) -> Iterator[Finding]:
    """Appendix A: ``at`` mandatory for snapshot documents, ``from`` for change documents."""
    kind, md = head.kind, head.md
    if kind is None or md is None:
        return
    if kind.uses_at and md.at is None:
        yield _error(_APPENDIX_A, f"the {kind.title}'s <rs:md> must have an at attribute")
    if kind.uses_from and md.from_ is None:
        yield _error(_APPENDIX_A, f"the {kind.title}'s <rs:md> must have a from attribute")


def _head_times_misplaced(head: Head) -> Iterator[Finding]:
    """Section 7: ``at``/``completed`` are not used on change documents, ``from``/``until`` not on
    snapshot documents (nor on Capability Lists and Source Descriptions)."""
    kind, md = head.kind, head.md
    if kind is None or md is None:
        return
    for name, value, used in (
        ("at", md.at, kind.uses_at), ("completed", md.completed, kind.uses_at),
        ("from", md.from_, kind.uses_from), ("until", md.until, kind.uses_from),
    ):
        if value is not None and not used:
            yield _warning("7", f"{name} is not used for a {kind.title}")


def _head_intervals(head: Head) -> Iterator[Finding]:
    """Section 7: the document's own ``completed``/``until`` are not before ``at``/``from``."""
    if head.md is not None:
        yield from _interval_findings(head.md, "the document's", None)


def _head_zones(head: Head) -> Iterator[Finding]:
    """Section 7 on the document's own times: each has a zone designator."""
    return _zone_findings(head.md, "the document's", None)


def _head_up(head: Head) -> Iterator[Finding]:
    """Sections 6.2, 9-13: the ``up`` link (Capability List -> Source Description, every
    capability document -> Capability List).

    A WARNING, not an error: the spec makes the link mandatory, but a Destination that already
    knows the Capability List can work without it, and the spec's own walkthrough examples
    (2, 3, 4, 5, 8) omit it. A Source Description is the top and has none.
    """
    kind = head.kind
    if kind is None or kind in _TOP or head.up is not None:
        return
    above = "Source Description" if kind.capability is Capability.CAPABILITY_LIST else (
        "Capability List")
    yield _warning(kind.section, f"no <rs:ln rel=\"up\"> to the {above}; it is mandatory "
                                 "(section 6.2) for navigation and discovery")


def _head_links(head: Head) -> Iterator[Finding]:
    """Section 7 on the document's own ``rs:ln`` elements."""
    for link in head.links:
        yield from _link_findings(link, None)


_HEAD_CHECKS: list[Callable[[Head], Iterator[Finding]]] = [
    _head_capability,
    _head_root,
    _head_times_required,
    _head_times_misplaced,
    _head_intervals,
    _head_zones,
    _head_up,
    _head_links,
]


# -- entry checks: every document --------------------------------------------------------------

EntryCheck = Callable[[Entry], Iterable[Finding]]


def _every_document(check: EntryCheck) -> Callable[[Head], EntryCheck]:
    """Register a check that applies to the entries of every document as it is."""
    return lambda head: check


def _entry_attributes(entry: Entry) -> Iterator[Finding]:
    """Section 7: the entry's ``change``, ``length``, ``hash``, ``changefreq`` and intervals."""
    md = entry.md
    if entry.changefreq is not None and entry.changefreq not in _CHANGEFREQS:
        yield _warning("7", f"changefreq {entry.changefreq!r} is not a defined value "
                            f"({', '.join(sorted(_CHANGEFREQS))})", entry)
    yield from _zone_findings(md, "the entry's", entry)
    if md is None:
        return
    if md.change is not None and md.change_value is None:
        yield _error("7", f"change {md.change!r} is not one of {_CHANGES}", entry)
    if md.length is not None and md.length < 0:
        yield _error("7", f"length {md.length} is negative", entry)
    yield from _hash_findings(md.hash, "<rs:md>", entry)
    yield from _interval_findings(md, "the entry's", entry)


def _entry_capability_value(entry: Entry) -> Iterable[Finding]:
    """Section 7: an entry's ``capability`` is a defined value.

    A case slip (``resourceList``) is an error; a value unknown altogether is a warning, since
    other specifications may define capabilities (section 6.1).
    """
    md = entry.md
    if md is None or md.capability is None or md.capability in _CAPABILITIES:
        return ()
    if md.capability_value is not None:
        return (_error("7", f"capability {md.capability!r} is not a defined value"
                            f"{_suggestion(md)}", entry),)
    return (_warning("7", f"capability {md.capability!r} is not defined by this specification",
                     entry),)


def _entry_links(entry: Entry) -> Iterator[Finding]:
    """Section 7 on the entry's ``rs:ln`` elements (any ``rel`` token is fine)."""
    for link in entry.links:
        yield from _link_findings(link, entry)


def _entry_limit(head: Head) -> EntryCheck:
    """Section 7: at most 50,000 entries in one document; reported once."""
    count = 0

    def check(entry: Entry) -> Iterable[Finding]:
        nonlocal count
        count += 1
        if count != MAX_ENTRIES + 1:
            return ()
        return (_error("7", f"more than {MAX_ENTRIES:,} entries in one document; split it and "
                            "group the parts with an index", entry),)

    return check


def _child_times(head: Head) -> EntryCheck | None:
    """Appendix A: which entries carry ``at``/``completed`` or ``from``/``until``.

    ``from`` is recommended on the entries of Change List Indexes, Change Dumps and Change Dump
    Indexes; ``at`` is optional on those of Resource List Indexes, Resource Dumps and Resource
    Dump Indexes; elsewhere entries do not use them.
    """
    kind = head.kind
    if kind is None:
        return None
    uses_at, uses_from = kind in _CHILD_AT, kind in _CHILD_FROM

    def check(entry: Entry) -> Iterator[Finding]:
        md = entry.md
        if uses_from and (md is None or md.from_ is None):
            yield _warning(_APPENDIX_A, f"<rs:md from> is recommended on each entry of a "
                                       f"{kind.title}", entry)
        if md is None:
            return
        for name, value, used in (
            ("at", md.at, uses_at), ("completed", md.completed, uses_at),
            ("from", md.from_, uses_from), ("until", md.until, uses_from),
        ):
            if value is not None and not used:
                yield _warning(_APPENDIX_A, f"{name} is not used on entries of a {kind.title}",
                               entry)

    return check


# -- entry checks: Source Description and Capability List -------------------------------------

def _source_description_entry(head: Head) -> EntryCheck | None:
    """Section 8: a Source Description lists Capability Lists."""
    if head.kind is not DocumentKind.SOURCE_DESCRIPTION:
        return None

    def check(entry: Entry) -> Iterable[Finding]:
        value = entry.md.capability_value if entry.md is not None else None
        if value is None or value is Capability.CAPABILITY_LIST:
            return ()
        return (_error("8", f"a Source Description lists Capability Lists; this entry's "
                            f"capability is {value.value!r}, not 'capabilitylist'", entry),)

    return check


def _capability_list_entry(head: Head) -> EntryCheck | None:
    """Section 9: each entry has ``rs:md capability``, naming a capability document."""
    if head.kind is not DocumentKind.CAPABILITY_LIST:
        return None

    def check(entry: Entry) -> Iterable[Finding]:
        md = entry.md
        if md is None or md.capability is None:
            return (_error("9", "an entry of a Capability List must have <rs:md capability>",
                           entry),)
        if md.capability_value in (Capability.DESCRIPTION, Capability.CAPABILITY_LIST):
            return (_warning("9", f"capability {md.capability!r} in a Capability List, which "
                                  "lists capability documents", entry),)
        return ()

    return check


def _capability_repeats(head: Head) -> EntryCheck | None:
    """Section 9: a Capability List must only contain one entry per capability."""
    if head.kind is not DocumentKind.CAPABILITY_LIST:
        return None
    seen: dict[str, int | None] = {}  # capability -> line of its first entry

    def check(entry: Entry) -> Iterable[Finding]:
        md = entry.md
        if md is None or md.capability is None:
            return ()
        value = md.capability_value or md.capability
        if value not in seen:
            seen[value] = entry.line
            return ()
        first = f" (first at line {seen[value]})" if seen[value] is not None else ""
        return (_error("9", f"capability {value!r} is listed more than once{first}", entry),)

    return check


# -- entry checks: changes ---------------------------------------------------------------------

def _change_required(head: Head) -> EntryCheck | None:
    """Sections 12.1, 13.2: each entry has ``rs:md`` with ``change``."""
    kind = head.kind
    if kind not in CHANGE_DOCUMENTS:
        return None

    def check(entry: Entry) -> Iterable[Finding]:
        if entry.md is not None and entry.md.change is not None:
            return ()
        return (_error(kind.section, f"an entry of a {kind.title} must have <rs:md change> "
                                     f"({_CHANGES})", entry),)

    return check


def _forward_order(make: Callable[[str, str, Entry], Finding], noun: str,
                   order: ForwardOrder) -> EntryCheck:
    """An entry check that each timed entry is not earlier than the previous timed one."""

    def check(entry: Entry) -> Iterable[Finding]:
        found = order.backwards(entry)
        order.advance(entry)
        if found is None:
            return ()
        when, last = found
        return (make(order.section, f"entries are not in forward chronological order: "
                                    f"{_time(when)} is earlier than the previous {noun}'s "
                                    f"{_time(last)}", entry),)

    return check


def _change_order(head: Head) -> EntryCheck | None:
    """Sections 12.1, 13.2: changes are in forward chronological order.

    The time of a change is its ``datetime``; until the document shows a ``datetime``, an
    entry's ``lastmod`` stands for it (1.0 style). Entries with no time are not ordered
    (:class:`~.order.ChangeOrder`, which the writers follow too).
    """
    kind = head.kind
    if kind not in CHANGE_DOCUMENTS:
        return None
    return _forward_order(_error, "change", ChangeOrder(kind.section))


def _datetime_window(head: Head) -> EntryCheck | None:
    """Section 7: a change's ``datetime`` lies within the document's ``from``..``until``.

    ``lastmod`` is not checked: section 7 says it may fall outside.
    """
    if head.kind not in CHANGE_DOCUMENTS or head.md is None:
        return None
    start, end = head.md.from_, head.md.until

    def check(entry: Entry) -> Iterable[Finding]:
        when = entry.md.datetime if entry.md is not None else None
        if when is None:
            return ()
        if start is not None and when < start:
            return (_error("7", f"datetime {_time(when)} is before the document's from "
                                f"{_time(start)}", entry),)
        if end is not None and when > end:
            return (_error("7", f"datetime {_time(when)} is after the document's until "
                                f"{_time(end)}", entry),)
        return ()

    return check


# -- entry checks: indexes and dumps of changes ------------------------------------------------

def _interval_order(head: Head) -> EntryCheck | None:
    """Sections 12.2, 13.1: Change Lists in an index, packages in a Change Dump, in forward
    chronological order of their ``from`` (a package without one: its ``lastmod``).

    An error in an index (*must*), a warning in a Change Dump (*should*).
    """
    kind = head.kind
    if kind not in _CHILD_FROM:
        return None
    make = _error if kind in CHANGE_INDEXES else _warning
    start_time = package_start if kind is DocumentKind.CHANGE_DUMP else child_from
    return _forward_order(make, "entry", ForwardOrder(start_time, kind.section))


def _open_children(head: Head) -> EntryCheck | None:
    """Section 12.2: only the last Change List of an index may be open (have no ``until``):
    "If the Change List is closed the use of until is required". The same for Change Dump
    Indexes (13.1)."""
    kind = head.kind
    if kind not in CHANGE_INDEXES:
        return None
    open_entry: Entry | None = None

    def check(entry: Entry) -> Iterable[Finding]:
        nonlocal open_entry
        found = open_entry
        open_entry = entry if entry.md is not None and entry.md.until is None else None
        if found is None:
            return ()
        return (_error(kind.section, f"has no until (open) but is not the last entry: only the "
                                     f"last may be open, a closed one must have until; the next "
                                     f"is {entry.loc}", found),)

    return check


def _child_window(head: Head) -> EntryCheck | None:
    """Sections 7, 12.2, 13.1: an entry's ``from``/``until`` lie within the document's."""
    kind = head.kind
    if kind not in _CHILD_FROM or head.md is None:
        return None
    start, end = head.md.from_, head.md.until

    def check(entry: Entry) -> Iterator[Finding]:
        md = entry.md
        if md is None:
            return
        if start is not None and md.from_ is not None and md.from_ < start:
            yield _error(kind.section, f"from {_time(md.from_)} is before the {kind.title}'s "
                                       f"from {_time(start)}", entry)
        for name, value in (("from", md.from_), ("until", md.until)):
            if end is not None and value is not None and value > end:
                yield _error(kind.section, f"{name} {_time(value)} is after the {kind.title}'s "
                                           f"until {_time(end)}", entry)

    return check


# -- entry checks: manifests -------------------------------------------------------------------

def _manifest_path(head: Head) -> EntryCheck | None:
    """Sections 11.2, 13.2: ``rs:md path`` is mandatory (but for deletions in a Change Dump
    Manifest) and names a file of the package: a leading slash, then a safe name (the rule
    :func:`~.package.open_package` enforces, :func:`~.paths.manifest_path_problem`)."""
    kind = head.kind
    if kind not in _MANIFESTS:
        return None

    def check(entry: Entry) -> Iterable[Finding]:
        path = entry.md.path if entry.md is not None else None
        if path is None:
            if kind is DocumentKind.CHANGE_DUMP_MANIFEST and entry.change is Change.DELETED:
                return ()
            return (_error(kind.section, f"an entry of a {kind.title} must have <rs:md path>",
                           entry),)
        problem = manifest_path_problem(path)
        if problem is None:
            return ()
        return (_error(kind.section, f"path {path!r} {problem}", entry),)

    return check


def _patch_path(head: Head) -> EntryCheck | None:
    """Section 14.4: in a Change Dump Manifest, a link to a change description (``rel``
    ``.../patch``) has the ``path`` of that description in the package."""
    if head.kind is not DocumentKind.CHANGE_DUMP_MANIFEST:
        return None

    def check(entry: Entry) -> Iterator[Finding]:
        for link in entry.links_for(_PATCH):
            owner = f'<rs:ln rel="{link.rel}">'
            if link.path is None:
                yield _error("14.4", f"{owner} must have path: where the change description "
                                     "is in the package", entry)
            elif (problem := manifest_path_problem(link.path)) is not None:
                yield _error("14.4", f"{owner} path {link.path!r} {problem}", entry)

    return check


_ENTRY_CHECKS: list[Callable[[Head], EntryCheck | None]] = [
    _entry_limit,
    _every_document(_entry_attributes),
    _every_document(_entry_capability_value),
    _every_document(_entry_links),
    _child_times,
    _source_description_entry,
    _capability_list_entry,
    _capability_repeats,
    _change_required,
    _change_order,
    _datetime_window,
    _interval_order,
    _open_children,
    _child_window,
    _manifest_path,
    _patch_path,
]
