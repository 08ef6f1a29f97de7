"""What a publishing run refuses before it writes anything: an inventory dated ahead of the
machine's clock, a publication whose last window ends that far ahead (no inventory is newer:
it is frozen), and a run that would delete more than a set share of the collection (an empty
or truncated report, another prefix's listing)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import TypeVar

from ..errors import ConfigurationError, InventoryError, PublishError
from ..protocol.datetimes import format_datetime
from .diff import Change, ChangeKind

__all__ = ["MAX_AHEAD", "MAX_DELETIONS", "Deletions", "check_not_ahead", "check_not_frozen",
           "deletion_share"]

#: How far an inventory's time (a report's creation, a listing's start) may be ahead of the
#: machine's clock: a run's window ends at it, and no later run publishes before it is past.
MAX_AHEAD = timedelta(hours=1)
#: The share of the objects last published a run may delete, by default.
MAX_DELETIONS = 0.1
T = TypeVar("T")


def check_not_ahead(inventory_time: datetime, now: datetime) -> None:
    """:raises InventoryError: ``inventory_time`` is more than :data:`MAX_AHEAD` after
    ``now``."""
    if inventory_time - now > MAX_AHEAD:
        raise InventoryError(
            f"the inventory's time {format_datetime(inventory_time)} is ahead of this machine's "
            f"clock ({format_datetime(now)}) by more than {MAX_AHEAD}: a report dated in the "
            "future or a clock ahead, after which nothing would be published until then; "
            "publish from an inventory of now, or set the clock right")


def check_not_frozen(window_end: datetime, now: datetime, where: str) -> None:
    """:raises PublishError: the last run's window, ending at ``window_end``, is more than
    :data:`MAX_AHEAD` after ``now``: no inventory is newer, the publication is frozen (the
    publication at ``where`` is named in what to do)."""
    if window_end - now > MAX_AHEAD:
        raise PublishError(
            f"the last run's window ends at {format_datetime(window_end)}, ahead of this "
            f"machine's clock ({format_datetime(now)}) by more than {MAX_AHEAD}: an inventory "
            "dated in the future (a report's creationTimestamp, a worker's clock ahead) was "
            "published, and no inventory is newer until then; wait until then, or publish from "
            f"scratch: delete the publication at {where} (or publish elsewhere) and have "
            "followers baseline again")


def deletion_share(value: float | str) -> float:
    """``value`` (a number, or a template's text) as a share of the collection, 0 to 1.

    :raises ConfigurationError: it is not a number from 0 to 1.
    """
    try:
        share = float(value)
    except (TypeError, ValueError):
        share = math.nan
    if not 0 <= share <= 1:
        raise ConfigurationError(f"max_deletions: {str(value)[:40]!r} is not a share of the "
                                 "collection from 0 to 1 (0.1: a tenth)")
    return share


class Deletions:
    """Counts the objects last published and the deletions of a run, as they pass."""

    def __init__(self) -> None:
        self.objects = 0
        self.deleted = 0

    def published(self, objects: Iterable[T]) -> Iterator[T]:
        for item in objects:
            self.objects += 1
            yield item

    def changes(self, changes: Iterable[Change]) -> Iterator[Change]:
        for change in changes:
            if change.kind is ChangeKind.DELETED:
                self.deleted += 1
            yield change

    def check(self, share: float, inventory_time: datetime) -> None:
        """:raises PublishError: more deletions than ``share`` of the objects allows (rounded
        up to a whole object, so any share above 0 allows one)."""
        allowed = math.ceil(share * self.objects)
        if self.deleted > allowed:
            needed = math.ceil(100 * self.deleted / self.objects) / 100
            raise PublishError(
                f"the inventory of {format_datetime(inventory_time)} would delete "
                f"{self.deleted:,} of the {self.objects:,} objects published, more than "
                f"max_deletions={share:g} allows ({allowed:,}); nothing was written. Check the "
                "inventory (an empty or truncated report, or another prefix's, deletes every "
                f"object); if they are gone indeed, run once with max_deletions={needed:g}")
