"""Publishing a collection as a ResourceSync Source, run after run (docs/publishing.md).

A run diffs an inventory against the objects as last published (:mod:`.published`), plans its
changes (:mod:`.plan`), and carries the plan out through the Source writer
(:class:`~..writer.source_writer.SourceWriter`): the first run publishes a Resource List of
every object; each later one Change Dump packages of its changes (:mod:`.packages`), a Change
Dump listing them (13.1) in the Change Dump Index, and a Change List of the same changes (12.1).
With :attr:`Publication.resource_dump`, each Resource List (the first run, and compactions) gets
a Resource Dump of the same snapshot beside it (11.1, :mod:`.resourcedump`).

Writes, in order: the objects as published now and the plan; then the packages and their
manifest copies; the Change Dump and its index; then the writer's save (the Change List and
its index, at a compaction the Resource List and the Resource Dump's packages and document, the
Capability List, the Source Description and ``checkpoint.json``); last the plan and the older
objects record are deleted (and a Resource Dump no longer asked for). Nothing written
points at what is not yet written. A run killed anywhere finds its plan on the next run and
carries it out again before it reads a newer inventory: packages written whole are taken as
they are, and the writer lists no change twice (it replays its own Change Lists), so every
change is published once.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ..client.policy import ClientPolicy
from ..errors import ConfigurationError, DocumentError, InventoryError, PublishError
from ..protocol.datetimes import format_datetime, parse_datetime
from ..protocol.hashes import Hashes
from ..protocol.model import Change, Entry, Metadata
from ..storage.base import Destination
from ..storage.keys import RESERVED_PREFIX, normalized, quoted_key
from ..storage.local import LocalDestination
from ..units import byte_size
from ..writer import (
    CAPABILITY_LIST,
    DESCRIPTION,
    DOCUMENTS_MAX_AGE,
    RESOURCE_LIST_MAX_AGE,
    Journal,
    ObjectRecord,
    SourceWriter,
    base_url,
    checkpoint_key,
    documents_cache_control,
    saved_checkpoint,
    stamp_at,
)
from .bucket import Bucket
from .diff import Change as Diffed
from .diff import changes
from .guards import MAX_DELETIONS, Deletions, check_not_ahead, check_not_frozen
from .inventory.objects import InventoryObject
from .packages import PackageSize, Planned, checked_algorithms, cut, to_read, write_packages
from .plan import DatedApart, Plan, read_plan, write_plan
from .preview import Preview
from .published import keeping, read_published, rebuilt
from .reads import DEFAULT_CONCURRENCY, READ_POLICY, ReadAhead, checked_concurrency
from .resourcedump import (
    RESOURCE_DUMP,
    drop_older_dumps,
    dumped_at,
    remove_resource_dump,
    write_resource_dump,
)
from .retention import KEEP_CHANGES_FOR, dropping_packages
from .urls import UrlCheck, UrlChecker, check_unchanged

__all__ = ["CHANGE_DUMP_INDEX", "Preview", "Publication", "Published", "preview", "publish"]

#: The Change Dump Index (13.1), over one Change Dump per run that found changes.
CHANGE_DUMP_INDEX = RESERVED_PREFIX + "changedump.xml"
_CHANGE_DUMPS = RESERVED_PREFIX + "changedumps/"
_PACKAGES = RESERVED_PREFIX + "packages/"
_OBJECTS = RESERVED_PREFIX + "objects/"
_PLANS = RESERVED_PREFIX + "plans/"
_VERSION = 1


@dataclass(frozen=True, slots=True)
class Publication:
    """Where and how a collection is published.

    :param destination: where the documents and packages are written.
    :param base_url: where the collection's objects are served (each ``loc`` is it plus the
        percent-encoded key); the publication's for life.
    :param publish_url: where ``destination`` is served (None: its own ``file://`` URLs, for
        a local folder only); the publication's for life.
    :param location: the key prefix of the documents at ``destination`` (``""`` or ending
        with ``/``).
    :param size: when a package closes.
    :param algorithms: the hashes of each bitstream, one or more of ``md5``, ``sha-1``,
        ``sha-256``, ``sha-512`` (another raises :class:`~..errors.ConfigurationError`).
    :param resource_dump: also publish a Resource Dump (11.1) of each Resource List's snapshot.
    :param resource_list_max_age: the Resource List is rewritten once the oldest run whose
        changes it lacks is this old (see :class:`~..writer.source_writer.SourceWriter`), and
        with it the Resource Dump; None: only once those changes pass a tenth of it.
    :param keep_changes_for: Change Lists, Change Dumps and their packages that end before this
        long ago (or before the Resource List's ``at``, if earlier) are retired; None: kept.
    :param max_deletions: the share of the objects last published a run may delete (rounded
        up to a whole object); a run that would delete more writes nothing and fails.
    :param url_check: how a run checks its URLs before it writes (:mod:`.urls`); None: not.
    :param documents_max_age: how long a cache may keep a document that runs rewrite (its
        ``Cache-Control`` on S3; docs/publishing.md, "Caches"), and so how long the packages
        of a Resource Dump outlive the ``resourcedump.xml`` that replaced it.
    :param concurrency: objects read at once (:mod:`.reads`); 1: one after another.
    :param read_policy: the reads' retries, deadline (``request_timeout``, of an object read
        whole) and the run's ``retry_budget``, as the sync engine's requests follow them.
    :raises InvalidValueError: ``concurrency`` is not 1 to 256.
    :raises ConfigurationError: no ``publish_url`` for a destination that is not a local
        folder, an unknown hash algorithm, or a ``documents_max_age`` that is not a
        non-negative ``timedelta``.
    """

    destination: Destination
    base_url: str
    publish_url: str | None = None
    location: str = ""
    size: PackageSize = field(default_factory=PackageSize)
    algorithms: tuple[str, ...] = ("md5",)
    resource_dump: bool = False
    resource_list_max_age: timedelta | None = RESOURCE_LIST_MAX_AGE
    keep_changes_for: timedelta | None = KEEP_CHANGES_FOR
    max_deletions: float = MAX_DELETIONS
    url_check: UrlCheck | None = None
    documents_max_age: timedelta = DOCUMENTS_MAX_AGE
    concurrency: int = DEFAULT_CONCURRENCY
    read_policy: ClientPolicy = READ_POLICY

    def __post_init__(self) -> None:
        checked_algorithms(self.algorithms)
        documents_cache_control(self.documents_max_age)
        checked_concurrency(self.concurrency)
        if self.publish_url is None and not isinstance(self.destination, LocalDestination):
            raise ConfigurationError(
                f"publish_url: none given for {self.destination.url} ; it is not a local "
                "folder: its documents would link its own URLs, which no follower can fetch. "
                "Give the http(s) URL publish_to is served under")

    def checker(self) -> UrlChecker | None:
        """The run's URL checks, if it checks."""
        return UrlChecker(self.url_check, self.base_url, self.publish_url) \
            if self.url_check is not None else None


