"""A baseline's resources on worker processes, so one task uses several cores.

Near the Source, the engine is bound by the interpreter's one lock (docs/design.md, "Throughput
near the Source"): one process fetches, verifies and commits at most what one core can. Here the
parent reads the listing and keeps the mirror's state, as a run on one process does; each
worker (:mod:`.worker`, a fresh interpreter, never a fork of a process that may hold threads)
fetches, verifies and commits the resources of one part of the listing (a hash of the URI
decides, so two spellings of one resource meet in one worker) and sends back each outcome with
the record to keep. The parent records them as they come: the mirror's state, its checkpoint and
its documents are those of a run on one process.

Limits hold across the workers: the requests in flight (``concurrency`` and the policy's
``concurrency_per_host``) are split between them, one each at least, and one is left for the
parent where it reads an index's parts meanwhile. A worker dies with its parent: the kernel
kills it when the parent's thread that started it ends (``PR_SET_PDEATHSIG``), it checks that
its parent is still the one that started it (a container reuses process IDs), and it ends at
once when its pipe from the parent closes; a worker that dies fails the run, saying which, once
what the others did is recorded.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from ..client.policy import ClientPolicy
from ..client.sync_client import ResourceSyncClient
from ..cores import CpuSample, usable_cores
from ..errors import ConfigurationError, ResourceSyncError
from ..protocol.closing import ClosedOnExit
from ..protocol.model import Entry
from ..storage.base import Destination
from ..storage.keys import KeyMapper, normalized
from ..storage.local import LocalDestination
from ..writer import ObjectRecord
from .log import Log
from .plain import (
    Plain,
    entry_plain,
    outcome_from_plain,
    outcome_plain,
    record_from_plain,
    record_plain,
)
from .shard import Shard, part_of
from .tally import Outcome

__all__ = ["AUTO_LISTING", "MAX_AUTO", "Job", "Workers", "check_processes", "free_cores",
           "outcome_message", "shares", "why_one_process", "worker_count"]

#: The most workers "auto" starts, however many cores there are.
MAX_AUTO = 4
#: "auto" starts workers only for a listing of at least this many entries: starting them
#: costs about a second of the machine's time, which a shorter listing does not win back.
AUTO_LISTING = 3_000
#: Entries sent to a worker at once, once it has enough to do.
BATCH = 64
#: Seconds a worker is given to end once told to, before it is killed.
END_WAIT = 30.0

#: What the parent is told about a failure: what failed, why, whether a re-run can help.
Failed = Callable[..., None]


def check_processes(processes: int | None) -> None:
    """:raises ConfigurationError: ``processes`` is neither None ("auto") nor at least 1."""
    if processes is not None and (isinstance(processes, bool) or not isinstance(processes, int)
                                  or processes < 1):
        raise ConfigurationError(f"processes {processes!r} must be a whole number of at least "
                                 "1, or None (as many as pay)")


def why_one_process(destination: Destination, shard: Shard | None) -> str | None:
    """Why a run cannot have workers (None: it can): each opens the local directory itself,
    a shard stays whole, and each is an interpreter to start."""
    return ("the destination is not a local directory" if type(destination) is not LocalDestination
            else "this run is a shard of a sharded baseline" if shard is not None
            else "no Python interpreter to start is known" if not sys.executable
            else None)


def worker_count(processes: int | None, *, destination: Destination, shard: Shard | None,
                 concurrency: int, policy: ClientPolicy, parent_fetches: bool,
                 since: CpuSample, log: Log) -> int:
    """How many workers a baseline from a Resource List may use (1: none, the run stays in this
    process), before the size of the listing is known.

    Workers need a local destination (each opens the directory itself), a run that is not a
    shard of a sharded baseline, and an interpreter to start. ``processes`` None ("auto")
    takes one per core free since ``since`` (:func:`free_cores`), :data:`MAX_AUTO` at most; a
    number is taken as given. Either way there are no more workers than requests may be in flight
    (``concurrency``, ``concurrency_per_host``, less one for the parent if it reads the
    listing's parts meanwhile): each needs one.
    """
    if processes == 1:
        return 1
    why_not = why_one_process(destination, shard)
    if why_not is not None:
        if processes is not None:
            log.info("One process, not %s: %s", processes, why_not)
        return 1
    wanted = processes or min(free_cores(log, since), MAX_AUTO)
    return max(1, min(wanted, concurrency - parent_fetches,
                      policy.concurrency_per_host - parent_fetches))


def free_cores(log: Log, since: CpuSample) -> int:
    """The cores this run may keep busy: those it may use (:func:`~..cores.usable_cores`) that
    nothing but this run has used since ``since`` (rounded, at least the one it is on).
    Workers pay only on a core nobody else needs: where the cores are busy, their extra work
    (a fifth more CPU a resource in all) only slows everything down. Idle time measured now,
    not the load average, which lags by a minute and would count a job that ended just
    before."""
    cores = usable_cores()
    spare = since.spare_cores()
    if spare is None:  # no /proc/stat: take the cores as free
        return max(1, int(cores))
    free = max(1, min(int(cores), round(spare)))
    if free < 2 <= cores:
        log.info("One process: the machine is busy (%.1f of %.0f cores spare)", spare, cores)
    return free


def shares(total: int, count: int) -> list[int]:
    """``total`` split into ``count`` whole shares as even as can be, each at least 1."""
    return [max(1, total // count + (index < total % count)) for index in range(count)]


@dataclass(frozen=True, slots=True)
class Job:
    """What a worker is given: everything it needs to fetch and commit, as plain values.

    :param policy: the client's policy, with the worker's share of ``concurrency_per_host``.
    :param origins: URLs of every origin the parent's client may fetch from.
    :param root: the local destination's directory.
    :param mapper: URI -> key mapping.
    :param concurrency: the most resources the worker has in progress at once.
    :param label: the worker's name in log lines and errors (its part of the listing).
    :param levels: the levels set on this process's loggers, by name ("": the root's): the
        worker sets them on its own, so it makes only the records this process would log.
    """

    policy: ClientPolicy
    origins: tuple[str, ...]
    root: str
    mapper: KeyMapper
    concurrency: int
    label: str
    levels: dict[str, int]


def jobs(count: int, *, client: ResourceSyncClient, destination: LocalDestination,
         mapper: KeyMapper, concurrency: int, parent_fetches: bool,
         log: Log) -> list[Job]:
    """One job per worker, the limits on requests in flight split between them."""
    policy = client.policy
    origins = tuple(_origin_url(*where) for where in sorted(client.guard.origins))
    levels = {name: logger.level for name, logger in logging.root.manager.loggerDict.items()
              if isinstance(logger, logging.Logger) and logger.level}
    levels[""] = min(logging.root.level, log.getEffectiveLevel())
    per_host = shares(policy.concurrency_per_host - parent_fetches, count)
    in_flight = shares(concurrency - parent_fetches, count)
    return [Job(_with_limit(policy, per_host[index]), origins, str(destination.root), mapper,
                in_flight[index], f"worker process for shard {Shard(index, count)}", levels)
            for index in range(count)]


def _with_limit(policy: ClientPolicy, per_host: int) -> ClientPolicy:
    fields = {name: getattr(policy, name) for name in ClientPolicy.__dataclass_fields__}
    return ClientPolicy(**(fields | {"concurrency_per_host": per_host}))


def _origin_url(scheme: str, host: str, port: int) -> str:
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}/"


@dataclass(eq=False)
class _Worker:
    """One worker as the parent sees it: its process, its pipes and its accounts."""

    job: Job
    process: subprocess.Popen[bytes]
    down: Connection  # entries to the worker
    up: Connection  # outcomes, log records and its end from the worker
    buffer: list[Plain] = field(default_factory=list)  # entries not sent yet
    sent: int = 0
    reported: int = 0
    running: bool = True  # its pipe up is open
    finished: bool = False  # it said it is done

    @property
    def name(self) -> str:
        return f"{self.job.label} (pid {self.process.pid})"

    @property
    def in_progress(self) -> int:
        return self.sent - self.reported


class Workers(ClosedOnExit):
    """Workers started from ``jobs``; :meth:`map` runs entries through them, ``close`` ends
    them (killed where they do not end in :data:`END_WAIT` seconds)."""

    def __init__(self, jobs: Sequence[Job], *, log: Log) -> None:
        self._log = log
        self._workers: list[_Worker] = []
        try:
            for job in jobs:
                self._workers.append(_start(job))
        except BaseException:
            self.close()
            raise
        self._broken = False  # a worker died: nothing more is sent to any

    def map(self, entries: Iterable[Entry], failed: Failed
            ) -> Iterator[tuple[Outcome, ObjectRecord | None]]:
        """Each entry's outcome and the record to keep (None: nothing to record), as they come.
        A worker that dies or fails is told to ``failed``; then no more entries are sent, the
        others finish theirs, and the rest of ``entries`` is left unread."""
        count = len(self._workers)
        for entry in entries:
            worker = self._workers[part_of(_routed(entry.loc), count)]
            worker.buffer.append(entry_plain(entry))
            if len(worker.buffer) >= BATCH or worker.in_progress < 2 * worker.job.concurrency:
                yield from self._send(worker, failed)
            if self._broken:
                break
        for worker in self._workers:
            if worker.buffer and not self._broken:
                yield from self._send(worker, failed)
            _tell(worker, None)  # the end of its entries
        while any(worker.running for worker in self._workers):
            yield from self._receive(failed)

    def _send(self, worker: _Worker, failed: Failed
              ) -> Iterator[tuple[Outcome, ObjectRecord | None]]:
        """``worker``'s buffer, once it has room: at most a few batches in progress."""
        room = max(4 * worker.job.concurrency, 2 * BATCH)
        while worker.running and worker.in_progress + len(worker.buffer) > room:
            yield from self._receive(failed)
        if worker.running and _tell(worker, worker.buffer):
            worker.sent += len(worker.buffer)
        worker.buffer = []

    def _receive(self, failed: Failed) -> Iterator[tuple[Outcome, ObjectRecord | None]]:
        """What the workers sent, waiting for at least one message."""
        running = {worker.up: worker for worker in self._workers if worker.running}
        for ready in wait(list(running)):
            # ``wait`` gives back connections it was given; typeshed types them any waitable
            worker = running[ready]  # type: ignore[index]
            try:
                messages = worker.up.recv()
            except (EOFError, OSError):
                self._ended(worker, failed)
                continue
            for kind, *values in messages:
                if kind == "outcome":
                    worker.reported += 1
                    outcome, record = values
                    yield outcome_from_plain(outcome), record and record_from_plain(record)
                elif kind == "log":  # where this process would log it
                    name, level, text = values
                    if logging.getLogger(name).isEnabledFor(level):
                        self._log.log(level, "%s: %s", worker.job.label, text)
                elif kind == "done":
                    worker.finished = True
                else:  # "failed": an error the worker could not turn into outcomes
                    worker.finished = self._broken = True
                    failed(worker.name, f"{values[0]}; everything it reported is recorded: "
                           "re-run the task to mirror the rest", rerun_helps=True, fix=None)

    def _ended(self, worker: _Worker, failed: Failed) -> None:
        worker.running = False
        if worker.finished:
            return
        self._broken = True
        try:
            status = worker.process.wait(timeout=END_WAIT)
        except subprocess.TimeoutExpired:
            status = None
        how = (f"killed by signal {-status}" if status is not None and status < 0
               else f"exit status {status}" if status is not None else "its pipe closed")
        failed(worker.name, f"the process ended ({how}) before reporting {worker.in_progress} "
               "of the resources sent to it; everything it reported is recorded: re-run the "
               "task to mirror the rest", rerun_helps=True, fix=None)

    def close(self) -> None:
        """End every worker: its pipe closed, it ends at once (or once done); killed if it has
        not in :data:`END_WAIT` seconds."""
        for worker in self._workers:
            worker.down.close()
        for worker in self._workers:
            try:
                worker.process.wait(timeout=END_WAIT)
            except subprocess.TimeoutExpired:
                self._log.warning("%s did not end in %.0f s: killed", worker.name, END_WAIT)
                worker.process.kill()
                worker.process.wait()
            worker.up.close()


