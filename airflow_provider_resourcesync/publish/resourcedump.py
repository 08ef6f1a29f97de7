"""An optional Resource Dump (11.1) of a publication's snapshot: the objects its Resource List
lists, in ZIP packages each holding a Resource Dump Manifest (11.2), as of the list's ``at``.

It is written beside each Resource List (the first run, and compactions) within the Source
writer's save, between its halves (``SourceWriter.saving``), before the Capability List that
lists it. Packages close as Change Dump packages do (:class:`~.packages.PackageSize`); each
object is read as its URL serves it now (:mod:`.bucket`) and described by the bytes read. An
object written again since the inventory is dumped as read: if the Resource List lists it
otherwise, the next run publishes its change, which a Destination that baselined from the dump
takes again. One gone since, or left for the next run, is left out of the dump and logged: the
next run publishes its deletion.

Writes, in order: the packages (``resourcedump/<at>-NNNNN.zip``, named by the snapshot's time)
each with a copy of its manifest beside it; then ``resourcedump.xml``, written whole, its
``completed`` the time the packages were (11.1). A run killed before ``resourcedump.xml`` leaves
the dump before whole (its packages are still there); the run carried out again writes the new
one. The packages of the dump it replaces outlive it by the documents' cache lifetime: a cache
may serve the old ``resourcedump.xml`` that long, and a follower reading it must find every
package it lists. A later run deletes them (:func:`drop_older_dumps`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from functools import partial

from ..client.policy import ClientPolicy
from ..errors import PublishError
from ..protocol.datetimes import format_datetime
from ..protocol.model import MAX_ENTRIES, Document, Entry, Head, Link, Metadata
from ..protocol.package import PackageWriter
from ..protocol.reader import DocumentReader
from ..protocol.writer import document_bytes
from ..storage.keys import RESERVED_PREFIX
from ..units import byte_size
from ..writer import CAPABILITY_LIST, XML, SourceWriter, stamp_at
from .bucket import Bucket
from .inventory.objects import InventoryObject
from .packages import PackageSize, fits_a_package, package_entry, staged_package
from .reads import DEFAULT_CONCURRENCY, READ_POLICY, ReadAhead

__all__ = ["RESOURCE_DUMP", "drop_older_dumps", "dumped_at", "remove_resource_dump",
           "write_resource_dump"]

#: The Resource Dump (11.1), over the packages of the latest snapshot.
RESOURCE_DUMP = RESERVED_PREFIX + "resourcedump.xml"
_PACKAGES = RESERVED_PREFIX + "resourcedump/"
#: What to do instead of dumping an object too large for a package member.
_INSTEAD = "publish without resource_dump"
#: How far apart the clocks of the workers that replace a dump and that delete its packages may
#: be, on top of the documents' cache lifetime.
_SKEW = timedelta(minutes=1)


def dumped_at(writer: SourceWriter) -> datetime | None:
    """The ``at`` of the Resource Dump kept by ``writer``'s publication; None if there is none.

    :raises DocumentError: it cannot be read.
    """
    md = _dump_md(writer)
    return md.at if md is not None else None


def _dump_md(writer: SourceWriter) -> Metadata | None:
    """The ``rs:md`` of the Resource Dump kept by ``writer``'s publication; None if there is
    none."""
    key = writer.key(RESOURCE_DUMP)
    destination = writer.destination
    if not destination.exists(key):
        return None
    with destination.open(key) as stream, DocumentReader(
            stream, url=destination.object_url(key)) as reader:
        return reader.head.md


def write_resource_dump(writer: SourceWriter, at: datetime,
                        objects: Iterable[tuple[InventoryObject, str]], left: Iterable[str],
                        bucket: Bucket, size: PackageSize, algorithms: tuple[str, ...],
                        log: Callable[[str], None], clock: Callable[[], datetime], *,
                        concurrency: int = DEFAULT_CONCURRENCY,
                        policy: ClientPolicy = READ_POLICY) -> int:
    """The Resource Dump of the objects ``writer`` holds as of ``at`` (its Resource List's),
    read from ``bucket`` as ``objects`` (the inventory of the snapshot, in key order, each
    object with its URI) lists them, but for the ``left`` keys, ``concurrency`` at once as
    ``policy`` says (:mod:`.reads`), ``completed`` by ``clock`` once its packages are written;
    the packages of the dump it replaces are left to :func:`drop_older_dumps`. Returns the
    number of objects dumped.

    :raises PublishError: an object cannot be read, is larger than a package member may be,
        or the dump would need more than 50,000 packages.
    """
    destination = writer.destination
    capability_list = writer.url(writer.key(CAPABILITY_LIST))
    folder = writer.key(_PACKAGES) + stamp_at(at)
    listed: list[Entry] = []
    dumped = 0
    with ReadAhead(bucket, concurrency, policy=policy, log=log, total=len(writer)) as reading:
        groups = reading.groups(_groups(_held(writer, objects, frozenset(left), log), size),
                                _to_read)
        for number, group in enumerate(groups, start=1):
            if number > MAX_ENTRIES:
                raise PublishError(f"the Resource Dump of "
                                   f"{writer.url(writer.key(RESOURCE_DUMP))} would list more "
                                   f"than {MAX_ENTRIES:,} packages (section 7): raise "
                                   "package_entries or package_bytes")
            zip_key = f"{folder}-{number:05d}.zip"
            copy_key = f"{folder}-{number:05d}-manifest.xml"
            head = Head(md=Metadata(capability="resourcedump-manifest", at=at),
                        links=(Link(rel="up", href=capability_list),))
            package, written = staged_package(
                destination, zip_key, writer.url(zip_key), head, algorithms,
                partial(_fill, group=group, bucket=reading, log=log))
            destination.write_bytes(copy_key, package.manifest_bytes, XML,
                                    cache_control=writer.cache_control(copy_key))
            dumped += len(package.manifest.entries)
            listed.append(package_entry(writer.url(zip_key), written, writer.url(copy_key),
                                        Metadata(at=at)))
            log(f"Resource Dump package {number}: {len(package.manifest.entries):,} objects, "
                f"{byte_size(written.length)}, {writer.url(zip_key)}")
    key = writer.key(RESOURCE_DUMP)
    destination.write_bytes(key, document_bytes(Document(
        Head(md=Metadata(capability="resourcedump", at=at, completed=max(clock(), at)),
             links=(Link(rel="up", href=capability_list),)), listed)), XML,
        cache_control=writer.cache_control(key))
    return dumped


def drop_older_dumps(writer: SourceWriter, now: datetime, max_age: timedelta,
                     log: Callable[[str], None]) -> None:
    """Delete the packages (and manifest copies) of the Resource Dumps older than the one
    ``resourcedump.xml`` lists once no cache may still serve a ``resourcedump.xml`` listing
    them: at ``now``, ``max_age`` (the documents' cache lifetime) and :data:`_SKEW` after that
    one was ``completed`` (its packages written, just before it; its ``at`` for a dump written
    before it had one). Called by each run that keeps a Resource Dump, after the new one is
    written: a later run deletes them, as does a run made again after one killed while deleting
    them."""
    md = _dump_md(writer)
    if md is None or md.at is None:
        return
    folder = writer.key(_PACKAGES)
    current = folder + stamp_at(md.at) + "-"
    older = [key for key in writer.destination.keys(folder) if not key.startswith(current)]
    if not older:
        return
    replaced = md.completed or md.at
    until = replaced + max_age + _SKEW
    if now < until:
        log(f"the {len(older):,} files of the Resource Dump replaced at "
            f"{format_datetime(replaced)} are kept until {format_datetime(until)}: a cache may "
            "serve the resourcedump.xml that lists them until then")
        return
    for key in older:
        writer.destination.delete(key)
    log(f"the {len(older):,} files of the Resource Dump replaced at {format_datetime(replaced)} "
        "are deleted")


def _fill(package: PackageWriter, group: list[tuple[InventoryObject, str]], bucket: Bucket,
          log: Callable[[str], None]) -> None:
    """Add ``group``'s objects to ``package`` as read, but those gone since the inventory."""
    for item, uri in group:
        with bucket.read(item.key) as chunks:
            if chunks is None:
                log(f"{bucket.where(item.key)} went since the inventory of the snapshot: left "
                    "out of the Resource Dump (the next run publishes its deletion)")
                continue
            fits_a_package(uri, chunks.length, _INSTEAD)
            package.add(Entry(uri, lastmod=chunks.lastmod(
                item.size, item.etag, item.last_modified), md=Metadata(
                type=chunks.type, length=chunks.length)), chunks)


def remove_resource_dump(writer: SourceWriter) -> None:
    """Delete the Resource Dump and its packages (once no Capability List lists it)."""
    destination = writer.destination
    destination.delete(writer.key(RESOURCE_DUMP))
    for key in list(destination.keys(writer.key(_PACKAGES))):
        destination.delete(key)


def _held(writer: SourceWriter, objects: Iterable[tuple[InventoryObject, str]],
          left: frozenset[str], log: Callable[[str], None]
          ) -> Iterator[tuple[InventoryObject, str]]:
    """Each object the writer holds, with its URI; one left for the next run (the Resource List
    has it as it was, if at all) is logged."""
    for item, uri in objects:
        if item.key in left or writer.get(uri) is None:
            log(f"{uri} is left for the next run: left out of the Resource Dump")
            continue
        yield item, uri


def _to_read(group: list[tuple[InventoryObject, str]]) -> list[str]:
    """The keys of ``group``'s objects, in order."""
    return [item.key for item, _ in group]


def _groups(held: Iterable[tuple[InventoryObject, str]], size: PackageSize
            ) -> Iterator[list[tuple[InventoryObject, str]]]:
    """``held`` cut into packages: at ``size.entries`` objects, or once their bytes (as
    inventoried) reach ``size.bytes``; an object larger goes alone."""
    group: list[tuple[InventoryObject, str]] = []
    bytes_ = 0
    for item, uri in held:
        fits_a_package(uri, item.size, _INSTEAD)
        if group and (len(group) >= size.entries or bytes_ + item.size > size.bytes):
            yield group
            group, bytes_ = [], 0
        group.append((item, uri))
        bytes_ += item.size
    if group:
        yield group
