"""ZIP packages of Resource Dumps and Change Dumps (spec sections 11.1-11.2 and 13.1-13.2).

A package is a ZIP file of bitstreams with, at its top level, ``manifest.xml``: a Resource Dump
Manifest (11.2) or a Change Dump Manifest (13.2) whose ``rs:md path`` locates each bitstream.

:func:`open_package` reads one safely (DESIGN.md, "Safety rules"): every member is checked against
the path rules and the :class:`PackageLimits` when the package is opened, before a byte is
extracted, and the sizes are enforced again while reading. :class:`PackageWriter` writes one to
any stream, seekable or not.
"""

from __future__ import annotations

import io
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass, fields, replace
from functools import lru_cache, partial
from operator import attrgetter
from typing import IO, Any
from urllib.parse import unquote, urlsplit

from ..errors import DocumentError, UnsafeContentError
from .closing import ClosedOnExit, FinishedOnSuccess
from .hashes import Digester
from .model import (
    MAX_ENTRIES,
    Change,
    Document,
    DocumentKind,
    Entry,
    Head,
    Metadata,
)
from .order import required_order
from .paths import manifest_member, member_name_problem
from .reader import DocumentReader
from .writer import Serializer

__all__ = [
    "DEFAULT_LIMITS",
    "MANIFEST_NAME",
    "DumpPackage",
    "Opener",
    "PackageLimits",
    "PackageWriter",
    "open_package",
]

#: Sections 11.2 and 13.2: the manifest's name, at the top level of the package.
MANIFEST_NAME = "manifest.xml"

#: Opens one bitstream of a package as a binary stream.
Opener = Callable[[], IO[bytes]]

_MIB = 1024 * 1024
_GIB = 1024 * _MIB
_CHUNK = _MIB
_MANIFEST_KINDS = (DocumentKind.RESOURCE_DUMP_MANIFEST, DocumentKind.CHANGE_DUMP_MANIFEST)
_MANIFEST_SECTIONS = "11.2, 13.2"
# The methods every ZIP producer writes; others (bzip2, lzma, deflate64...) are refused.
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
_ENCRYPTED = 0x1  # general purpose bit flag 0 (APPNOTE 4.4.4)
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest ZIP time: packages are reproducible
_UNIX = 3  # "version made by" host system, so that readers take external_attr as a mode
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_SEGMENT = 100
# An http(s) URL with no user, query or fragment (urlsplit's host and path are its groups)
# whose path segments _segment keeps as they are: none empty, none starting with a dot.
_PLAIN_URL = re.compile(
    f"https?://([A-Za-z0-9.-]+(?::[0-9]*)?)((?:/[A-Za-z0-9._-]{{1,{_MAX_SEGMENT}}})+)")
_MEMBER_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError)
_WITH_BITSTREAMS = frozenset({Change.CREATED, Change.UPDATED})  # as written: str's equality
# Every field's value, in the order the constructor takes them: a copy's arguments.
_METADATA_VALUES = attrgetter(*(item.name for item in fields(Metadata)))
_ENTRY_VALUES = attrgetter(*(item.name for item in fields(Entry)))


@dataclass(frozen=True, slots=True)
class PackageLimits:
    """Caps on a package, checked against its central directory and again while reading.

    :param max_members: members in the ZIP, ``manifest.xml`` and directories included.
    :param max_total_size: uncompressed bytes of all members together.
    :param max_member_size: uncompressed bytes of one member.
    :param max_ratio: uncompressed / compressed size of one member (a compression bomb's tell).
    :param ratio_min_size: members smaller than this are exempt from ``max_ratio``: small files
        of repeated bytes compress far better than 100:1 and are harmless.
    :param max_manifest_size: bytes of ``manifest.xml``, whose entries are held in memory.
    :param max_manifest_entries: entries of ``manifest.xml`` (section 7: at most 50,000 in one
        ``<urlset>``, which a manifest is).
    """

    max_members: int = 100_000
    max_total_size: int = 10 * _GIB
    max_member_size: int = 4 * _GIB
    max_ratio: float = 100.0
    ratio_min_size: int = _MIB
    max_manifest_size: int = 100 * _MIB
    max_manifest_entries: int = MAX_ENTRIES