@dataclass(frozen=True, slots=True)
class Published:
    """What a run published: changes, packages and their bytes, the keys left for the next
    run (gone since the inventory), the checkpoint saved, the changes by kind, and the bytes
    of the objects created and updated (as read; a first run's as the inventory lists them)."""

    changes: int
    packages: int
    package_bytes: int
    left: tuple[str, ...]
    checkpoint: dict[str, Any]
    created: int = 0
    updated: int = 0
    deleted: int = 0
    object_bytes: int = 0

    @property
    def stats(self) -> dict[str, int]:
        """The run's counts, as the task's XCom and Asset event give them (``stats``)."""
        return {"changes": self.changes, "created": self.created, "updated": self.updated,
                "deleted": self.deleted, "left": len(self.left), "bytes": self.object_bytes,
                "packages": self.packages}


@dataclass(frozen=True, slots=True)
class _Saved:
    """The last run's checkpoint: the end of its window, its objects record, what it left,
    what it published as read otherwise than the inventory listed it (key: size, ETag), and
    the publication's URLs (``base_url``, ``publish_url``; None where an earlier version saved
    none)."""

    time: datetime
    objects: str
    left: tuple[str, ...]
    read: dict[str, tuple[int, str]]
    urls: tuple[str, str | None] | None = None

    @classmethod
    def of(cls, checkpoint: dict[str, Any] | None, url: str) -> _Saved | None:
        if checkpoint is None:
            return None
        try:
            left, read = checkpoint["left"], checkpoint.get("read", {})  # older ones have none
            if checkpoint["version"] != _VERSION or not isinstance(left, list):
                raise ValueError(f"version {checkpoint['version']!r}")
            urls = (str(checkpoint["base_url"]), checkpoint["publish_url"]) \
                if "base_url" in checkpoint else None
            return cls(parse_datetime(checkpoint["time"]), str(checkpoint["objects"]),
                       tuple(str(key) for key in left),
                       {str(key): (int(size), str(etag)) for key, (size, etag) in read.items()},
                       urls)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise DocumentError(f"not a publication's checkpoint ({exc}): publish to another "
                                "location, or delete it to publish from scratch",
                                url=url) from exc