def _start(job: Job) -> _Worker:
    """Start a worker on a fresh interpreter, its job sent first."""
    down_read, down_write = os.pipe()
    up_read, up_write = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-P", "-m", f"{__package__}.worker", str(down_read), str(up_write),
             str(os.getpid())], pass_fds=(down_read, up_write), stdin=subprocess.DEVNULL,
            env=os.environ | {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    except BaseException:
        for descriptor in (down_write, up_read):
            os.close(descriptor)
        raise
    finally:
        os.close(down_read)
        os.close(up_write)
    worker = _Worker(job, process, Connection(down_write, readable=False),
                     Connection(up_read, writable=False))
    _tell(worker, job)
    return worker


def outcome_message(outcome: Outcome, record: ObjectRecord | None) -> tuple[Any, ...]:
    """What a worker sends up for one entry (plain values: they cost least to pickle)."""
    return ("outcome", outcome_plain(outcome), record and record_plain(record))


def _tell(worker: _Worker, message: object) -> bool:
    """Send ``message`` to ``worker``; False where it is gone (its end is found by reading)."""
    try:
        worker.down.send(message)
    except OSError:
        return False
    return True


def _routed(uri: str) -> str:
    """The URI as a worker knows its resource (its normal form), so two spellings of one
    resource go to one worker; a URI that has none goes as it is, to fail there."""
    try:
        return normalized(uri)
    except ResourceSyncError:
        return uri