DEFAULT_LIMITS = PackageLimits()


# -- reading ---------------------------------------------------------------------------------------


def open_package(
    file: str | os.PathLike[str] | IO[bytes],
    *,
    url: str = "<package>",
    limits: PackageLimits = DEFAULT_LIMITS,
) -> DumpPackage:
    """Open a Resource Dump or Change Dump package and check it whole before reading any bitstream.

    :param file: a path, or a seekable binary file (download a package to a temporary file first).
    :param url: the package's URL, named in every error.
    :param limits: the caps to enforce.
    :raises UnsafeContentError: a member breaks a safety rule or a cap (naming the member).
    :raises DocumentError: not a ZIP, no ``manifest.xml``, a manifest that is not a dump manifest,
        a manifest path that is missing or malformed (naming the manifest line).
    """
    if not isinstance(file, str | os.PathLike) and not file.seekable():
        raise DocumentError(
            "a package is read from a seekable file: download it to a temporary file first",
            url=url,
        )
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise DocumentError(f"not a readable ZIP file: {exc}", url=url, section="11.1") from None
    try:
        return DumpPackage(archive, url=url, limits=limits)
    except BaseException:
        archive.close()
        raise


class DumpPackage(ClosedOnExit):
    """An opened, checked dump package: its :attr:`manifest` and its bitstreams.

    Made by :func:`open_package`. Bitstreams are read straight from the ZIP, never extracted;
    every stream raises :class:`UnsafeContentError` if its member ends before the size its
    central directory declares, or is corrupt. No member yields more than its declared size:
    :mod:`zipfile` stops there, and data that would inflate further fails the CRC check.
    """

    def __init__(self, archive: zipfile.ZipFile, *, url: str, limits: PackageLimits) -> None:
        self.url = url
        self.manifest_url = f"{url}!/{MANIFEST_NAME}"
        self._zip = archive
        self._files = _checked_files(archive, limits, url)
        self.manifest: Document = self._read_manifest(limits)
        kind = self.manifest.kind
        if kind not in _MANIFEST_KINDS:
            capability = self.manifest.head.md.capability if self.manifest.head.md else None
            raise DocumentError(
                f"{MANIFEST_NAME} is not a Resource Dump Manifest or a Change Dump Manifest "
                f"(capability {capability!r} on <{self.manifest.head.root.value}>)",
                url=self.manifest_url, section=_MANIFEST_SECTIONS,
            )
        self.kind: DocumentKind = kind
        self._unrooted = 0
        self._members = [self._member_of(entry) for entry in self.manifest.entries]

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the manifest gets wrong that reading it forgave, for the caller to log."""
        if not self._unrooted:
            return ()
        return (f"{self._unrooted} of its manifest paths lack the leading '/' that spec "
                "section 11.2 asks for: each was read from the package's root",)

    # -- opening checks ----------------------------------------------------------------------------

    def _read_manifest(self, limits: PackageLimits) -> Document:
        info = self._files.get(MANIFEST_NAME)
        if info is None:
            raise DocumentError(
                f"no {MANIFEST_NAME} at the top level of the package", url=self.url,
                section=_MANIFEST_SECTIONS,
            )
        with (self._open_member(info) as stream,
              DocumentReader(stream, url=self.manifest_url,
                             max_bytes=limits.max_manifest_size) as reader):
            entries: list[Entry] = []
            for entry in reader:
                if len(entries) == limits.max_manifest_entries:
                    raise UnsafeContentError(
                        f"more than {limits.max_manifest_entries} entries in the manifest",
                        rule="manifest entry cap", url=self.manifest_url, line=entry.line)
                entries.append(entry)
            return Document(reader.head, entries)

    def _member_of(self, entry: Entry) -> zipfile.ZipInfo | None:
        """The member holding ``entry``'s bitstream; None for a ``deleted`` change (13.2)."""
        if self.kind is DocumentKind.CHANGE_DUMP_MANIFEST and entry.change is Change.DELETED:
            return None
        path = entry.md.path if entry.md is not None else None
        if path is None:
            raise DocumentError(
                f"{entry.loc} has no <rs:md path>: where is its bitstream?",
                url=self.manifest_url, line=entry.line, section=self.kind.section,
            )
        self._unrooted += not path.startswith("/")
        return self._resolve(path, line=entry.line)

    def _resolve(self, path: str, *, line: int | None = None) -> zipfile.ZipInfo:
        """The file a manifest ``path`` names: a safe name of a file of the package, after the
        ``/`` that 11.2 asks for (forgiven when missing: :attr:`warnings`)."""
        member = manifest_member(path)
        problem = member_name_problem(member)
        if problem is None and member not in self._files:
            problem = "names no file in the package"
        if problem is not None:
            raise DocumentError(
                f"path {path!r} {problem}", url=self.manifest_url, line=line,
                section=self.kind.section,
            )
        return self._files[member]

    # -- bitstreams --------------------------------------------------------------------------------

    def entries(self) -> Iterator[tuple[Entry, Opener | None]]:
        """The manifest's entries in order, each with an opener of its bitstream.

        The opener is None for a ``deleted`` change (13.2), which has no bitstream, even where
        the Source gave it a path.
        """
        for entry, info in zip(self.manifest.entries, self._members, strict=True):
            yield entry, None if info is None else partial(self._open_member, info)

    def open(self, path: str) -> IO[bytes]:
        """The bitstream at a manifest ``path`` (``/resources/res1``), as a binary stream."""
        return self._open_member(self._resolve(path))

    def read_verified(self, entry: Entry, *, chunk_size: int = _CHUNK,
                      digester: Digester | None = None) -> Iterator[bytes]:
        """Stream ``entry``'s bitstream, checking it against the entry's ``hash`` and ``length``.

        The check happens after the last chunk: use the bytes only once the iterator is exhausted.
        ``digester`` (fresh; by default one of the strongest listed algorithm) digests the
        bytes on the way, and its digests are what is checked: a caller that keeps digests of
        its own passes its digester, and the bytes are digested once.

        :raises ContentMismatchError: naming the entry's ``loc``, on a hash or length mismatch.
        :raises DocumentError: the entry has no bitstream in this package.
        """
        info = self._member_of(entry)
        if info is None or entry.md is None:
            raise DocumentError(f"{entry.loc} : a deleted change has no bitstream", url=self.url,
                                line=entry.line, section="13.2")
        if digester is None:
            digester = Digester.for_expected(entry.md.hash)
        with self._open_member(info) as stream:
            while chunk := stream.read(chunk_size):
                digester.update(chunk)
                yield chunk
        digester.verify(entry.loc, hashes=entry.md.hash, length=entry.md.length)

    def _open_member(self, info: zipfile.ZipInfo) -> IO[bytes]:
        try:
            raw = self._zip.open(info)
        except _MEMBER_ERRORS as exc:
            raise _unsafe(info.filename, f"cannot be opened: {exc}", "intact ZIP members",
                          self.url) from None
        return io.BufferedReader(_MemberStream(raw, info, self.url))

    # -- lifetime ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the ZIP (and the file, if :func:`open_package` opened it from a path)."""
        self._zip.close()