def publish(publication: Publication, inventory: Iterable[InventoryObject],
            inventory_time: datetime, bucket: Bucket, *,
            log: Callable[[str], None] = lambda _: None,
            now: datetime | None = None) -> Published:
    """Publish what changed since the last run, as ``inventory`` (in key order: a listing, a
    directory walk, an ordered report) lists the collection at ``inventory_time``.

    A run killed before is carried out first. An inventory not newer than the last run's
    publishes nothing.

    :param now: the machine's clock (None: read it), which ``inventory_time`` and the last
        run's window may not be ahead of by more than :data:`~.guards.MAX_AHEAD`; the run's
        clock runs on from it (a Resource Dump's ``completed``, and when the packages of the
        one it replaced may go).
    :raises InventoryError: the inventory cannot be read or holds what cannot be published,
        or its time is ahead of ``now``.
    :raises PublishError: an object cannot be read or packaged; the run would delete more
        than :attr:`Publication.max_deletions` allows; the last run's window is ahead of
        ``now``; ``base_url`` or ``publish_url`` is not the publication's, or does not serve
        what it should (:attr:`Publication.url_check`).
    :raises DocumentError: what the last run kept cannot be read.
    :raises DestinationError: the destination refused a write.
    """
    now = now or datetime.now(UTC)
    check_not_ahead(inventory_time, now)
    clock = _running_from(now)
    _check_unchanged(publication, log)
    checker = publication.checker()
    try:
        return _published(publication, inventory, inventory_time, bucket, log, clock, checker)
    finally:
        if checker is not None:
            checker.close()


def _published(publication: Publication, inventory: Iterable[InventoryObject],
               inventory_time: datetime, bucket: Bucket, log: Callable[[str], None],
               clock: Callable[[], datetime], checker: UrlChecker | None) -> Published:
    """:func:`publish` by the run's ``clock``, its URLs checked by ``checker`` (None: not
    checked)."""
    destination = publication.destination
    if checker is not None and checker.document(destination, _key(publication, DESCRIPTION)):
        log(f"publish_url serves the publication: {checker.publish_url} serves its Source "
            "Description as stored")
    done = _finish_killed(publication, bucket, log, clock)
    saved = done.saved if done is not None else _load_saved(publication)
    if saved is not None and inventory_time <= saved.time:
        check_not_frozen(saved.time, clock(), destination.url + publication.location)
        log(f"the inventory of {format_datetime(inventory_time)} is not newer than the last "
            f"run's window, up to {format_datetime(saved.time)}: nothing new to publish (a "
            "report published already, or the same time twice); the first inventory after "
            "that publishes")
        if done is not None:
            return done.result
        return Published(0, 0, 0, saved.left, _checkpoint(
            publication, saved.time, saved.objects, list(saved.left), saved.read))
    if checker is not None:
        inventory = checker.sampled(inventory)
        log(f"base_url serves the objects: {checker.objects(bucket):,} of them fetched from "
            f"{checker.resources} and compared with the bucket's bytes")
    stamp = stamp_at(inventory_time)
    objects = _key(publication, f"{_OBJECTS}{stamp}.jsonl.gz")
    deletions = Deletions()
    before = deletions.published(_published_before(publication, saved, log))
    diffed = deletions.changes(changes(before, keeping(destination, objects, inventory),
                                       since=saved.time if saved else None, until=inventory_time))
    resources = base_url(publication.base_url)
    with DatedApart(_planned(change, resources) for change in diffed) as ordered:
        _guarded(publication, deletions, inventory_time, objects)
        plan = Plan(saved.time if saved else None, max(inventory_time, ordered.last or
                                                       inventory_time), inventory_time, objects)
        plan_key = _key(publication, f"{_PLANS}{stamp}.jsonl.gz")
        count = write_plan(destination, plan_key, plan, ordered)
        log(f"{count:,} changes found since "
            f"{format_datetime(saved.time) if saved else 'the start'}; plan kept at {plan_key}")
        # the plan kept is for a run made again: this one reads its changes where they are
        return _carry_out(publication, plan_key, plan, iter(ordered), bucket, log,
                          clock, reads=count - deletions.deleted).result


