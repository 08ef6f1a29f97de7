"""A worker process of a baseline (:mod:`.processes`): entries in, outcomes and records out.

Run as ``python -m airflow_provider_resourcesync.sync.worker <entries fd> <outcomes fd> <parent
pid>``. Its job comes first down the entries pipe; then batches of entries (as
:func:`~.plain.entry_plain` gives them), and None at their end. Up the outcomes pipe go lists
of messages: one per entry (:func:`~.processes.outcome_message`), ``("log", logger name,
level, text)``, and at the end ``("done",)`` or ``("failed", reason)``. The worker keeps no
state of the mirror: the record :class:`~.transfer.Transfer` would keep goes to the parent,
which keeps the state.

It never outlives its parent: the kernel kills it when the parent's thread that started it ends
(``PR_SET_PDEATHSIG``), it ends at once if its parent is not the one that started it (it died
before: a container reuses process IDs), and it ends at once when the entries pipe closes before
its work is done.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from multiprocessing.connection import Connection
from queue import Empty, SimpleQueue
from typing import Any

from ..client.sync_client import ResourceSyncClient
from ..protocol.model import Entry
from ..storage.local import LocalDestination
from ..writer import ObjectRecord
from .plain import Plain, entry_from_plain
from .pool import bounded_map
from .processes import Job, outcome_message
from .tally import Outcome
from .transfer import Transfer

__all__ = ["main"]

_log = logging.getLogger(__name__)

#: ``prctl`` option: the signal sent when the parent (the thread that forked) ends.
_PR_SET_PDEATHSIG = 1
#: Messages sent up at once, at most.
_SENT_AT_ONCE = 256
#: Seconds the sender waits after a message for more to send with it: a message per resource
#: would wake both processes a thousand times a second near the Source.
_GATHER = 0.01
#: The exit status of a worker whose parent went away before its work was done.
_ORPHANED = 3


def main(argv: Sequence[str] | None = None) -> int:
    """Run one worker (argv as the module's docstring says); its exit status."""
    entries_fd, outcomes_fd, parent = (int(value) for value in (argv or sys.argv)[1:4])
    _die_with(parent)
    incoming = Connection(entries_fd, writable=False)
    outgoing = Connection(outcomes_fd, readable=False)
    try:
        job: Job = incoming.recv()
    except (EOFError, OSError):  # the parent went away before the job came
        return _ORPHANED
    outbox: SimpleQueue[tuple[Any, ...] | None] = SimpleQueue()
    sender = threading.Thread(target=_send_all, args=(outbox, outgoing), name="sender",
                              daemon=True)
    sender.start()
    _forward_logs(outbox, job.levels)
    inbox: SimpleQueue[list[Plain] | None] = SimpleQueue()
    finished = threading.Event()
    threading.Thread(target=_read_all, args=(incoming, inbox, finished), name="reader",
                     daemon=True).start()
    try:
        _mirror(job, _entries(inbox), outbox)
        outbox.put(("done",))
    except BaseException as error:  # told to the parent, which fails the run
        _log.exception("%s failed", job.label)
        outbox.put(("failed", f"it failed: {error!r}"))
    finished.set()
    outbox.put(None)
    sender.join()
    return 0


def _mirror(job: Job, entries: Iterator[Entry], outbox: SimpleQueue[Any]) -> None:
    """Fetch, verify and commit each entry, as a run on one process does."""
    reporter = _Reporter()
    with ResourceSyncClient(job.policy, source_urls=job.origins) as client:
        # the reporter stands in for the state (get and put): a worker's transfer only mirrors
        transfer = Transfer(LocalDestination(job.root), reporter, job.mapper)  # type: ignore[arg-type]

        def work(entry: Entry) -> tuple[Outcome, ObjectRecord | None]:
            outcome = transfer.mirror(client, entry)
            return outcome, reporter.take()

        for outcome, record in bounded_map(work, entries, job.concurrency):
            outbox.put(outcome_message(outcome, record))


class _Reporter:
    """Stands in for the mirror's state in a worker: it holds nothing (so every record is
    handed on) and keeps the record each thread's transfer put, for its outcome."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self, uri: str) -> ObjectRecord | None:
        return None

    def put(self, record: ObjectRecord, **_: object) -> None:
        self._local.record = record

    def take(self) -> ObjectRecord | None:
        record, self._local.record = getattr(self._local, "record", None), None
        return record


def _entries(inbox: SimpleQueue[list[Plain] | None]) -> Iterator[Entry]:
    while (batch := inbox.get()) is not None:
        yield from map(entry_from_plain, batch)


def _read_all(incoming: Connection, inbox: SimpleQueue[list[Plain] | None],
              finished: threading.Event) -> None:
    """Batches of entries into ``inbox``, then None; the worker ends at once if the pipe
    closes before its work is done (the parent died, or gave up on the run)."""
    while True:
        try:
            batch = incoming.recv()
        except (EOFError, OSError):
            if not finished.is_set():
                os._exit(_ORPHANED)
            return
        inbox.put(batch)


def _send_all(outbox: SimpleQueue[tuple[Any, ...] | None], outgoing: Connection) -> None:
    """Messages up the pipe, as many at once as are waiting; None ends."""
    while True:
        batch = [outbox.get()]
        if batch[-1] is not None:
            time.sleep(_GATHER)
        while len(batch) < _SENT_AT_ONCE and batch[-1] is not None:
            try:
                batch.append(outbox.get_nowait())
            except Empty:
                break
        end = batch[-1] is None
        try:
            outgoing.send(batch[:-1] if end else batch)
        except OSError:  # the parent is gone
            os._exit(_ORPHANED)
        if end:
            return


class _Forward(logging.Handler):
    """Log records up the pipe, as text: the parent logs them, naming the worker."""

    def __init__(self, outbox: SimpleQueue[tuple[Any, ...] | None]) -> None:
        super().__init__()
        self._outbox = outbox

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
            self._outbox.put(("log", record.name, record.levelno, text))
        except Exception:  # logging never fails the work
            self.handleError(record)


def _forward_logs(outbox: SimpleQueue[tuple[Any, ...] | None], levels: dict[str, int]) -> None:
    """Every record up the pipe, the parent's levels set (see :class:`~.processes.Job`)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(_Forward(outbox))
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def _die_with(parent: int) -> None:
    """Be killed when the parent ends; end now if it already has."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (AttributeError, OSError):  # not Linux: the pipe's end still ends the worker
        pass
    if os.getppid() != parent:
        os._exit(_ORPHANED)


if __name__ == "__main__":
    sys.exit(main())