def _checked_files(archive: zipfile.ZipFile, limits: PackageLimits, url: str
                   ) -> dict[str, zipfile.ZipInfo]:
    """Check every member against the safety rules and caps; the regular files by name."""
    infos = archive.infolist()
    if len(infos) > limits.max_members:
        raise UnsafeContentError(
            f"the package has {len(infos)} members, more than {limits.max_members}",
            rule="member count cap", url=url,
        )
    names: set[str] = set()
    total = 0
    for info in infos:
        _check_member(info, limits, url)
        if info.filename in names:
            raise _unsafe(info.filename, "appears twice", "one member per name", url)
        names.add(info.filename)
        total += info.file_size
    if total > limits.max_total_size:
        raise UnsafeContentError(
            f"the package holds {total} bytes uncompressed, more than {limits.max_total_size}",
            rule="total size cap", url=url,
        )
    return {info.filename: info for info in infos if not info.is_dir()}


def _check_member(info: zipfile.ZipInfo, limits: PackageLimits, url: str) -> None:
    name = info.orig_filename
    problem = member_name_problem(name.removesuffix("/") if info.is_dir() else name)
    if problem is not None:
        raise _unsafe(name, problem, "ZIP member names stay inside the package", url)
    file_type = stat.S_IFMT(info.external_attr >> 16)
    if file_type == stat.S_IFLNK:
        raise _unsafe(name, "is a symbolic link", "no links in ZIP packages", url)
    if file_type not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise _unsafe(name, "is not a regular file", "regular files only in ZIP packages", url)
    if info.flag_bits & _ENCRYPTED:
        raise _unsafe(name, "is encrypted", "no encrypted ZIP members", url)
    if info.compress_type not in _METHODS:
        raise _unsafe(name, f"uses compression method {info.compress_type}",
                      "stored or deflate ZIP members only", url)
    if info.file_size > limits.max_member_size:
        raise _unsafe(name, f"is {info.file_size} bytes, more than {limits.max_member_size}",
                      "member size cap", url)
    if (info.file_size >= limits.ratio_min_size
            and info.file_size > limits.max_ratio * info.compress_size):
        raise _unsafe(
            name, f"inflates {info.compress_size} bytes to {info.file_size}, a ratio above "
            f"{limits.max_ratio:g}", "compression ratio cap", url,
        )