def _guarded(publication: Publication, deletions: Deletions, inventory_time: datetime,
             objects: str) -> None:
    """:raises PublishError: the run deletes more than ``max_deletions`` allows (the objects
    record the diff kept at ``objects`` is deleted first: the run leaves nothing)."""
    try:
        deletions.check(publication.max_deletions, inventory_time)
    except PublishError:
        publication.destination.delete(objects)
        raise


@dataclass(frozen=True, slots=True)
class _Done:
    saved: _Saved
    result: Published


def _finish_killed(publication: Publication, bucket: Bucket, log: Callable[[str], None],
                   clock: Callable[[], datetime]) -> _Done | None:
    """Carry out the plan a killed run left, if any; delete one carried out already."""
    destination = publication.destination
    done = None
    for plan_key in sorted(destination.keys(_key(publication, _PLANS))):
        saved = _load_saved(publication)
        plan, planned = read_plan(destination, plan_key)
        if saved is not None and plan.end <= saved.time:
            destination.delete(plan_key)  # carried out; killed before this delete
            continue
        log(f"a run was stopped before it finished: carrying out its plan {plan_key} first")
        done = _carry_out(publication, plan_key, plan, planned, bucket, log, clock)
    return done


def _carry_out(publication: Publication, plan_key: str, plan: Plan, planned: Iterator[Planned],
               bucket: Bucket, log: Callable[[str], None], clock: Callable[[], datetime],
               reads: int | None = None) -> _Done:
    """Publish ``plan``'s changes (``planned``, in order); then delete the plan kept at
    ``plan_key`` and the older objects records. ``reads``: the objects the plan reads, where
    known (for progress lines)."""
    destination = publication.destination
    with SourceWriter.load(destination, location=publication.location,
                           public_base_url=publication.publish_url,
                           resources_url=publication.base_url, clock=lambda: plan.end,
                           resource_list_max_age=publication.resource_list_max_age,
                           keep_changes_for=publication.keep_changes_for,
                           documents_max_age=publication.documents_max_age) as writer:
        tally = _Tally()
        if plan.start is None:  # the first run: a Resource List of every object
            for change in planned:
                writer.put(_described(change, bucket), when=change.when)
                tally.count(Change.CREATED, change.size)
        else:
            _packaged(publication, writer, plan.start, plan, planned, bucket, tally, log, reads)
        dumps = _change_dumps(writer)
        if not dumps.index_exists():  # listing no Change Dump yet: a follower finds nothing new
            dumps.write_index([], start=plan.end if plan.start is None  # the snapshot's at
                              else writer.series_start([], dumps))
        capabilities = [Entry(writer.url(writer.key(CHANGE_DUMP_INDEX)),
                              md=Metadata(capability="changedump"))]
        checkpoint = _checkpoint(publication, plan.end, plan.objects, tally.left, tally.read)
        with writer.saving(checkpoint=checkpoint) as saving:
            saving.capabilities.extend(capabilities)
            writer.retire(dumps)
            if publication.resource_dump:
                saving.capabilities.extend(_resource_dump(
                    publication, writer, plan, tally.left, bucket, log, saving.snapshot_at(),
                    clock))
        if not publication.resource_dump and destination.exists(writer.key(RESOURCE_DUMP)):
            remove_resource_dump(writer)  # no longer asked for, nor listed
            log("resource_dump is off: the Resource Dump and its packages are deleted")
    for stale in destination.keys(_key(publication, _OBJECTS)):
        if stale != plan.objects:
            destination.delete(stale)
    destination.delete(plan_key)
    if tally.read:
        log(f"{len(tally.read):,} objects were written again since the inventory: published as "
            f"read (e.g. {next(iter(tally.read))!r})")
    if tally.left:
        log(f"{len(tally.left):,} objects went since the inventory: left for the next run "
            f"(e.g. {tally.left[0]!r})")
    return _Done(_Saved(plan.end, plan.objects, tuple(tally.left), tally.read),
                 Published(tally.changes, tally.packages, tally.bytes, tuple(tally.left),
                           checkpoint, tally.kinds[Change.CREATED], tally.kinds[Change.UPDATED],
                           tally.kinds[Change.DELETED], tally.object_bytes))


