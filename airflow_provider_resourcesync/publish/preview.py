"""A dry run's answer: what a publishing run would publish, delete, skip and leave as it is,
with counts and a few examples of each, and why it would be refused, if it would
(:func:`.run.preview`). Nothing is written to find it out."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..protocol.datetimes import format_datetime
from .diff import Change, ChangeKind
from .packages import Window

__all__ = ["EXAMPLES", "Preview"]

#: Keys shown of each kind of change.
EXAMPLES = 3


@dataclass(slots=True)
class Preview:
    """What a run would do, counted as the changes pass (:meth:`counted`).

    :param since: the end of the last run's window (None: nothing published yet).
    :param until: the end of this run's window (the inventory's time).
    """

    since: datetime | None
    until: datetime
    created: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    bytes: int = 0
    packages: int = 0
    examples: dict[str, list[str]] = field(default_factory=dict)
    #: Why the run would be refused (what it would raise), if it would.
    refused: str | None = None
    #: A killed run's plan the run would carry out first, and its changes.
    pending: dict[str, Any] | None = None

    @property
    def changes(self) -> int:
        return self.created + self.updated + self.deleted

    def counted(self, changes: Iterable[Change]) -> Iterator[Change]:
        """``changes`` passed through, each counted, a few kept as examples."""
        for change in changes:
            if change.kind is ChangeKind.CREATED:
                self.created += 1
            elif change.kind is ChangeKind.UPDATED:
                self.updated += 1
            else:
                self.deleted += 1
            if change.current is not None:
                self.bytes += change.current.size
            shown = self.examples.setdefault(change.kind.value, [])
            if len(shown) < EXAMPLES:
                shown.append(change.key)
            yield change

    def packaged(self, windows: Iterable[Window]) -> None:
        """Count the packages the changes would be cut into."""
        for _ in windows:
            self.packages += 1

    def as_dict(self, skipped: dict[str, Any]) -> dict[str, Any]:
        """The preview as the dry run's XCom, with the keys ``skipped`` (a count and examples,
        :meth:`~.inventory.Skipped.as_dict`)."""
        return {"dry_run": True,
                "since": format_datetime(self.since) if self.since else None,
                "until": format_datetime(self.until),
                "stats": {"changes": self.changes, "created": self.created,
                          "updated": self.updated, "deleted": self.deleted,
                          "skipped": skipped["count"], "unchanged": self.unchanged,
                          "bytes": self.bytes, "packages": self.packages},
                "examples": {**self.examples, "skipped": skipped["examples"]},
                "refused": self.refused, "pending": self.pending}