def _unsafe(member: str, problem: str, rule: str, url: str) -> UnsafeContentError:
    return UnsafeContentError(f"member {member!r} {problem}", rule=rule, url=url)


class _MemberStream(io.RawIOBase):
    """A member's bytes, counted: ending before its declared size raises, as does corrupt data.

    :mod:`zipfile` reads no more than the declared size (checked against the caps when the
    package was opened) and then checks the CRC, which data inflating further fails.
    """

    def __init__(self, raw: IO[bytes], info: zipfile.ZipInfo, url: str) -> None:
        self._raw = raw
        self._name = info.filename
        self._declared = info.file_size
        self._url = url
        self._count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        wanted = len(buffer)
        try:
            data = self._raw.read(wanted)
        except _MEMBER_ERRORS as exc:
            raise self._error(f"is corrupt: {exc}") from None
        self._count += len(data)
        if not data and wanted and self._count < self._declared:
            raise self._error(f"ends at {self._count} of its declared {self._declared} bytes")
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()

    def _error(self, problem: str) -> UnsafeContentError:
        return _unsafe(self._name, problem, "ZIP members match their central directory", self._url)


# -- writing ---------------------------------------------------------------------------------------


class PackageWriter(FinishedOnSuccess):
    """Writes a dump package to ``stream``: bitstreams as they come, ``manifest.xml`` last.

    The kind of package follows ``head.md.capability``: ``resourcedump-manifest`` (11.2) or
    ``changedump-manifest`` (13.2). The stream need not be seekable (members then carry data
    descriptors), and is not closed. Members get a fixed timestamp, so the same input gives the
    same bytes. Bitstreams are stored as they are (many are compressed already, and a stored
    member can never look like a compression bomb to a reader); the manifest is deflated.

    Entries are listed in the manifest in the order they were added: for a Change Dump that must
    be forward chronological order (13.2), and a change earlier than the one before is refused
    before its bitstream is written. An entry whose values cannot be written in the manifest is
    refused then too. Should ``add`` raise anything else, the package is incomplete: discard
    the stream.

    :param algorithms: the hashes each bitstream's entry gets, computed as it is written.
    """

    def __init__(self, stream: IO[bytes], head: Head,
                 algorithms: tuple[str, ...] = ("md5", "sha-256")) -> None:
        kind = head.kind
        if kind not in _MANIFEST_KINDS:
            raise DocumentError(
                f"a package's manifest is a Resource Dump Manifest or a Change Dump Manifest, "
                f"not capability {head.md.capability if head.md else None!r}",
                section=_MANIFEST_SECTIONS,
            )
        self.head = head
        self.kind: DocumentKind = kind
        self._prefix = "/resources" if kind is DocumentKind.RESOURCE_DUMP_MANIFEST else "/changes"
        self._serializer = Serializer(head.root, head.namespaces)
        self._order = required_order(kind)
        self._zip = zipfile.ZipFile(stream, "w")
        self._entries: list[Entry] = []
        self._lines: list[bytes] = []  # the manifest's entries, serialized as recorded
        self._manifest_bytes: bytes | None = None
        self._used: set[str] = set()
        self._algorithms = algorithms
        self._closed = False

    def add(self, entry: Entry, data: bytes | Iterable[bytes] | IO[bytes]) -> Entry:
        """Stream one bitstream into the package and record its manifest entry.

        The path is derived from ``entry.loc`` (``/resources/<host>/<path>``, or ``/changes/...``),
        made unique with ``-v2``, ``-v3``... before the extension. A ``hash`` or ``length``
        already on the entry is checked against the data, in the writer's algorithms.

        :returns: the entry as recorded: ``path``, ``hash`` (the writer's algorithms) and
            ``length`` set.
        :raises ContentMismatchError: the data does not match the entry's ``hash`` or ``length``.
        :raises DocumentError: in a Change Dump, the entry is not a ``created``/``updated`` change.
        :raises InvalidValueError: the entry cannot be written in the manifest, or is a change
            earlier than the one before (13.2); nothing of it is written.
        """
        self._check_open()
        md = entry.md or Metadata()
        if (self.kind is DocumentKind.CHANGE_DUMP_MANIFEST
                and md.change not in _WITH_BITSTREAMS):
            raise DocumentError(
                f"{entry.loc} : a change with a bitstream is 'created' or 'updated', not "
                f"{md.change!r} (add deletes with add_deleted)", section="13.2",
            )
        template = self._serializer.entry_template(entry)
        self._require_order(entry)
        path = self._claim(_path_for(self._prefix, entry.loc))
        info = _zip_info(path[1:], zipfile.ZIP_STORED)
        info.file_size = md.length or 0  # a hint: ZIP64 is used where it may be needed
        digester = Digester(self._algorithms)
        with self._zip.open(info, "w", force_zip64=md.length is None) as member:
            for chunk in _chunks(data):
                digester.update(chunk)
                member.write(chunk)
        digester.verify(entry.loc, hashes=md.hash, length=md.length)
        hashes = digester.hashes()
        described = Metadata(*_METADATA_VALUES(md))  # dataclasses.replace costs 4x as much
        described.path, described.hash, described.length = path, hashes, digester.length
        recorded = Entry(*_ENTRY_VALUES(entry))
        recorded.md = described
        self._record(recorded, self._serializer.filled(template, hashes, digester.length, path))
        return recorded

    def add_deleted(self, entry: Entry) -> Entry:
        """Record a ``deleted`` change: no bitstream and no path (13.2).

        :raises InvalidValueError: as :meth:`add`.
        """
        self._check_open()
        if (self.kind is not DocumentKind.CHANGE_DUMP_MANIFEST or entry.md is None
                or entry.change is not Change.DELETED):
            raise DocumentError(
                f"{entry.loc} : only a Change Dump Manifest lists deletes, as change='deleted'",
                section="13.2",
            )
        recorded = replace(entry, md=replace(entry.md, path=None))
        line = self._serializer.entry(recorded)
        self._require_order(recorded)
        self._record(recorded, line)
        return recorded

    @property
    def manifest(self) -> Document:
        """The manifest: the head and the entries recorded so far."""
        return Document(self.head, self._entries)

    @property
    def manifest_bytes(self) -> bytes:
        """``manifest.xml`` as written into the package (once it is closed)."""
        if self._manifest_bytes is None:
            raise DocumentError("the package is not closed yet: its manifest is not written")
        return self._manifest_bytes

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        """On an error the package is left without ``manifest.xml``, so no reader takes it for a
        dump package (11.2); its ZIP is ended now, while the stream is open, not when the
        garbage collector finds it (writing to a stream closed by then)."""
        if exc_type is not None and not self._closed:
            self._closed = True
            with suppress(ValueError, OSError):
                self._zip.close()
        super().__exit__(exc_type, *exc_info)

    def close(self) -> None:
        """Write ``manifest.xml`` and finish the ZIP; the stream stays open."""
        if self._closed:
            return
        self._closed = True
        self._manifest_bytes = b"".join([self._serializer.head(self.head), *self._lines,
                                         self._serializer.end()])
        self._zip.writestr(_zip_info(MANIFEST_NAME, zipfile.ZIP_DEFLATED), self._manifest_bytes)
        self._zip.close()

    def _check_open(self) -> None:
        if self._closed:
            raise DocumentError("the package is already closed")

    def _require_order(self, entry: Entry) -> None:
        """Refuse, before anything of it is written, a change out of order (13.2)."""
        if self._order is not None:
            self._order.require(entry)

    def _record(self, entry: Entry, line: bytes) -> None:
        self._lines.append(line)
        self._entries.append(entry)
        if self._order is not None:
            self._order.advance(entry)

    def _claim(self, path: str) -> str:
        """``path``, or ``path`` with ``-vN`` before its extension, unused so far (any case)."""
        folder, _, name = path.rpartition("/")
        dot = name.rfind(".")
        stem, ext = (name[:dot], name[dot:]) if dot > 0 else (name, "")
        candidate, version = path, 1
        while candidate.casefold() in self._used:
            version += 1
            candidate = f"{folder}/{stem}-v{version}{ext}"
        self._used.add(candidate.casefold())
        return candidate