@dataclass(slots=True)
class _Tally:
    changes: int = 0
    packages: int = 0
    bytes: int = 0
    left: list[str] = field(default_factory=list)
    read: dict[str, tuple[int, str]] = field(default_factory=dict)
    kinds: Counter[str | None] = field(default_factory=Counter)
    object_bytes: int = 0

    def count(self, change: str | None, length: int) -> None:
        """One change published, of kind ``change`` (a :class:`Change`), its object of
        ``length`` bytes."""
        self.changes += 1
        self.kinds[change] += 1
        self.object_bytes += length


def _packaged(publication: Publication, writer: SourceWriter, since: datetime, plan: Plan,
              planned: Iterable[Planned], bucket: Bucket, tally: _Tally,
              log: Callable[[str], None], reads: int | None) -> None:
    """The plan's changes in packages, recorded by the writer, and the run's Change Dump
    listing the packages in the Change Dump Index, from where the last Change Dump ended (runs
    that found nothing wrote none: see :meth:`.SourceWriter.series_start`), not from ``since``,
    the last run's window. The objects are read ahead (:mod:`.reads`): ``reads`` of them,
    where known."""
    dumps = _change_dumps(writer)
    key = dumps.list_key(plan.end)
    earlier = [entry for entry in dumps.listed()  # not this run's, if it was killed and listed
               if not entry.loc.startswith(writer.url(key.removesuffix(".xml")))]
    start = writer.series_start(earlier, dumps) or since
    listed: list[Entry] = []
    capability_list = writer.url(writer.key(CAPABILITY_LIST))
    with ReadAhead(bucket, publication.concurrency, policy=publication.read_policy, log=log,
                   total=reads) as reading:
        for package in write_packages(
                reading.groups(cut(planned, publication.size, start, plan.end), to_read),
                reading, publication.destination, writer.key(_PACKAGES), writer.url,
                capability_list, publication.algorithms):
            _record(writer, package.changes, package.manifest)
            length = package.entry.md.length or 0 if package.entry.md else 0
            tally.left += [change.key for change in package.left]
            tally.read.update(package.read)
            for entry in package.manifest:
                tally.count(entry.change, entry.md.length or 0 if entry.md else 0)
            tally.packages += 1
            tally.bytes += length
            listed.append(package.entry)
            log(f"package {tally.packages}: {len(package.manifest):,} changes, "
                f"{byte_size(length)}, {package.entry.loc}")
    if listed:
        dumps.write_index([*earlier, *dumps.write(key, start, plan.end, listed)])


def _change_dumps(writer: SourceWriter) -> Journal:
    """The Change Dumps (13.1), in the Change Dump Index; each retired with its packages."""
    return writer.series("changedump", CHANGE_DUMP_INDEX, _CHANGE_DUMPS, dropping_packages(
        writer.destination, writer.key(_PACKAGES)))


def _record(writer: SourceWriter, planned: list[Planned], manifest: list[Entry]) -> None:
    """The packaged changes into the writer, each described as its package describes it."""
    keys = {change.uri: change.key for change in planned}
    for entry in manifest:
        md = entry.md
        assert md is not None and md.datetime is not None
        if entry.change is Change.DELETED:
            writer.remove(entry.loc, when=md.datetime)
        else:
            writer.put(ObjectRecord(entry.loc, keys[entry.loc], md.length or 0,
                                    md.hash or Hashes(()), entry.lastmod, md.type),
                       when=md.datetime)


