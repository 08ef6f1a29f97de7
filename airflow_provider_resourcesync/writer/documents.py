"""Where the mirror's documents live: their keys under a location of a destination, the URLs
they are published under, how long a cache may keep each (:meth:`Documents.cache_control`), and
how one is read or written (staged, with its hash and length)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from urllib.parse import unquote, urlsplit

from ..errors import ConfigurationError, DocumentError, InvalidValueError
from ..protocol.hashes import DigestingWriter
from ..protocol.model import MAX_ENTRIES, Document, Entry, Head, Link
from ..protocol.reader import DocumentReader
from ..protocol.split import Output, write_split
from ..protocol.writer import document_bytes
from ..storage.base import Destination, ObjectInfo
from ..storage.keys import RESERVED_PREFIX, quoted_key

__all__ = [
    "CAPABILITY_LIST",
    "CHANGES",
    "CHANGE_LIST_INDEX",
    "CHECKPOINT",
    "DESCRIPTION",
    "DOCUMENTS_MAX_AGE",
    "IMMUTABLE",
    "INDEX",
    "KEY",
    "NAMESPACE",
    "RESOURCE_LIST",
    "XML",
    "Documents",
    "base_url",
    "documents_cache_control",
    "name_of",
]

RESOURCE_LIST = RESERVED_PREFIX + "resourcelist.xml"
CAPABILITY_LIST = RESERVED_PREFIX + "capabilitylist.xml"
DESCRIPTION = RESERVED_PREFIX + "description.xml"
CHECKPOINT = RESERVED_PREFIX + "checkpoint.json"
CHANGES = RESERVED_PREFIX + "changes/"
CHANGE_LIST_INDEX = RESERVED_PREFIX + "changelist.xml"
#: The folder of the lookup index (:mod:`.shards`), derived from the documents.
INDEX = RESERVED_PREFIX + "index/"
#: The namespace of the attribute that names each object's key in the mirror's lists.
NAMESPACE = "urn:airflow-provider-resourcesync:mirror"
#: The ``rs:md`` attribute naming an object's key.
KEY = f"{{{NAMESPACE}}}key"
XML = "application/xml"
#: How long a cache may keep a document that runs rewrite (the Capability List, the indexes,
#: ``resourcelist.xml``...): the default of ``documents_max_age`` (docs/publishing.md, "Caches").
DOCUMENTS_MAX_AGE = timedelta(minutes=5)
#: The ``Cache-Control`` of what is named by its time, a package or a closed list, which is never
#: written over: any cache may keep it a year (RFC 9111 5.2.2.1, RFC 8246 ``immutable``).
IMMUTABLE = "public, max-age=31536000, immutable"
#: A time in a name (:func:`.journal.stamp_at`; a Resource List part's generation): the name of a
#: document or package written once, never written over.
_TIMED = re.compile(r"\d{8}T\d{6}(?:\.\d{6})?Z")


def documents_cache_control(max_age: timedelta) -> str:
    """The ``Cache-Control`` of a document that runs rewrite: any cache may keep it ``max_age``
    (whole seconds).

    :raises ConfigurationError: ``max_age`` is not a non-negative ``timedelta``.
    """
    if not isinstance(max_age, timedelta) or max_age < timedelta(0):
        raise ConfigurationError(f"documents_max_age={max_age!r}: give a non-negative "
                                "datetime.timedelta, how long a cache may keep a document that "
                                "runs rewrite (e.g. timedelta(minutes=5))")
    return f"public, max-age={int(max_age.total_seconds())}"


def base_url(url: str) -> str:
    """``url`` as a base for keys: an absolute ``http(s)`` URL ending with ``/``.

    :raises InvalidValueError: ``url`` cannot be one.
    """
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc or (
            parts.query or parts.fragment):
        raise InvalidValueError(f"public URL {url!r}: expected an http:// or https:// URL with "
                                "no query, under which the destination's keys are published")
    return url if url.endswith("/") else url + "/"


def name_of(url: str) -> str:
    """The file name a document of the mirror is published under, at the end of ``url``."""
    return unquote(url.rstrip("/").rpartition("/")[2])


class Documents:
    """The documents at ``destination`` under ``location``, published under ``base`` (an
    http(s) URL ending with ``/``; None: the destination's own URLs), of a collection whose
    objects are served under ``resources`` (an http(s) URL ending with ``/``; None: beside the
    documents, each entry with a ``via`` link to the object's origin, as the mirror's are),
    which caches may keep ``max_age`` (:meth:`cache_control`); a list of more than
    ``max_entries`` entries is split into parts (section 7's 50,000; tests give fewer)."""

    def __init__(self, destination: Destination, location: str, base: str | None,
                 resources: str | None = None, max_age: timedelta = DOCUMENTS_MAX_AGE,
                 max_entries: int = MAX_ENTRIES) -> None:
        self.destination = destination
        self.location = location
        self.base = base
        self.resources = resources
        self._rewritten = documents_cache_control(max_age)
        self._max_entries = max_entries

    def cache_control(self, key: str) -> str:
        """The ``Cache-Control`` the object at ``key`` is written with, by its kind: what is
        named by its time (a closed Change List or Change Dump, a part of a Resource List, a
        package and its manifest copy) is never written over, and is :data:`IMMUTABLE`; a
        document that runs rewrite, the Resource List, the Capability List, an index, may be
        kept ``max_age``."""
        return IMMUTABLE if _TIMED.search(key.rpartition("/")[2]) else self._rewritten

    def key(self, key: str) -> str:
        """A key of the default location (:data:`RESOURCE_LIST`...) moved to this one."""
        return self.location + key.removeprefix(RESERVED_PREFIX)

    def url(self, key: str) -> str:
        """Where the object at ``key`` is published: under the base if there is one, else the
        destination's own URL."""
        if self.base is not None:
            return self.base + quoted_key(key)
        return self.destination.object_url(key)

    def loc(self, uri: str, key: str) -> str:
        """The ``loc`` of the object at ``key`` whose URI is ``uri``: ``uri`` itself where the
        objects are served apart from the documents, else the object's URL beside them."""
        return uri if self.resources is not None else self.url(key)

    def origin(self, entry: Entry, url: str) -> tuple[str, Link | None]:
        """The URI an entry of ours in the document at ``url`` describes, and the ``via`` link
        that names it (None where the objects are served apart: the ``loc`` is the URI).

        :raises DocumentError: a mirror's entry has no ``via`` link (not one of ours).
        """
        if self.resources is not None:
            return entry.loc, None
        via = entry.links_for("via")
        if not via:
            raise DocumentError(f"the entry for {entry.loc} lacks the via link the mirror "
                                "writes: the list is not the mirror's own", url=url,
                                line=entry.line, section="14.8")
        return via[0].href, via[0]

    def key_of(self, entry: Entry, url: str) -> str:
        """The key of the object an entry of ours describes: its ``mirror:key``, else (a
        Change List written before they carried one) the key its ``loc`` publishes.

        :raises DocumentError: neither says (``url`` and the entry's line are named).
        """
        key = entry.md.extra.get(KEY) if entry.md is not None else None
        if key is None:
            published = self.url("")
            if not entry.loc.startswith(published):
                raise DocumentError(
                    f"the entry for {entry.loc} has no mirror:key and is not published under "
                    f"{published}: the list is not the mirror's own", url=url, line=entry.line)
            key = unquote(entry.loc[len(published):])
        return key

    @contextmanager
    def reader(self, key: str) -> Iterator[DocumentReader]:
        with self.destination.open(key) as stream, DocumentReader(
                stream, url=self.destination.object_url(key)) as reader:
            yield reader

    def write(self, key: str, head: Head, entries: list[Entry]) -> None:
        """A small document, whole."""
        self.destination.write_bytes(key, document_bytes(Document(head, entries)), XML,
                                     cache_control=self.cache_control(key))

    def write_list(self, head: Head, entries: Iterable[Entry], key: str,
                   part_key: Callable[[int], str], index: str | None = None) -> set[str]:
        """A list at ``key``, split into parts named by ``part_key`` if it must be; the keys
        written. ``index``: the key of the index that lists it (or its parts), which they link
        to (:func:`~..protocol.split.write_split`)."""
        keys = {self.url(key): key}

        def part_url(number: int) -> str:
            part = part_key(number)
            keys[self.url(part)] = part
            return self.url(part)

        urls = write_split(head, entries, url=self.url(key), part_url=part_url,
                           open_output=lambda url: self._output(keys[url]),
                           max_entries=self._max_entries,
                           index=None if index is None else self.url(index))
        return {keys[url] for url in urls}

    @contextmanager
    def _output(self, key: str) -> Iterator[Output]:
        """A staged document at ``key``, committed with its hash and length on a clean exit."""
        with self.destination.stage(key) as staged:
            output = DigestingWriter(staged.file, ("md5", "sha-256"))  # write-only
            yield output
            digester = output.digester
            staged.commit(ObjectInfo(self.url(key), digester.length, digester.hashes(),
                                     type=XML, cache_control=self.cache_control(key)))
