"""What a run did: counts for its checkpoint and logs, the first failures to show, and whether
running it again can fix them (or what must change first)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlsplit

from ..client.retry import RETRY_STATUSES
from ..errors import FetchError, ResourceSyncError, SyncIncompleteError
from ..units import PROGRESS_EVERY, Pacer, counted, pace
from .log import Log
from .next_step import next_step

__all__ = ["STOP_AFTER", "Outcome", "Tally", "fix_for"]

T = TypeVar("T")

#: Failures kept to show, and logged one by one (all are counted).
SHOWN = 10
#: Resources of one host failing in a row, each after its retries, with no answer or one asking
#: to come back later (429, 5xx), after which a run starts no more: the host is down.
STOP_AFTER = 20


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one resource: ``"fetched"``, ``"unchanged"`` or ``"failed"`` (with
    ``reason``, whether a re-run can fix it, and if not, ``fix``; ``down``: the host, where it
    gave no answer or one asking to come back later); ``length``: the bytes written."""

    uri: str
    kind: str
    length: int = 0
    reason: str | None = None
    rerun_helps: bool = True
    fix: str | None = None
    down: str | None = None

    @classmethod
    def failed(cls, uri: str, reason: str, error: ResourceSyncError) -> Outcome:
        down = None
        if isinstance(error, FetchError) and (error.status is None
                                              or error.status in RETRY_STATUSES):
            down = urlsplit(error.url).netloc
        return cls(uri, "failed", reason=reason, rerun_helps=error.rerun_helps,
                   fix=fix_for(error), down=down)


@dataclass
class Tally:
    """Counts of one run (listed, fetched, unchanged, removed, failed, bytes) and its first
    failures. Kept on one thread: the pool hands outcomes back to the caller's."""

    log: Log
    stats: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("listed", "fetched", "unchanged", "removed", "failed", "bytes"), 0))
    failures: list[tuple[str, str]] = field(default_factory=list)
    done: int = 0  # outcomes counted
    lasting: int = 0  # failures a re-run cannot fix
    fixes: list[str] = field(default_factory=list)  # what must change for them, each once
    total: int | None = None  # outcomes the run will count, where it knows
    #: Where :attr:`total` is not known: how many outcomes to expect, and whether exactly.
    expect: Callable[[], tuple[int | None, bool]] | None = None
    clock: Callable[[], float] = time.monotonic
    #: Why the run starts no more resources (a host stopped answering); None: it goes on.
    stopped: str | None = None
    stopped_host: str | None = None
    pacer: Pacer = field(init=False)
    _down: dict[str, int] = field(default_factory=dict)  # host -> failures in a row

    def __post_init__(self) -> None:
        self.pacer = Pacer(PROGRESS_EVERY, self.clock)

    def count(self, outcome: Outcome) -> None:
        """Add one resource's outcome; log progress when the :class:`~..units.Pacer` says
        (every 1,000 resources, and 30 s after the last line)."""
        if outcome.reason is not None:
            self.fail(outcome.uri, outcome.reason, rerun_helps=outcome.rerun_helps,
                      fix=outcome.fix)
            self._watch_host(outcome)
        else:
            self._down.pop(urlsplit(outcome.uri).netloc, None)
            self.stats[outcome.kind] += 1
            self.stats["bytes"] += outcome.length
        self.done += 1
        elapsed = self.pacer.due(self.done)
        if elapsed is not None:
            total, exact = (self.total, True) if self.total or self.expect is None \
                else self.expect()
            self.log.info("Progress: %s: %s", pace(self.done, total, self.stats["bytes"],
                                                    elapsed, "resources", about=not exact),
                          counted(self.stats))

    def _watch_host(self, outcome: Outcome) -> None:
        """Stop the run once :data:`STOP_AFTER` resources of one host failed in a row with no
        answer (refused, reset, timed out) or one asking to come back later."""
        if outcome.down is None:
            self._down.pop(urlsplit(outcome.uri).netloc, None)
            return
        streak = self._down[outcome.down] = self._down.get(outcome.down, 0) + 1
        if streak >= STOP_AFTER and self.stopped is None:
            self.stopped_host = outcome.down
            self.stopped = (f"{outcome.down} stopped answering: the last {streak} resources "
                            f"from it failed in a row (the last: {outcome.reason})")
            self.log.warning("Stopping: %s; no more resources are started, those under way "
                             "end", self.stopped)

    def taking(self, items: Iterator[T]) -> Iterator[T]:
        """``items`` until the run stops (:attr:`stopped`); those not taken stay in ``items``."""
        while self.stopped is None:
            try:
                item = next(items)
            except StopIteration:
                return
            yield item

    def fail(self, what: str, reason: str, *, rerun_helps: bool = True,
             fix: str | None = None) -> None:
        """Record a failure: of a resource, a removal, a package or a document; one a re-run
        cannot fix is lasting, and ``fix`` says what must change."""
        self.stats["failed"] += 1
        if not rerun_helps:
            self.lasting += 1
            if fix is not None and fix not in self.fixes and len(self.fixes) < SHOWN:
                self.fixes.append(fix)
        if len(self.failures) < SHOWN:
            self.failures.append((what, reason))
            self.log.warning("Failed: %s : %s%s", what, reason,
                             f" (to fix: {fix})" if fix else "")
        elif self.stats["failed"] == SHOWN + 1:
            self.log.warning("More failures: counted, not logged one by one (the progress "
                             "lines and the end of the run say how many)")

    def raise_if_failed(self, what: str) -> None:
        """:class:`SyncIncompleteError` if anything failed, saying what was done and what next:
        re-running, where that can fix every failure; else what must change."""
        failed = self.stats["failed"]
        if not failed:
            return
        done = ", ".join(f"{self.stats[name]} {name}"
                         for name in ("fetched", "unchanged", "removed"))
        if self.stopped is not None:
            raise SyncIncompleteError(
                f"{what} stopped early: {self.stopped}. Kept: {done}, committed and recorded; "
                f"re-run once {self.stopped_host} answers (check the connection's host and "
                "port if it never did): what was kept is not fetched again",
                failures=list(self.failures), failed=failed, lasting=self.lasting,
                fixes=tuple(self.fixes), stopped=self.stopped_host)
        if not self.lasting:
            step = "re-run the task to converge"
        else:
            others = failed - self.lasting
            step = (f"{self.lasting} of the failures will fail again until something changes: "
                    f"{'; '.join(self.fixes) or 'see the reasons below'}"
                    + (f"; the other {others} may be transient" if others else ""))
        raise SyncIncompleteError(f"{what} is incomplete ({done}); {step}",
                                  failures=list(self.failures), failed=failed,
                                  lasting=self.lasting, fixes=tuple(self.fixes))


def fix_for(error: ResourceSyncError) -> str | None:
    """What must change before ``error`` can go away (its :func:`~.next_step.next_step`), for
    an error a re-run cannot fix; None for one it can."""
    return None if error.rerun_helps else next_step(error)