def _resource_dump(publication: Publication, writer: SourceWriter, plan: Plan, left: list[str],
                   bucket: Bucket, log: Callable[[str], None], at: datetime | None,
                   clock: Callable[[], datetime]) -> list[Entry]:
    """Within the writer's save: the Resource Dump of a Resource List as of this run (``at``)
    not dumped yet, written from the run's objects record, and the packages of those it
    replaced deleted once caches are done with them (:func:`.resourcedump.drop_older_dumps`);
    the Capability List's entry for the dump, if there is one."""
    before = dumped_at(writer)
    if at is not None and before != at:
        resources = base_url(publication.base_url)
        objects = ((item, _uri(resources, item.key))
                   for item in read_published(publication.destination, plan.objects))
        count = write_resource_dump(writer, at, objects, left, bucket, publication.size,
                                    publication.algorithms, log, clock,
                                    concurrency=publication.concurrency,
                                    policy=publication.read_policy)
        log(f"Resource Dump of {count:,} objects as of {format_datetime(at)} written")
    elif before is None:
        log("no Resource Dump yet: one is written with the next Resource List (the first run, "
            "or a compaction)")
        return []
    drop_older_dumps(writer, clock(), publication.documents_max_age, log)
    return [Entry(writer.url(writer.key(RESOURCE_DUMP)), md=Metadata(capability="resourcedump"))]


def _running_from(start: datetime) -> Callable[[], datetime]:
    """A run's clock: ``start`` (the machine's clock when it started, or a caller's), and the
    time it has run since (monotonic: a clock set back meanwhile cannot move it back)."""
    began = time.monotonic()
    return lambda: start + timedelta(seconds=time.monotonic() - began)


def _described(change: Planned, bucket: Bucket) -> ObjectRecord:
    """A first run's object, described by the inventory: its MD5 where the inventory says its
    ETag is one (an object S3 stored in one part, unencrypted or SSE-S3), else no hash; its
    type where the bucket knows it unread (a file's, by its name), else none: an S3 object's
    Content-Type is its own, which a guess from its name may contradict."""
    hashes = Hashes.of(md5=change.md5) if change.md5 else Hashes(())
    return ObjectRecord(change.uri, change.key, change.size, hashes,
                        change.modified or change.when, bucket.type_of(change.key))


def _planned(change: Diffed, resources: str) -> Planned:
    current = change.current
    uri = _uri(resources, change.key)
    if current is None:
        return Planned(change.key, uri, Change.DELETED, change.time)
    return Planned(change.key, uri, Change(change.kind.value), change.time, current.size,
                   current.etag, current.last_modified, current.md5)


def _uri(resources: str, key: str) -> str:
    """The URI of the object at ``key``, served under ``resources``."""
    return normalized(resources + quoted_key(key))


def _published_before(publication: Publication, saved: _Saved | None,
                      log: Callable[[str], None]) -> Iterator[InventoryObject]:
    """The objects as the last run published them: its objects record; rebuilt from the
    publication's own documents where the record is gone (every object still there is then
    published again, as updated: nothing is lost)."""
    destination = publication.destination
    if saved is None:
        return iter(())
    if destination.exists(saved.objects):
        return read_published(destination, saved.objects, saved.left, saved.read)
    log(f"the objects record {saved.objects} is gone: rebuilding it from the publication's "
        "Resource List and Change Lists; every object still there is published again")

    def records() -> Iterator[ObjectRecord]:
        with SourceWriter.load(destination, location=publication.location,
                               public_base_url=publication.publish_url,
                               resources_url=publication.base_url) as writer:
            yield from writer.records()

    return rebuilt(records())


def _load_saved(publication: Publication) -> _Saved | None:
    destination = publication.destination
    return _Saved.of(saved_checkpoint(destination, publication.location),
                     destination.object_url(checkpoint_key(publication.location)))


def _checkpoint(publication: Publication, time: datetime, objects: str, left: list[str],
                read: dict[str, tuple[int, str]]) -> dict[str, Any]:
    base, public = _urls(publication)
    return {"version": _VERSION, "time": format_datetime(time), "objects": objects,
            "left": left, "read": {key: list(state) for key, state in read.items()},
            "base_url": base, "publish_url": public}


