"""What a run did: counts for its checkpoint and logs, and the first failures to show."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ..errors import SyncIncompleteError

__all__ = ["Outcome", "Tally"]

#: Failures kept to show (all are counted).
SHOWN = 10
#: Resources between two progress lines in the log.
PROGRESS_EVERY = 1000


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one resource: ``"fetched"``, ``"unchanged"`` or ``"failed"`` (with
    ``reason``); ``length``: the bytes written."""

    uri: str
    kind: str
    length: int = 0
    reason: str | None = None


@dataclass
class Tally:
    """Counts of one run (listed, fetched, unchanged, removed, failed, bytes) and its first
    failures. Kept on one thread: the pool hands outcomes back to the caller's."""

    log: logging.Logger
    stats: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("listed", "fetched", "unchanged", "removed", "failed", "bytes"), 0))
    failures: list[tuple[str, str]] = field(default_factory=list)
    done: int = 0  # outcomes counted

    def count(self, outcome: Outcome) -> None:
        """Add one resource's outcome; log progress every :data:`PROGRESS_EVERY`."""
        if outcome.reason is not None:
            self.fail(outcome.uri, outcome.reason)
        else:
            self.stats[outcome.kind] += 1
            self.stats["bytes"] += outcome.length
        self.done += 1
        if self.done % PROGRESS_EVERY == 0:
            self.log.info("Progress: %s resources done (%s)", self.done, ", ".join(
                f"{value} {name}" for name, value in self.stats.items()))

    def fail(self, what: str, reason: str) -> None:
        """Record a failure: of a resource, a removal, a package or a document."""
        self.stats["failed"] += 1
        self.log.warning("Failed: %s: %s", what, reason)
        if len(self.failures) < SHOWN:
            self.failures.append((what, reason))

    def raise_if_failed(self, what: str) -> None:
        """:class:`SyncIncompleteError` if anything failed, saying what was done and what next."""
        if self.stats["failed"]:
            done = ", ".join(f"{self.stats[name]} {name}"
                             for name in ("fetched", "unchanged", "removed"))
            raise SyncIncompleteError(f"{what} is incomplete ({done}; re-run the task to "
                                      "converge)", failures=list(self.failures),
                                      failed=self.stats["failed"])
