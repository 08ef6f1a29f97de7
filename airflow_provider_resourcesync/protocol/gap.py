"""Gaps: changes after a position that a Source no longer offers.

Sources rotate old Change Lists out of their index (12.2 lets an index list any lists), and a
mirror of ours drops lists past section 7's 50,000. A Destination whose position is older than
what is still offered would miss every change in between without a word; instead the changes
after a position must all be offered, or the run stops and says so (:class:`ChangeGapError`).

They are, when the position's own list is still offered (by URL and ``from``, or by ``from`` in
an index, see :meth:`~.position.ChangePosition.is_same_list`), and else when the first list that
may hold changes after it starts no later than what the position covers: a snapshot's time
(changes at that very time count as after it, so a list from then has them all), or the
``until`` of a closed list the position read to its end. A list that was not read to its end
and is gone took unread changes with it. A list with no ``from`` (resync writes such lists,
12.1 wants one) cannot show a gap: none is claimed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from ..errors import ChangeGapError, shown
from .datetimes import format_datetime
from .position import ChangeListRef, ChangePosition, lists_to_read

__all__ = ["check_no_gap", "check_no_package_gap", "first_after_gap"]

_log = logging.getLogger(__name__)

#: How much of a long URL a message quotes.


def first_after_gap(lists: Sequence[ChangeListRef], position: ChangePosition
                    ) -> ChangeListRef | None:
    """The first list still offered after ``position`` when changes between them are not
    offered any more (``lists``: every list offered, in order); None where none is missing."""
    if any(position.is_same_list(ref) for ref in lists):
        return None
    following = lists_to_read(lists, position)
    if not following:
        return None
    first = following[0]
    if first.from_ is None:
        _log.debug("The Change List %s has no from (12.1): whether changes after %s are "
                   "missing cannot be told", first.url, position.to_json())
        return None
    if position.list_url is None:
        covered = position.time
    elif position.read_whole:
        covered = position.list_until
    else:
        return first
    return first if covered is not None and first.from_ > covered else None


def check_no_gap(url: str, lists: Sequence[ChangeListRef], position: ChangePosition) -> None:
    """:raises ChangeGapError: the Change List (or index) at ``url``, offering ``lists``, no
    longer offers every change after ``position``: the message names the position, the first
    list still offered and what to do."""
    first = first_after_gap(lists, position)
    if first is None:
        return
    raise ChangeGapError(
        f"The Source no longer offers every change after the checkpoint: {_stands(position)}, "
        f"and the first change the Change List {shown(url)} still offers is in "
        f"{shown(first.url)} , from {_time(first.from_)}. The changes in between cannot be "
        "read, and a re-run meets the same gap: run a baseline into the mirror (or give "
        "on_gap='baseline' to the incremental operator), then go on from its checkpoint")


def check_no_package_gap(url: str, package: ChangeListRef, position: ChangePosition) -> None:
    """:raises ChangeGapError: ``package``, the first package of the Change Dump (or index) at
    ``url`` that ends after ``position``, starts after what the position covers: the packages
    between were retired (13.1; a package holds every change of its window, 13.2). What it
    covers is the ``until`` of a package (or list) read to its end, else its time."""
    if position.is_same_list(package) or (position.list_url is not None
                                           and not position.read_whole):
        position = ChangePosition(position.time)  # within a list: changes after its time
    check_no_gap(url, [package], position)


def _stands(position: ChangePosition) -> str:
    if position.list_url is None:
        return f"the checkpoint is a snapshot at {_time(position.time)} (a baseline's)"
    where = (f"the checkpoint stands {position.consumed} entries into {shown(position.list_url)}"
             f" (from {_time(position.list_from)}, last change at {_time(position.time)})")
    if position.read_whole:
        return f"{where}, read to its end at {_time(position.list_until)}, a list no longer offered"
    return f"{where}, a list no longer offered and not read to its end"


def _time(value: datetime | None) -> str:
    return format_datetime(value) if value is not None else "no time"