def _urls(publication: Publication) -> tuple[str, str | None]:
    """``base_url`` and ``publish_url`` as kept: each ending with ``/``."""
    public = publication.publish_url
    return base_url(publication.base_url), base_url(public) if public is not None else None


def _check_unchanged(publication: Publication, log: Callable[[str], None]) -> None:
    """:raises PublishError: ``base_url`` or ``publish_url`` is not the one the publication
    was made with."""
    saved = _load_saved(publication)
    if saved is None:
        return
    if saved.urls is None:
        log("the publication's checkpoint, from an earlier version, keeps no URLs: this run's "
            "base_url and publish_url are kept, and later runs must give the same")
        return
    where = publication.destination.url + publication.location
    for name, kept, given in zip(("base_url", "publish_url"), saved.urls, _urls(publication),
                                 strict=True):
        check_unchanged(name, kept, given, where)


def _key(publication: Publication, name: str) -> str:
    return publication.location + name.removeprefix(RESERVED_PREFIX)


def preview(publication: Publication, inventory: Iterable[InventoryObject],
            inventory_time: datetime, bucket: Bucket, *,
            log: Callable[[str], None] = lambda _: None,
            now: datetime | None = None) -> Preview:
    """What :func:`publish` would do with these arguments, found without writing anything:
    the diff, the packages it would be cut into (by the inventory's sizes), and the guards
    (a run that :func:`publish` would refuse gives the reason in :attr:`Preview.refused`). A
    killed run's plan, which a run carries out first, is counted in :attr:`Preview.pending`,
    and the diff made from the objects as it publishes them.

    :raises InventoryError: the inventory cannot be read, or holds what cannot be published.
    :raises DocumentError: what the last run kept cannot be read.
    """
    now = now or datetime.now(UTC)
    destination = publication.destination
    saved, pending = _load_saved(publication), None
    for plan_key in sorted(destination.keys(_key(publication, _PLANS))):
        plan, planned = read_plan(destination, plan_key)
        if saved is None or plan.end > saved.time:
            kinds = Counter(change.change.value for change in planned)
            pending = {"plan": plan_key, "changes": sum(kinds.values()), **kinds}
            saved = _Saved(plan.end, plan.objects, (), {})
    found = Preview(saved.time if saved else None, inventory_time, pending=pending)
    checker = publication.checker()
    try:
        found.refused = _refusal(lambda: check_not_ahead(inventory_time, now),
                                 lambda: _check_unchanged(publication, log))
        if saved is not None and inventory_time <= saved.time:
            found.refused = found.refused or _refusal(lambda: check_not_frozen(
                saved.time, now, destination.url + publication.location))
            log(f"the inventory of {format_datetime(inventory_time)} is not newer than the "
                f"last run's window, up to {format_datetime(saved.time)}: nothing to publish")
            return found
        if checker is not None:
            inventory = checker.sampled(inventory)
        deletions = Deletions()
        before = deletions.published(_published_before(publication, saved, log))
        diffed = found.counted(deletions.changes(changes(
            before, inventory, since=saved.time if saved else None, until=inventory_time)))
        resources = base_url(publication.base_url)
        with DatedApart(_planned(change, resources) for change in diffed) as ordered:
            if saved is not None:
                found.packaged(cut(iter(ordered), publication.size, saved.time,
                                   max(inventory_time, ordered.last or inventory_time)))
        found.unchanged = deletions.objects - found.updated - found.deleted
        found.refused = found.refused or _refusal(
            lambda: deletions.check(publication.max_deletions, inventory_time))
        if checker is not None and not found.refused:
            found.refused = _refusal(
                lambda: checker.document(destination, _key(publication, DESCRIPTION)),
                lambda: checker.objects(bucket))
    finally:
        if checker is not None:
            checker.close()
    return found


def _refusal(*guards: Callable[[], object]) -> str | None:
    """What the first of ``guards`` to refuse refuses (the message of the error it raises),
    or None: each is run until one does."""
    try:
        for guard in guards:
            guard()
    except (InventoryError, PublishError) as exc:
        return str(exc)
    return None
