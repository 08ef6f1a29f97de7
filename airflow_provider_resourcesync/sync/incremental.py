"""The incremental engine: bring the mirror from its checkpoint to the Source's latest changes,
read from a Change List (12.1, 12.2) or a Change Dump (13.1).

Changes after the checkpoint's position are read in forward chronological order across the
index, coalesced by URI (the last change wins), and applied on a bounded pool: created and
updated resources fetched (or copied out of a package) and verified, deleted ones deleted, kept
or moved aside as the user chose. The new checkpoint stands after the last change read, or just
before the earliest change that failed: it never passes a change that was not committed, and a
re-run from any checkpoint only repeats what is harmless to repeat (DESIGN.md, "Data flow").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from typing import TypeVar

from ..client.navigate import (
    ChangeItem,
    capability_documents,
    change_dump_packages_after,
    changes_after,
    choose_capability,
)
from ..client.sync_client import ResourceSyncClient
from ..errors import ChangeGapError, ConfigurationError, ResourceSyncError
from ..protocol.gap import check_no_package_gap
from ..protocol.model import Capability, Change, DocumentKind, Entry
from ..protocol.package import DumpPackage
from ..protocol.position import ChangeListRef, ChangePosition, Reading
from ..protocol.position import changes_after as changes_in_list
from ..storage.base import Destination
from ..storage.keys import RESERVED_PREFIX, KeyMapper
from ..units import counted
from ..writer import RESOURCE_LIST_MAX_AGE, MirrorState
from .baseline import run_baseline
from .checkpoint import Checkpoint
from .coalesce import Coalesced, Winner, coalesce
from .log import Log
from .packages import fetched_package
from .pool import bounded_map
from .tally import Outcome, Tally, fix_for
from .transfer import Transfer

__all__ = ["DELETES", "METHODS", "ON_GAP", "run_incremental"]

_log = logging.getLogger(__name__)

#: ``method`` values: "auto" takes the Change List if the Capability List has one (9).
METHODS = {"auto": None, "changelist": Capability.CHANGE_LIST,
           "changedump": Capability.CHANGE_DUMP}
#: ``deletes`` values: what a ``deleted`` change does to the mirror's copy.
DELETES = ("delete", "keep", "move")
#: ``on_gap`` values: what a checkpoint older than the changes still offered does (see
#: :mod:`~..protocol.gap`): ``"fail"`` with :class:`ChangeGapError`, or run a ``"baseline"``.
ON_GAP = ("fail", "baseline")

#: What :meth:`_Run._read` reads: changes, or Change Dump packages.
T = TypeVar("T", ChangeItem, Entry)


def run_incremental(client: ResourceSyncClient, destination: Destination, *,
                    capability_list_url: str, checkpoint: Checkpoint, method: str = "auto",
                    deletes: str = "delete", move_to: str = "deleted/",
                    mapper: KeyMapper | None = None, concurrency: int = 16,
                    public_url: str | None = None, on_gap: str = "fail",
                    resource_list_max_age: timedelta | None = RESOURCE_LIST_MAX_AGE,
                    log: Log | None = None) -> Checkpoint:
    """Apply the Source's changes after ``checkpoint`` to ``destination``.

    :param capability_list_url: the Source's Capability List (9).
    :param checkpoint: where the mirror stands (a baseline's or the last incremental run's).
    :param method: ``"auto"``, ``"changelist"`` (12.1) or ``"changedump"`` (13.1).
    :param deletes: ``"delete"`` the mirror's copy, ``"keep"`` it, or ``"move"`` it aside.
    :param move_to: the key prefix deleted resources move under, for ``deletes="move"``.
    :param mapper: URI -> key mapping (None: the default one), in the key layout the mirror
        keeps (:meth:`MirrorState.keys`: the one asked for, for a new mirror).
    :param concurrency: the most resources in progress at once (see :class:`~.pool.Throttle`).
    :param public_url: the URL the destination is published under (see :func:`run_baseline`);
        None: the one saved with the mirror, if any.
    :param on_gap: where the Source no longer offers every change after the checkpoint (its
        older Change Lists rotated away): ``"fail"``, or ``"baseline"``: run
        :func:`~.baseline.run_baseline` into the destination instead (removing what the Source
        no longer lists, unless ``deletes`` is ``"keep"`` or ``"move"``) and return its
        checkpoint.
    :param resource_list_max_age: the mirror's own Resource List (14.8) is rewritten once the
        oldest run whose changes it lacks is this old (a day by default), for its Destinations
        that read no Change List; None: only once those changes pass a tenth of it (see
        :class:`~..writer.source_writer.SourceWriter`).
    :returns: the new checkpoint, also saved with the mirror's state.
    :raises SyncIncompleteError: some changes failed; the checkpoint saved stands before the
        earliest of them, and re-running converges unless its ``rerun_helps`` is False (its
        ``fixes`` say what must change first).
    :raises ChangeGapError: with ``on_gap="fail"``, the changes after the checkpoint are not
        all offered any more; nothing was applied.
    :raises ConfigurationError: an argument is wrong, or the checkpoint is not this mirror's.
    :raises ResourceSyncError: the Capability List cannot be read.
    """
    log = log or _log
    _check(method, deletes, move_to, checkpoint, destination)
    ConfigurationError.unless_one_of("on_gap", on_gap, ON_GAP)
    try:
        return _changes_since(client, destination, capability_list_url, checkpoint, method,
                              deletes, move_to, mapper, concurrency, public_url,
                              resource_list_max_age, log)
    except ChangeGapError as gap:
        if on_gap == "fail":
            raise
        log.warning("%s. on_gap='baseline': running a baseline into %s instead", gap,
                    destination.url)
    return run_baseline(client, destination, capability_list_url=capability_list_url,
                        mapper=mapper, remove_missing=deletes == "delete",
                        concurrency=concurrency, public_url=public_url, log=log)


def _changes_since(client: ResourceSyncClient, destination: Destination,
                   capability_list_url: str, checkpoint: Checkpoint, method: str, deletes: str,
                   move_to: str, mapper: KeyMapper | None, concurrency: int,
                   public_url: str | None, resource_list_max_age: timedelta | None,
                   log: Log) -> Checkpoint:
    """:func:`run_incremental`'s work, once its arguments are checked."""
    capabilities = capability_documents(client, capability_list_url)
    capability = choose_capability(METHODS[method], (Capability.CHANGE_LIST,
                                   Capability.CHANGE_DUMP), capabilities, capability_list_url,
                                   "to read changes from")
    document = capabilities[capability]
    if checkpoint.source != capability_list_url:
        log.warning("The checkpoint is of the Capability List %s ; reading %s", checkpoint.source,
                    capability_list_url)
    started = time.monotonic()
    log.info("Changes after %s from %s %s into %s", _where(checkpoint.position),
             capability.value, document, destination.url)
    with MirrorState.load(destination, public_base_url=public_url,
                          resource_list_max_age=resource_list_max_age) as state:
        run = _Run(client, Transfer(destination, state, state.keys(mapper)), deletes,
                   move_to, concurrency, Tally(log, stats=dict.fromkeys(_STATS, 0)))
        if capability is Capability.CHANGE_LIST:
            standing = run.from_change_list(document, checkpoint.position)
        else:
            standing = run.from_change_dump(document, checkpoint.position)
        standing = run.at_ends(standing)
        stats = run.tally.stats
        new = Checkpoint("incremental", capability_list_url, document, destination.url,
                         standing.time, standing, None, dict(stats))
        state.save(checkpoint=new.to_json())
    log.info("Changes from %s applied in %.1f s, now at %s: %s", document,
             time.monotonic() - started, _where(standing),
             counted(stats))
    run.tally.raise_if_failed(f"the incremental sync from {document}")
    return new


