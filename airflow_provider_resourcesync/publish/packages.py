"""Change Dump packages (13.1, 13.2): a run's changes, in forward chronological order, cut into
ZIP packages, each with ``manifest.xml`` at its top and a copy of the manifest beside it.

A package holds every change of its window (13.2), so it is cut only between two change times;
the plan gives every change a time of its own (:mod:`.plan`), so a package can be cut after any
change. Windows follow each other: the first starts where the run's window starts, each next one
where the one before ends (at its last change), and the last ends where the run's ends. A
package closes at :attr:`PackageSize.entries` changes or once its bitstreams reach
:attr:`PackageSize.bytes`; an object larger than that goes in a package of its own. The limits
stay within what our own reader accepts (:data:`~..protocol.package.DEFAULT_LIMITS`), so every
package written can be read back by a Destination running this provider.

Packages are named by their window (``<from>-<until>.zip``, UTC stamps), so a run killed and made
again from the same plan writes the same names: a package already written whole, with its
manifest copy, is taken as it is (its manifest copy says what it holds); one without its copy is
written again. Each package is staged and committed whole: on S3 a multipart upload of the
staged file, never in memory.

Bitstreams are read as their URLs serve them now (:mod:`.bucket`), not as the inventory listed
them, and described by the bytes read: hash (the algorithms asked for) and length computed as
they are copied, ``lastmod`` and type as read. An object read otherwise than the inventory
listed it (written again since) is reported with what was read, so that the next run compares
its inventory with what was published; one gone since is left out and reported: the next run
publishes its deletion.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime

from ..errors import ConfigurationError, InvalidValueError, PublishError
from ..protocol.hashes import HASH_ALGORITHMS, DigestingWriter
from ..protocol.model import MAX_ENTRIES, Change, Entry, Head, Link, Metadata
from ..protocol.package import DEFAULT_LIMITS, PackageWriter
from ..protocol.reader import read_document
from ..storage.base import Destination, ObjectInfo
from ..writer import IMMUTABLE, XML, stamp_at
from .bucket import Bucket

__all__ = ["DEFAULT_BYTES", "DEFAULT_ENTRIES", "Package", "PackageSize", "Planned",
           "checked_algorithms", "cut", "fits_a_package", "package_entry", "staged_package",
           "to_read", "write_packages"]

#: A package's media type.
_ZIP = "application/zip"
_GIB = 1024 ** 3
_BUFFER = 1024 * 1024
#: A package's changes at most, by default: a manifest of about 4 MB.
DEFAULT_ENTRIES = 10_000
#: A package's bitstream bytes, by default, past which it closes.
DEFAULT_BYTES = _GIB
#: What to do instead of packaging an object too large for a package member.
_INSTEAD = "publish the Change List only, without Change Dumps"


@dataclass(frozen=True, slots=True)
class Planned:
    """One change a run publishes: the object's key and URI, what happened, when (distinct
    from every other change's time in the run), and the inventory's size, ETag (or change
    token) and LastModified of the object (its ``lastmod`` where it is not read: ``when`` may
    have been moved a microsecond or more from it, to date the change apart; None for a
    deletion), and its MD5 where the inventory says its ETag is one
    (:attr:`.inventory.objects.InventoryObject.md5`)."""

    key: str
    uri: str
    change: Change
    when: datetime
    size: int = 0
    etag: str = ""
    modified: datetime | None = None
    md5: str | None = None


@dataclass(frozen=True, slots=True)
class PackageSize:
    """When a package closes: at ``entries`` changes, or once its bitstreams reach ``bytes``.

    Defaults: 10,000 changes (a manifest of about 4 MB) and 1 GiB, packages a Destination
    downloads in minutes and our reader accepts (at most 50,000 entries, section 7; 10 GiB).

    :raises InvalidValueError: a limit our reader would refuse, or not positive.
    """

    entries: int = DEFAULT_ENTRIES
    bytes: int = DEFAULT_BYTES

    def __post_init__(self) -> None:
        most = min(MAX_ENTRIES, DEFAULT_LIMITS.max_manifest_entries,
                   DEFAULT_LIMITS.max_members - 1)
        if not 1 <= self.entries <= most:
            raise InvalidValueError(f"package entries {self.entries}: give 1 to {most:,} "
                                    "(a manifest lists at most 50,000, section 7)")
        if not 1 <= self.bytes <= DEFAULT_LIMITS.max_total_size:
            raise InvalidValueError(f"package bytes {self.bytes}: give 1 to "
                                    f"{DEFAULT_LIMITS.max_total_size:,}, what a Destination "
                                    "reading packages accepts")


def checked_algorithms(algorithms: Iterable[str]) -> tuple[str, ...]:
    """``algorithms``, the hashes of each packaged object, if each is one the packages can
    compute (an unknown one would give every entry an empty ``hash``).

    :raises ConfigurationError: none, or one unknown (the allowed named).
    """
    chosen = (algorithms,) if isinstance(algorithms, str) else tuple(algorithms)
    unknown = [name for name in chosen if name not in HASH_ALGORITHMS]
    if unknown or not chosen:
        raise ConfigurationError(
            f"hashes {chosen!r}: {'unknown ' + repr(unknown) if unknown else 'none given'}; "
            f"choose one or more of {', '.join(HASH_ALGORITHMS)}")
    return chosen


@dataclass(frozen=True, slots=True)
class Window:
    """The changes of one package and the window they fill."""

    start: datetime
    end: datetime
    changes: list[Planned] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Package:
    """A package written: its Change Dump entry, its manifest's entries (what it holds,
    described by the bytes packaged), the changes of its window, and the objects it holds as
    read otherwise than planned (key: size and change token read; unknown for a package
    written by an earlier attempt of the run, and taken as it is)."""

    entry: Entry
    manifest: list[Entry]
    changes: list[Planned]
    read: dict[str, tuple[int, str]] = field(default_factory=dict)

    @property
    def left(self) -> list[Planned]:
        """The changes of its window it does not hold: left for the next run."""
        held = {entry.loc for entry in self.manifest}
        return [change for change in self.changes if change.uri not in held]


def cut(changes: Iterable[Planned], size: PackageSize, start: datetime, end: datetime
        ) -> Iterator[Window]:
    """``changes`` (times strictly increasing, inside ``(start, end]``) as package windows.

    :raises PublishError: an object larger than a package member may be.
    :raises InvalidValueError: the times are not strictly increasing inside the window.
    """
    window = Window(start, end)
    held = 0
    for change in changes:
        before = window.changes[-1].when if window.changes else window.start
        if not before < change.when <= end:
            raise InvalidValueError(f"{change.uri} : change time {change.when.isoformat()} is "
                                    f"not after {before.isoformat()} and at most "
                                    f"{end.isoformat()}: the plan must date changes apart")
        fits_a_package(change.uri, change.size, _INSTEAD)
        if window.changes and (len(window.changes) >= size.entries
                               or held + change.size > size.bytes):
            yield Window(window.start, before, window.changes)
            window, held = Window(before, end), 0
        window.changes.append(change)
        held += change.size
    if window.changes:
        yield window


def fits_a_package(uri: str, size: int, instead: str) -> None:
    """:raises PublishError: an object of ``size`` bytes is more than a package member may hold
    (``instead``: what to do then, besides leaving it out of the published prefix)."""
    if size > DEFAULT_LIMITS.max_member_size:
        raise PublishError(
            f"{uri} : {size:,} bytes, more than a package member may hold "
            f"({DEFAULT_LIMITS.max_member_size:,} bytes, what Destinations reading packages "
            f"accept): {instead}, or leave the object out of the published prefix")


def write_packages(windows: Iterable[Window], bucket: Bucket, destination: Destination,
                   folder: str, url: Callable[[str], str], capability_list: str,
                   algorithms: tuple[str, ...]) -> Iterator[Package]:
    """Each window's package at ``destination`` under ``folder`` (a key prefix ending with
    ``/``), then its manifest copy, unless both are there already (a run made again).

    :param url: the public URL of a key at ``destination``.
    :param capability_list: the Capability List's URL, the manifests' ``up`` link.
    :param algorithms: the hashes of each bitstream and package.
    """
    for window in windows:
        name = f"{folder}{stamp_at(window.start)}-{stamp_at(window.end)}"
        zip_key, copy_key = f"{name}.zip", f"{name}-manifest.xml"
        written = destination.info(zip_key)
        copy = destination.read_bytes(copy_key) if written is not None else None
        read: dict[str, tuple[int, str]] = {}
        if written is not None and copy is not None:  # a run made again: taken as it is
            manifest = read_document(copy, url=url(copy_key)).entries
        else:
            package, written = _write(window, bucket, destination, zip_key, url(zip_key),
                                      capability_list, algorithms, read)
            destination.write_bytes(copy_key, package.manifest_bytes, XML,
                                    cache_control=IMMUTABLE)  # named by its window
            manifest = package.manifest.entries
        yield Package(package_entry(url(zip_key), written, url(copy_key), Metadata(
            from_=window.start, until=window.end)), manifest, window.changes, read)


def _write(window: Window, bucket: Bucket, destination: Destination, key: str, url: str,
           capability_list: str, algorithms: tuple[str, ...], read: dict[str, tuple[int, str]]
           ) -> tuple[PackageWriter, ObjectInfo]:
    """Write one package; its writer, closed, whose manifest leaves out the changes left for
    the next run, and the package as written. The objects read otherwise than planned go in
    ``read``."""
    def fill(package: PackageWriter) -> None:
        for change in window.changes:
            if change.change is Change.DELETED:
                package.add_deleted(Entry(change.uri, md=Metadata(change=change.change,
                                                                  datetime=change.when)))
                continue
            with bucket.read(change.key) as chunks:
                if chunks is None:  # gone since the inventory
                    continue
                fits_a_package(change.uri, chunks.length, _INSTEAD)
                package.add(Entry(change.uri, lastmod=chunks.lastmod(
                    change.size, change.etag, change.modified), md=Metadata(
                    change=change.change, datetime=change.when, type=chunks.type,
                    length=chunks.length)), chunks)
                if (chunks.length, chunks.etag) != (change.size, change.etag):
                    read[change.key] = (chunks.length, chunks.etag)

    head = Head(md=Metadata(capability="changedump-manifest", from_=window.start,
                            until=window.end),
                links=(Link(rel="up", href=capability_list),))
    return staged_package(destination, key, url, head, algorithms, fill)


def staged_package(destination: Destination, key: str, url: str, head: Head,
                   algorithms: tuple[str, ...], fill: Callable[[PackageWriter], None]
                   ) -> tuple[PackageWriter, ObjectInfo]:
    """A package (``head`` its manifest's) written at ``key`` of ``destination``, served at
    ``url``: staged, digested as it is written, committed whole; ``fill`` adds its members.
    Returns its writer, closed, and the package as committed."""
    with destination.stage(key) as staged:
        digesting = DigestingWriter(staged.file, algorithms)  # write-only: data descriptors
        # buffered in front of the digests: one update per megabyte, not one per ZIP record
        output = io.BufferedWriter(digesting, _BUFFER)
        with PackageWriter(output, head, algorithms) as package:
            fill(package)
        output.flush()
        digester = digesting.digester
        written = ObjectInfo(url, digester.length, digester.hashes(), type=_ZIP,
                             cache_control=IMMUTABLE)  # named by its window or at
        staged.commit(written)
    return package, written


def package_entry(url: str, written: ObjectInfo, manifest_url: str, md: Metadata) -> Entry:
    """The entry listing the package at ``url`` as ``written``, with its manifest copy at
    ``manifest_url``: ``md`` (its window or ``at``) with the package's type, length and
    hashes."""
    return Entry(url, md=replace(md, type=_ZIP, length=written.length,
                                         hash=written.hashes or None),
                 links=(Link(rel="contents", href=manifest_url, type=XML),))


def to_read(window: Window) -> Iterator[str]:
    """The keys of the objects ``window``'s package reads, in order."""
    return (change.key for change in window.changes if change.change is not Change.DELETED)
