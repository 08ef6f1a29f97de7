"""What a run did: counts for its checkpoint and logs, the first failures to show, and whether
running it again can fix them (or what must change first)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import (
    ConfigurationError,
    DocumentError,
    ResourceSyncError,
    SyncIncompleteError,
    UnsafeContentError,
    UnstorableKeyError,
)
from ..units import PROGRESS_SECONDS, counted, pace
from .log import Log

__all__ = ["Outcome", "Tally", "fix_for"]

#: Failures kept to show (all are counted).
SHOWN = 10
#: Resources between two progress lines in the log.
PROGRESS_EVERY = 1000


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one resource: ``"fetched"``, ``"unchanged"`` or ``"failed"`` (with
    ``reason``, whether a re-run can fix it, and if not, ``fix``); ``length``: the bytes
    written."""

    uri: str
    kind: str
    length: int = 0
    reason: str | None = None
    rerun_helps: bool = True
    fix: str | None = None

    @classmethod
    def failed(cls, uri: str, reason: str, error: ResourceSyncError) -> Outcome:
        return cls(uri, "failed", reason=reason, rerun_helps=error.rerun_helps,
                   fix=fix_for(error))


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
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    _told: float = field(init=False)  # when progress was last logged

    def __post_init__(self) -> None:
        self.started = self._told = self.clock()

    def count(self, outcome: Outcome) -> None:
        """Add one resource's outcome; log progress every :data:`PROGRESS_EVERY` resources, or
        after :data:`PROGRESS_SECONDS` without a progress line."""
        if outcome.reason is not None:
            self.fail(outcome.uri, outcome.reason, rerun_helps=outcome.rerun_helps,
                      fix=outcome.fix)
        else:
            self.stats[outcome.kind] += 1
            self.stats["bytes"] += outcome.length
        self.done += 1
        now = self.clock()
        if self.done % PROGRESS_EVERY == 0 or now - self._told >= PROGRESS_SECONDS:
            self._told = now
            self.log.info("Progress: %s: %s", pace(self.done, self.total, self.stats["bytes"],
                                                    now - self.started, "resources"),
                          counted(self.stats))

    def fail(self, what: str, reason: str, *, rerun_helps: bool = True,
             fix: str | None = None) -> None:
        """Record a failure: of a resource, a removal, a package or a document; one a re-run
        cannot fix is lasting, and ``fix`` says what must change."""
        self.stats["failed"] += 1
        if not rerun_helps:
            self.lasting += 1
            if fix is not None and fix not in self.fixes and len(self.fixes) < SHOWN:
                self.fixes.append(fix)
        self.log.warning("Failed: %s : %s%s", what, reason, f" (to fix: {fix})" if fix else "")
        if len(self.failures) < SHOWN:
            self.failures.append((what, reason))

    def raise_if_failed(self, what: str) -> None:
        """:class:`SyncIncompleteError` if anything failed, saying what was done and what next:
        re-running, where that can fix every failure; else what must change."""
        failed = self.stats["failed"]
        if not failed:
            return
        done = ", ".join(f"{self.stats[name]} {name}"
                         for name in ("fetched", "unchanged", "removed"))
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
    """What must change before ``error`` can go away, for an error a re-run cannot fix; None
    for one it can."""
    if error.rerun_helps:
        return None
    if isinstance(error, UnstorableKeyError):
        return ("map such URIs to other keys with key_prefixes, or mirror into a destination "
                "that can hold them (S3)")
    if isinstance(error, UnsafeContentError) and "hosts" in error.rule:
        return ("if the host named is to be trusted, add it to the connection's allowed hosts; "
                "else the Source must fix its list")
    if isinstance(error, DocumentError):
        return "the Source must fix the document or the URIs it lists"
    if isinstance(error, ConfigurationError):
        return "fix the argument or connection field named"
    return "the Source must fix the value named"