def _path_for(prefix: str, loc: str) -> str:
    """``<prefix>/<host>/<url path>`` in safe characters, with no empty, ``.`` or ``..`` segment."""
    plain = _PLAIN_URL.fullmatch(loc)
    if plain is not None and "/." not in plain[2]:  # what urlsplit finds, each segment kept
        return f"{prefix}/{_host_segment(plain[1])}{plain[2]}"
    parts = urlsplit(loc)
    host = parts.netloc.rpartition("@")[2].lower()
    segments = [_segment(s) for s in parts.path.split("/") if s]
    if not segments or parts.path.endswith("/"):
        segments.append("index")
    return "/".join([prefix, _segment(host), *segments])


@lru_cache(maxsize=64)
def _host_segment(host: str) -> str:
    """The segment of a host (and port): a package's URLs mostly share one."""
    return _segment(host.lower())


def _segment(text: str) -> str:
    safe = _UNSAFE_CHARS.sub("_", unquote(text))[:_MAX_SEGMENT]
    return safe if safe.strip(".") else safe.replace(".", "_") or "_"


def _zip_info(name: str, compress_type: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
    info.compress_type = compress_type
    info.create_system = _UNIX
    info.external_attr = (stat.S_IFREG | 0o644) << 16
    return info


def _chunks(data: bytes | Iterable[bytes] | IO[bytes]) -> Iterable[bytes]:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return (bytes(data),)
    read = getattr(data, "read", None)
    return data if read is None else _read_chunks(read)


def _read_chunks(read: Callable[[int], bytes]) -> Iterator[bytes]:
    while chunk := read(_CHUNK):
        yield chunk
