"""Changes read in order, coalesced by resource: the last change of a resource wins (spec 12.1:
a Destination need only bring each resource to its latest state). A resource is its URI's normal
form, so ``HTTP://H:80/x`` and ``http://h/x`` are one, with one winner.

Each winner keeps the position just before it, so a run whose winners partly fail can stand
exactly before the earliest failure: every change before it was committed (or superseded by a
committed one), and re-reading from there repeats only what is harmless to repeat.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..client.navigate import ChangeItem
from ..protocol.model import Change, Entry
from ..protocol.position import ChangePosition
from .compare import identity

__all__ = ["Coalesced", "Winner", "coalesce"]


@dataclass(frozen=True, slots=True)
class Winner:
    """The last change of one resource in a run: ``order`` counts the changes read before it,
    ``before`` is the position just before it."""

    order: int
    item: ChangeItem
    before: ChangePosition

    @property
    def entry(self) -> Entry:
        return self.item.entry

    @property
    def change(self) -> Change:
        """The change; an entry naming none (or one we do not know) counts as an update: the
        resource is fetched, which is right whatever happened unless it was deleted."""
        return self.entry.change or Change.UPDATED


@dataclass(frozen=True, slots=True)
class Coalesced:
    """The winners in the order of their changes, how many changes were read, and the position
    after the last of them."""

    winners: list[Winner]
    read: int
    after: ChangePosition

    def standing(self, failed: Iterable[Winner]) -> ChangePosition:
        """Where the mirror stands once every winner but ``failed`` was committed: before the
        earliest failure, else after everything read."""
        earliest = min(failed, key=lambda winner: winner.order, default=None)
        return self.after if earliest is None else earliest.before


def coalesce(items: Iterable[ChangeItem], position: ChangePosition) -> Coalesced:
    """The last change of each resource among ``items`` (read after ``position``, in order)."""
    winners: dict[str, Winner] = {}
    read = 0
    for item in items:
        resource = identity(item.entry.loc)
        winners.pop(resource, None)  # re-inserted last: the dict keeps change order
        winners[resource] = Winner(read, item, position)
        position = position.advance(item.list, item.index, item.entry)
        read += 1
    return Coalesced(list(winners.values()), read, position)
