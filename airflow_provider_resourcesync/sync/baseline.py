"""The baseline engine: make the mirror hold what a Resource List (10.1) or a Resource Dump (11.1)
says the Source holds.

Entries are streamed (an index's parts fetched lazily) into a bounded pool of threads; each
resource held unchanged is skipped without a byte transferred, the others are fetched, verified
and committed one by one. A resource that fails is recorded and the others go on; the mirror's
state is saved for everything committed, then :class:`SyncIncompleteError` says what failed. Only
a complete run saves its checkpoint, so the next run starts where this one really stands.

From a Resource List, the resources can be fetched, verified and committed by worker processes
(:mod:`.processes`), so that a run near the Source uses several cores; this process still reads
the list and keeps the mirror's state, which comes out as a run on one process makes it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from itertools import chain, islice
from typing import Any

from ..client.navigate import (
    ResourceListWalk,
    capability_documents,
    changes_after,
    choose_capability,
    resource_dump_packages,
    resource_list,
)
from ..client.sync_client import ResourceSyncClient
from ..cores import CpuSample
from ..errors import ChangeGapError, ConfigurationError, ResourceSyncError, UnsafeContentError
from ..protocol.datetimes import format_datetime
from ..protocol.model import Capability, DocumentKind, Entry
from ..protocol.position import ChangePosition
from ..storage.base import Destination
from ..storage.keys import KeyMapper, normalized
from ..storage.local import LocalDestination
from ..units import byte_size
from ..writer import MirrorState
from .catch_up import TO_CATCH_UP, caught_up
from .checkpoint import Checkpoint
from .combine import combine_shards, shard_location
from .log import Log
from .packages import fetched_package
from .pool import bounded_map
from .processes import (
    AUTO_LISTING,
    Workers,
    check_processes,
    jobs,
    why_one_process,
    worker_count,
)
from .shard import Shard
from .tally import Outcome, Tally, fix_for
from .transfer import Transfer

__all__ = ["METHODS", "combine_shards", "run_baseline"]

_log = logging.getLogger(__name__)

#: ``method`` values: "auto" takes the Resource List if the Capability List has one (9).
METHODS = {"auto": None, "resourcelist": Capability.RESOURCE_LIST,
           "resourcedump": Capability.RESOURCE_DUMP}


def run_baseline(client: ResourceSyncClient, destination: Destination, *,
                 capability_list_url: str, method: str = "auto", mapper: KeyMapper | None = None,
                 remove_missing: bool = False, shard: Shard | None = None, concurrency: int = 16,
                 public_url: str | None = None, processes: int | None = None,
                 log: Log | None = None) -> Checkpoint:
    """Mirror every resource of the Source (or of ``shard``) into ``destination``.

    :param capability_list_url: the Source's Capability List (9).
    :param method: ``"auto"``, ``"resourcelist"`` (10.1) or ``"resourcedump"`` (11.1).
    :param mapper: URI -> key mapping (None: the default one), in the key layout the mirror
        keeps (:meth:`MirrorState.keys`: the one asked for, for a new mirror).
    :param remove_missing: delete what the mirror holds and the Source no longer lists (within
        ``shard``, and on the Source's origins and the hosts its connection allows: another
        Source mirrored into the same destination keeps its resources); never after a listing
        that could not be read whole.
    :param shard: mirror only this part of the resources; the shard's view of its part is saved
        under :func:`~.combine.shard_location` for :func:`combine_shards`, not as the state.
    :param concurrency: the most resources in progress at once (see :class:`~.pool.Throttle`).
    :param public_url: the URL the destination is published under, for a mirror others sync
        from (14.8): its documents name their resources there, and later runs keep it; None:
        the one saved with the mirror, if any (see :class:`MirrorState`).
    :param processes: how many worker processes fetch, verify and commit the resources, each
        with a share of ``concurrency`` (:mod:`.processes`); the mirror and its state are those
        one process makes. 1: this process alone. A number: that many wherever workers can be
        used: a Resource List (not a dump), mirrored whole (no ``shard``), into a local
        directory. None ("auto"): as many as pay: where workers can be used and the list holds
        at least 3,000 entries, one per core left idle while the list was read, this run's
        included (:func:`~.processes.free_cores`; 4 at most); else 1. Never more workers
        than ``concurrency`` and the policy's ``concurrency_per_host`` allow (one request in
        flight each at least).
    :returns: the checkpoint, also saved with the mirror's state (or the shard's view).
    :raises SyncIncompleteError: some resources, packages or listing parts failed; everything
        else was committed and recorded, and re-running converges unless its ``rerun_helps``
        is False (its ``fixes`` say what must change first).
    :raises ResourceSyncError: the Capability List or the list itself cannot be read.
    """
    log = log or _log
    ConfigurationError.unless_one_of("method", method, METHODS)
    check_processes(processes)
    capabilities = capability_documents(client, capability_list_url)
    capability = choose_capability(METHODS[method], (Capability.RESOURCE_LIST,
                                   Capability.RESOURCE_DUMP), capabilities, capability_list_url,
                                   "to baseline from")
    document = capabilities[capability]
    started = time.monotonic()
    log.info("Baseline from %s %s into %s%s", capability.value, document, destination.url,
             f", shard {shard}" if shard else "")
    with MirrorState.load(destination, public_base_url=public_url) as state:
        run = _Run(client, Transfer(destination, state, state.keys(mapper)), shard,
                   concurrency, Tally(log), processes,
                   change_list=capabilities.get(Capability.CHANGE_LIST))
        if capability is Capability.RESOURCE_LIST:
            at = run.from_resource_list(document)
        else:
            at = run.from_resource_dump(document)
        if remove_missing:
            run.remove_unseen()
        if shard is not None and run.later:  # caught up once the shards are combined
            run.tally.stats[TO_CATCH_UP] = sum(map(shard.holds, run.later))
        checkpoint = _checkpoint(capability_list_url, document, destination, at, shard,
                                 run.tally.stats, log)
        kept = checkpoint.to_json() if not run.tally.stats["failed"] else None
        if shard is None:
            state.save(checkpoint=kept or state.checkpoint())
        else:
            _save_view(state, shard, kept)
    stats, elapsed = run.tally.stats, time.monotonic() - started
    log.info("Baseline from %s done in %.1f s: %s listed, %s fetched, %s unchanged, %s removed, "
             "%s failed, %s (%.0f resources/s, %s/s)", document, elapsed, stats["listed"],
             stats["fetched"], stats["unchanged"], stats["removed"], stats["failed"],
             byte_size(stats["bytes"]), stats["listed"] / elapsed if elapsed else 0.0,
             byte_size(stats["bytes"] / elapsed if elapsed else 0.0))
    run.tally.raise_if_failed(f"the baseline from {document}")
    if not run.later or shard is not None:  # a shard's: once the shards are combined
        return checkpoint
    return caught_up(client, destination, checkpoint, mapper=mapper, concurrency=concurrency,
                     log=log)


def _checkpoint(source: str, document: str, destination: Destination, at: datetime | None,
                shard: Shard | None, stats: dict[str, int], log: Log) -> Checkpoint:
    if at is None:
        log.warning("%s has no 'at' (spec 10.1, 11.1): the next incremental run reads every "
                    "change from the start", document)
    position = ChangePosition.at(at) if at is not None else ChangePosition()
    return Checkpoint("baseline", source, document, destination.url, at, position, shard,
                      dict(stats))


def _save_view(state: MirrorState, shard: Shard, checkpoint: dict[str, Any] | None) -> None:
    """Save the shard's complete view of its partition (what it held and kept, and what it
    fetched) where :func:`combine_shards` finds it."""
    with MirrorState(state.destination, location=shard_location(shard),
                     public_base_url=state.public_base_url) as view:
        for record in state.records():
            if shard.holds(record.uri):
                view.put(record)
        view.save(checkpoint=checkpoint)


@dataclass
class _Run:
    """One baseline's work: entries in, outcomes counted."""

    client: ResourceSyncClient
    transfer: Transfer
    shard: Shard | None
    concurrency: int
    tally: Tally
    processes: int | None = None  # see run_baseline
    complete: bool = field(default=True)  # every listed resource was seen
    #: The Change List (or index) to read the changes after the listing's ``at`` from; None:
    #: none offered.
    change_list: str | None = None
    #: The URIs (normal form) changed after the listing's ``at``: left to the catch-up.
    later: set[str] = field(default_factory=set)

    def from_resource_list(self, url: str) -> datetime | None:
        """Every resource of a Resource List or its index (10.1, 10.2); the list's ``at``."""
        since = CpuSample.take()  # "auto" measures the cores left idle while the list is read
        with resource_list(self.client, url) as walk:
            self._changed_after(walk.at)
            self.tally.expect = partial(self._expected, walk)
            # the parts of an index are read while the resources are fetched; a single list
            # was fetched whole when opened
            index = not walk.urls
            entries: Iterable[Entry] = self._mine(self._listed(walk, url))
            # "auto": workers only where they can run (asked first: nothing is held back for a
            # run that cannot have them), for a list long enough
            pays = self.processes is not None or why_one_process(
                self.transfer.destination, self.shard) is None
            if self.processes is None and pays:
                head = list(islice(entries, AUTO_LISTING))
                pays, entries = len(head) == AUTO_LISTING, chain(head, entries)
            count = worker_count(self.processes, destination=self.transfer.destination,
                                 shard=self.shard, concurrency=self.concurrency,
                                 policy=self.client.policy, parent_fetches=index,
                                 since=since, log=self.tally.log) if pays else 1
            taken = self.tally.taking(iter(entries))
            if count > 1:
                self._on_workers(count, taken, index)
            else:
                self._here(taken)
            if self.tally.stopped is not None:
                self.complete = False  # a run stopped early removes nothing
            return walk.at

    def _expected(self, walk: ResourceListWalk) -> tuple[int | None, bool]:
        """How many outcomes the run will count: the listing's entries (a shard's share of
        them, about), less those left to the catch-up."""
        if walk.expected is None:
            return None, False
        if self.shard is None:
            return walk.expected - len(self.later), walk.exact and not self.later
        return walk.expected // self.shard.count, False

    def _here(self, entries: Iterable[Entry]) -> None:
        """The entries fetched, verified and committed by this process."""
        self._count(bounded_map(partial(self.transfer.mirror, self.client), entries,
                                self.concurrency))

    def _on_workers(self, count: int, entries: Iterable[Entry], index: bool) -> None:
        """The entries fetched, verified and committed by ``count`` worker processes; their
        outcomes counted and their records kept here, as :meth:`_count` and the transfer do on
        one process."""
        transfer, log = self.transfer, self.tally.log
        assert isinstance(transfer.destination, LocalDestination)  # worker_count checked
        given = jobs(count, client=self.client, destination=transfer.destination,
                     mapper=transfer.mapper, concurrency=self.concurrency, parent_fetches=index,
                     log=log)
        try:
            workers = Workers(given, log=log)
        except OSError as error:  # no process to be had (a limit, memory): go on alone
            log.warning("One process: cannot start worker processes (%s)", error)
            self._here(entries)
            return
        log.info("Fetching on %s worker processes, %s resources in progress at most", count,
                 " + ".join(str(job.concurrency) for job in given))
        with workers:
            for outcome, record in workers.map(entries, self._incomplete):
                if record is not None:  # kept here by the rule the worker's transfer follows
                    transfer.keep(record, fetched=outcome.kind == "fetched")
                transfer.state.mark_seen(outcome.uri)
                self.tally.count(outcome)

    def from_resource_dump(self, url: str) -> datetime | None:
        """Every bitstream of every package of a Resource Dump or its index (11.1); its ``at``."""
        if self.processes is not None and self.processes > 1:
            self.tally.log.info("One process, not %s: a Resource Dump's packages are unpacked "
                                "here", self.processes)
        head = self.client.read_document(url).head
        self._changed_after(head.md.at if head.md is not None else None)
        for package in self._listed(resource_dump_packages(self.client, url), url):
            self._unpack(package)
        return head.md.at if head.md is not None else None

    def _unpack(self, package: Entry) -> None:
        """One package: downloaded and verified (its ``hash``, ``length``), checked whole by
        :func:`open_package` before anything of it is written, then copied out."""
        with fetched_package(self.client, package, DocumentKind.RESOURCE_DUMP_MANIFEST,
                             "Resource Dump", self._incomplete) as opened:
            if opened is not None:
                entries = (entry for entry, _ in opened.entries())
                work = partial(self.transfer.unpack, opened)
                self._count(bounded_map(work, self._mine(entries), self.concurrency))

    def remove_unseen(self) -> None:
        """Delete what the state holds (in the shard) and the Source did not list, of what it
        could have listed: URIs on its origins (and the hosts its connection allows), not
        another Source's held in the same destination."""
        if not self.complete:
            self.tally.log.warning("Not removing anything: the listing was not read whole")
            return
        allows = self.client.guard.allows
        for uri in self.transfer.state.unseen():
            if (self.shard is None or self.shard.holds(uri)) and allows(uri):
                self.tally.count(self.transfer.remove(uri))

    def _listed(self, entries: Iterable[Entry], url: str) -> Iterator[Entry]:
        """``entries``, ending early (recorded as a failure) where a part cannot be read."""
        try:
            yield from entries
        except ResourceSyncError as error:
            self._incomplete(url, f"listing not read whole: {error}",
                             rerun_helps=error.rerun_helps, fix=fix_for(error))

    def _changed_after(self, at: datetime | None) -> None:
        """Note the URIs the Change Lists change after ``at``, the listing's: the listing
        describes them as they were, their newest change as they are now (10.1: a Destination
        baselines, then applies the changes since the snapshot). None noted where no Change
        List is offered, the listing has no ``at``, or the lists no longer reach back to it (a
        gap: the listing is taken as it is, as before)."""
        if self.change_list is None or at is None:
            return
        try:
            for item in changes_after(self.client, self.change_list, ChangePosition.at(at)):
                with suppress(UnsafeContentError):  # credentials in it: never fetched anyway
                    self.later.add(normalized(item.entry.loc))
        except ChangeGapError as gap:  # raised before any change is read
            self.tally.log.warning("Resources changed after the listing are taken as it "
                                   "describes them: %s", gap)
        if self.later:
            self.tally.log.info("%s resources changed after the listing's at (%s): each is taken "
                                "from its newest change in %s", len(self.later),
                                format_datetime(at), self.change_list)

    def _mine(self, entries: Iterable[Entry]) -> Iterator[Entry]:
        """The entries of the shard, counted as listed; those changed since the listing are
        marked seen and left to the catch-up."""
        for entry in entries:
            if self.shard is None or self.shard.holds(entry.loc):
                self.tally.stats["listed"] += 1
                uri = self._later_uri(entry.loc)
                if uri is None:
                    yield entry
                else:
                    self.transfer.state.mark_seen(uri)

    def _later_uri(self, loc: str) -> str | None:
        """``loc``'s normal form, if it changed after the listing."""
        if not self.later:
            return None
        try:
            uri = normalized(loc)
        except UnsafeContentError:
            return None
        return uri if uri in self.later else None

    def _count(self, outcomes: Iterable[Outcome]) -> None:
        state = self.transfer.state
        for outcome in outcomes:
            state.mark_seen(outcome.uri)
            self.tally.count(outcome)

    def _incomplete(self, what: str, reason: str, *, rerun_helps: bool,
                    fix: str | None) -> None:
        self.complete = False
        self.tally.fail(what, reason, rerun_helps=rerun_helps, fix=fix)
