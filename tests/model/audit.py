"""A Source's documents as its followers find them, checked after every step of the model:
every document parses and validates, every document is reached from the Source Description
(none left over) and points up at the Capability List, everything a document names exists, a
Change List or Change Dump (or package) once listed never changes, and the changes listed,
per URI, in the order listed."""

from __future__ import annotations

import hashlib
import io
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from airflow_provider_resourcesync.protocol.model import Document
from airflow_provider_resourcesync.protocol.package import open_package
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.validate import has_errors, validate_source
from airflow_provider_resourcesync.writer import stamp_at

from .stores import Store

#: URI -> the changes listed for it, in order.
Listed = dict[str, list[str]]
#: What a document of each capability names that must exist (indexes name documents too).
_NAMING = ("description", "capabilitylist", "resourcedump", "changedump")


@dataclass(frozen=True, slots=True)
class _Read:
    token: str
    document: Document


class Audit:
    """The documents under ``docs`` at ``store``, read again only where they changed."""

    def __init__(self, store: Store, docs: str) -> None:
        self.store = store
        self.docs = docs
        self._read: dict[str, _Read] = {}
        self._manifests: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._fixed: dict[str, tuple[str, str]] = {}  # key -> token, MD5 once listed

    def check(self) -> dict[str, Listed]:
        """Check the documents as they are now; the changes each series lists
        (``changelist``, ``changedump``), for the series there are."""
        listing = self.store.listing(self.docs)
        for key in set(self._read) - set(listing):
            del self._read[key]
        for key, token in listing.items():
            if key.endswith(".xml") and (key not in self._read or
                                         self._read[key].token != token):
                self._read[key] = _Read(token, self._parsed(key))
        unreached = set(self._read) - self._walk(listing) - self._replaced_dump(listing)
        assert not unreached, ("documents no document names", sorted(unreached))
        return {series: self._listed(series, listing) for series in ("changelist", "changedump")
                if self.docs + series + ".xml" in listing}

    def _replaced_dump(self, listing: dict[str, str]) -> set[str]:
        """The files of the Resource Dumps older than the one ``resourcedump.xml`` lists, kept
        while a cache may still serve the one that named them (docs/publishing.md, "Caches")."""
        dump = self._read.get(self.docs + "resourcedump.xml")
        md = dump.document.head.md if dump is not None else None
        if md is None or md.at is None:
            return set()
        current = f"{self.docs}resourcedump/{stamp_at(md.at)}-"
        return {key for key in listing if key.startswith(self.docs + "resourcedump/")
                and key < current}

    def snapshot_at(self) -> datetime:
        """The Resource List's ``at``."""
        md = read_document(self.store.read(self.docs + "resourcelist.xml")).head.md
        assert md is not None and md.at is not None
        return md.at

    def _parsed(self, key: str) -> Document:
        data, url = self.store.read(key), self.store.url_of(key)
        findings = validate_source(io.BytesIO(data), url=url)
        assert not has_errors(findings), (key, [str(finding) for finding in findings])
        return read_document(data, url=url)

    def _walk(self, listing: dict[str, str]) -> set[str]:
        """The documents reached from the Source Description, each pointing up where it should
        and naming only what exists."""
        description = self.docs + "description.xml"
        assert description in self._read, "no Source Description"
        capability_list = self.store.url_of(self.docs + "capabilitylist.xml")
        reached, queue = set(), [description]
        while queue:
            key = queue.pop()
            reached.add(key)
            document = self._read[key].document
            kind = document.head.md.capability if document.head.md else None
            up = {"description": None, "capabilitylist": self.store.url_of(description)}.get(
                kind or "", capability_list)
            assert document.head.up == up, (key, document.head.up)
            if not (document.head.is_index or kind in _NAMING):
                continue
            fixed = kind == "changedump" or (kind == "changelist" and document.head.is_index)
            for entry in document.entries:  # a document, or a package and its manifest's copy
                for url in (entry.loc, *(link.href for link in entry.links_for("contents"))):
                    named = self.store.key_of(url)
                    assert named is not None and named in listing, (key, "names", url)
                    if fixed:  # a Change List, a Change Dump, a package of changes
                        self._fix(named, listing[named])
                    if named.endswith(".xml") and named not in reached:
                        queue.append(named)
        return reached

    def _fix(self, key: str, token: str) -> None:
        """A document or package once listed keeps its bytes (followers and caches read it
        once)."""
        known = self._fixed.get(key)
        if known is None or known[0] != token:
            digest = hashlib.md5(self.store.read(key)).hexdigest()
            assert known is None or known[1] == digest, (key, "changed once listed")
            self._fixed[key] = token, digest

    def _listed(self, series: str, listing: dict[str, str]) -> Listed:
        """URI -> changes, as the series' index lists them, in order: the Change Lists' entries,
        or the manifests of the packages of the Change Dumps."""
        listed: Listed = defaultdict(list)
        for part in self._named(self.docs + series + ".xml"):
            for entry in self._named(part) if series == "changedump" else [part]:
                changes = (self._manifest(entry, listing[entry]) if series == "changedump"
                           else [(e.loc, str(e.md.change if e.md else None))
                                 for e in self._read[entry].document.entries])
                for uri, change in changes:
                    listed[uri].append(change)
        return dict(listed)

    def _named(self, key: str) -> list[str]:
        keys = [self.store.key_of(entry.loc) for entry in self._read[key].document.entries]
        assert None not in keys
        return keys  # type: ignore[return-value]

    def _manifest(self, key: str, token: str) -> list[tuple[str, str]]:
        if (key, token) not in self._manifests:
            with open_package(io.BytesIO(self.store.read(key)),
                              url=self.store.url_of(key)) as package:
                self._manifests[key, token] = [
                    (entry.loc, str(entry.md.change if entry.md else None))
                    for entry in package.manifest.entries]
        return self._manifests[key, token]