_STATS = ("changes", "resources", "fetched", "unchanged", "removed", "kept", "failed", "bytes")


def _check(method: str, deletes: str, move_to: str, checkpoint: Checkpoint,
           destination: Destination) -> None:
    ConfigurationError.unless_one_of("method", method, METHODS)
    ConfigurationError.unless_one_of("deletes", deletes, DELETES)
    if deletes == "move" and (not move_to.endswith("/") or move_to.startswith(
            ("/", RESERVED_PREFIX))):
        raise ConfigurationError(f"move_to {move_to!r} must be a key prefix ending with '/', "
                                 f"not starting with '/' or {RESERVED_PREFIX!r}")
    if checkpoint.shard is not None:
        raise ConfigurationError(f"the checkpoint is of shard {checkpoint.shard} only: combine "
                                 "the shards (ResourceSyncCombineShardsOperator) and start "
                                 "from the combined checkpoint")
    if checkpoint.destination != destination.url:
        raise ConfigurationError(f"the checkpoint is of the mirror at {checkpoint.destination}, "
                                 f"not {destination.url}")


def _where(position: ChangePosition) -> str:
    if position.time is None and position.list_url is None:
        return "the first change"
    where = position.time.isoformat() if position.time else "an untimed change"
    if position.list_url is not None:
        where += f" ({position.consumed} entries into {position.list_url} )"
    return where


