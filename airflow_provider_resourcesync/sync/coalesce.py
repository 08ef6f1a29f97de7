"""Changes read in order, coalesced by resource: the last change of a resource wins (spec 12.1:
a Destination need only bring each resource to its latest state). A resource is its URI's normal
form, so ``HTTP://H:80/x`` and ``http://h/x`` are one, with one winner.

Each winner keeps the position just before it, so a run whose winners partly fail can stand
exactly before the earliest failure: every change before it was committed (or superseded by a
committed one), and re-reading from there repeats only what is harmless to repeat.

Memory stays flat however many resources a run changes: up to :data:`HELD` winners wait in
memory; past that they spill, a batch at a time, into a scratch SQLite database, one row per
resource (a later change replaces the row), and come back from it in change order, one at a
time. A run that changes fewer resources never opens the database.
"""

from __future__ import annotations

import marshal
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..client.navigate import ChangeItem
from ..protocol.closing import ClosedOnExit
from ..protocol.model import Change, Entry
from ..protocol.position import ChangePosition
from ..storage.scratch import scratch_database
from .compare import identity
from .plain import from_plain, to_plain

__all__ = ["HELD", "Coalesced", "Winner", "coalesce"]

#: The most winners held in memory; more spill into a scratch database.
HELD = 5_000

_SCHEMA = """
CREATE TABLE winner (
    "order" INTEGER PRIMARY KEY, resource TEXT NOT NULL UNIQUE, item BLOB NOT NULL
);
"""


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


class Coalesced(ClosedOnExit):
    """The winners in the order of their changes (:attr:`winners`: sized, and iterable once or
    more), how many changes were ``read``, and the position ``after`` the last of them. Closing
    drops the scratch database, if the winners spilled into one."""

    def __init__(self, held: dict[str, Winner], spilled: sqlite3.Connection | None, read: int,
                 after: ChangePosition) -> None:
        self.winners = _Winners(held, spilled)
        self.read = read
        self.after = after

    def standing(self, failed: Iterable[Winner]) -> ChangePosition:
        """Where the mirror stands once every winner but ``failed`` was committed: before the
        earliest failure, else after everything read."""
        earliest = min(failed, key=lambda winner: winner.order, default=None)
        return self.after if earliest is None else earliest.before

    def close(self) -> None:
        self.winners.close()


class _Winners:
    """The winners, from memory or streamed out of the scratch database in change order."""

    def __init__(self, held: dict[str, Winner], spilled: sqlite3.Connection | None) -> None:
        self._held, self._spilled = held, spilled
        self._count = len(held) if spilled is None else spilled.execute(
            "SELECT count(*) FROM winner").fetchone()[0]

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Winner]:
        if self._spilled is None:
            yield from self._held.values()
            return
        for order, item in self._spilled.execute('SELECT "order", item FROM winner ORDER BY 1'):
            change, before = from_plain(marshal.loads(item))
            yield Winner(order, change, before)

    def close(self) -> None:
        if self._spilled is not None:
            self._spilled.close()


def coalesce(items: Iterable[ChangeItem], position: ChangePosition, *, held: int | None = None
             ) -> Coalesced:
    """The last change of each resource among ``items`` (read after ``position``, in order);
    ``held``: the most winners kept in memory before they spill (None: :data:`HELD`)."""
    limit = HELD if held is None else held
    winners: dict[str, Winner] = {}
    spilled: sqlite3.Connection | None = None
    read = 0
    for item in items:
        resource = identity(item.entry.loc)
        winners.pop(resource, None)  # re-inserted last: the dict keeps change order
        winners[resource] = Winner(read, item, position)
        position = position.advance(item.list, item.index, item.entry)
        read += 1
        if len(winners) >= limit:
            spilled = _spill(winners, spilled)
    if spilled is not None and winners:
        _spill(winners, spilled)
    return Coalesced(winners, spilled, read, position)


def _spill(winners: dict[str, Winner], database: sqlite3.Connection | None
           ) -> sqlite3.Connection:
    """Move ``winners`` into the scratch database (opened on the first spill), each replacing
    the row of an earlier change of its resource."""
    database = database or scratch_database(_SCHEMA)
    rows = ((winner.order, resource, marshal.dumps(to_plain(winner.item, winner.before)))
            for resource, winner in winners.items())
    database.execute("BEGIN")
    database.executemany("INSERT OR REPLACE INTO winner VALUES (?, ?, ?)", rows)
    database.execute("COMMIT")
    winners.clear()
    return database