@dataclass
class _Run:
    """One incremental run's work: changes in, outcomes counted (the mirror's state records
    what changed, for the mirror's own Change List)."""

    client: ResourceSyncClient
    transfer: Transfer
    deletes: str  # one of DELETES
    move_to: str
    concurrency: int
    tally: Tally
    ends: list[tuple[ChangeListRef, int]] = field(default_factory=list)  # lists read whole

    def from_change_list(self, url: str, position: ChangePosition) -> ChangePosition:
        """Every change after ``position`` in a Change List or across its index (12.1, 12.2)."""
        items = self._read(changes_after(self.client, url, position, self._ended), url)
        with coalesce(items, position) as coalesced:
            return self._apply(coalesced, partial(self.transfer.mirror, self.client))

    def _ended(self, ref: ChangeListRef, length: int) -> None:
        self.ends.append((ref, length))

    def at_ends(self, position: ChangePosition) -> ChangePosition:
        """``position``, marked at the end of its list if that list was read to its end (so
        that its rotation out of the index is not taken for a gap, :mod:`~..protocol.gap`)."""
        for ref, length in self.ends:
            position = position.ended(ref, length)
        return position

    def from_change_dump(self, url: str, position: ChangePosition) -> ChangePosition:
        """Every change after ``position`` in the packages of a Change Dump or its index (13.1),
        package by package: each package is verified whole before anything of it is written,
        and the position moves past it once its changes are committed."""
        when, first = position.time, True
        for package in self._read(change_dump_packages_after(self.client, url, when), url):
            if first:  # packages retired after the position: a gap (protocol/gap.py)
                check_no_package_gap(url, ChangeListRef(package.loc, *_window(package)),
                                     position)
                first = False
            with fetched_package(self.client, package, DocumentKind.CHANGE_DUMP_MANIFEST,
                                 "Change Dump", self.tally.fail) as opened:
                if opened is None:
                    return position
                with coalesce(_package_changes(package, opened, position),
                              position) as coalesced:
                    reached = self._apply(coalesced, partial(self.transfer.unpack, opened))
            if self.tally.stats["failed"]:
                return reached
            # a package does not change: read whole, its end is known (its until, 13.1), so a
            # watch of the Change List from here sees no gap (protocol/gap.py)
            until = package.md.until if package.md is not None else None
            position = reached.ended(ChangeListRef(package.loc, until=until),
                                     len(opened.manifest.entries))
        return position

    def _read(self, items: Iterable[T], url: str) -> Iterator[T]:
        """``items``, ending early (recorded as a failure) where a document cannot be read: the
        changes read before are applied, and the checkpoint stops after them."""
        try:
            yield from items
        except ChangeGapError:
            raise  # not a failure to count: the run fails, or a baseline runs (on_gap)
        except ResourceSyncError as error:
            self.tally.fail(url, f"changes not read whole: {error}",
                            rerun_helps=error.rerun_helps, fix=fix_for(error))

    def _apply(self, coalesced: Coalesced, write: Callable[[Entry], Outcome]) -> ChangePosition:
        """Apply each winner; where the mirror then stands. Of the failures only the earliest
        matters to the checkpoint, so only it is kept."""
        self.tally.stats["changes"] += coalesced.read
        self.tally.stats["resources"] += len(coalesced.winners)
        self.tally.total = self.tally.done + len(coalesced.winners)  # for the progress lines
        earliest: Winner | None = None
        winners = iter(coalesced.winners)
        for winner, outcome in bounded_map(partial(self._one, write),
                                           self.tally.taking(winners), self.concurrency):
            self.tally.count(outcome)
            if outcome.kind == "failed" and (earliest is None or winner.order < earliest.order):
                earliest = winner
        # a run stopped (a host down) stands before the changes it did not take, as if failed
        for winner in winners:
            if earliest is None or winner.order < earliest.order:
                earliest = winner
        return coalesced.standing(() if earliest is None else (earliest,))

    def _one(self, write: Callable[[Entry], Outcome], winner: Winner) -> tuple[Winner, Outcome]:
        entry = winner.entry
        if winner.change is not Change.DELETED:
            # the change time is the resource's last modification (12.1)
            return winner, write(replace(entry, lastmod=entry.lastmod or entry.change_time))
        if self.deletes == "keep":
            return winner, Outcome(entry.loc, "kept")
        move_to = self.move_to if self.deletes == "move" else None
        doubtful = entry.change_time if winner.item.doubtful else None
        return winner, self.transfer.remove(entry.loc, move_to=move_to,
                                            unless_newer_than=doubtful)


def _window(package: Entry) -> tuple[datetime | None, datetime | None]:
    """A Change Dump package's ``from`` and ``until`` (13.1)."""
    md = package.md
    return (md.from_, md.until) if md is not None else (None, None)


def _package_changes(package: Entry, opened: DumpPackage, position: ChangePosition
                     ) -> Iterator[ChangeItem]:
    """The changes of one Change Dump package after ``position``. A package is named by its URL
    alone (no ``from``), so a position in it never mistakes a Change List for it."""
    ref = ChangeListRef(package.loc)
    entries = (entry for entry, _ in opened.entries())
    own = position.is_same_list(ref)  # else by time: it ends after the position (13.1)
    for index, entry in changes_in_list(ref, entries, position, Reading(own, not own)):
        yield ChangeItem(ref, index, entry)
