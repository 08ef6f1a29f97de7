"""Gaps: a position whose following changes a Source no longer offers (spec 12.1, 12.2), and the
window a position keeps of its list so that a list read whole and rotated away is no gap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_resourcesync.errors import ChangeGapError
from airflow_provider_resourcesync.protocol.gap import check_no_gap, first_after_gap
from airflow_provider_resourcesync.protocol.model import Entry, Metadata
from airflow_provider_resourcesync.protocol.position import ChangeListRef, ChangePosition

T0 = datetime(2026, 1, 1, tzinfo=UTC)
INDEX = "http://e.com/changelist.xml"


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def ref(number: int, start: int, until: int | None = None) -> ChangeListRef:
    """``changelist-N``, from ``start`` until ``until`` (minutes after T0; None: open)."""
    return ChangeListRef(f"http://e.com/changelist-{number}.xml", at(start),
                         None if until is None else at(until))


def change(minutes: int) -> Entry:
    return Entry("http://e.com/r", md=Metadata(change="updated", datetime=at(minutes)))


def read(listed: ChangeListRef, minutes: list[int], position: ChangePosition
         ) -> ChangePosition:
    """The position once every change of ``listed`` (dated ``minutes``) is consumed, and the
    list read to its end."""
    for index, when in enumerate(minutes):
        position = position.advance(listed, index, change(when))
    return position.ended(listed, len(minutes))


# -- a snapshot's position (a baseline's) ----------------------------------------------------------

def test_a_baseline_older_than_the_first_list_offered_is_a_gap() -> None:
    offered = [ref(3, 20, 30), ref(4, 30)]
    assert first_after_gap(offered, ChangePosition.at(at(15))) == offered[0]


@pytest.mark.parametrize("snapshot", [20, 25, 40])
def test_a_baseline_within_or_after_the_lists_offered_is_no_gap(snapshot: int) -> None:
    """A list from the snapshot's very time holds the changes at that time (counted as after
    it); a snapshot past every closed list starts in the open one."""
    assert first_after_gap([ref(3, 20, 30), ref(4, 30)], ChangePosition.at(at(snapshot))) is None


def test_a_baseline_with_no_time_and_lists_with_no_from_show_no_gap() -> None:
    """Nothing to compare: no gap is invented (resync's lists have no from)."""
    assert first_after_gap([ref(3, 20)], ChangePosition()) is None
    no_from = [ChangeListRef("http://e.com/changelist.xml")]
    assert first_after_gap(no_from, ChangePosition.at(at(0))) is None


# -- a position in a list --------------------------------------------------------------------------

def test_the_position_s_own_list_still_offered_is_no_gap_even_moved_into_an_index() -> None:
    position = ChangePosition(at(5), INDEX, at(0), 2)  # in the single list at INDEX
    moved = ref(1, 0, 10)  # the same from: the same list, now a part of an index
    assert first_after_gap([moved, ref(2, 10)], position) is None


def test_a_closed_list_read_whole_then_rotated_away_is_no_gap() -> None:
    position = read(ref(1, 0, 10), [2, 5], ChangePosition.at(at(0)))
    assert position.read_whole and position.list_until == at(10)
    assert first_after_gap([ref(2, 10, 20), ref(3, 20)], position) is None


def test_a_closed_list_read_whole_whose_successor_was_rotated_away_too_is_a_gap() -> None:
    position = read(ref(1, 0, 10), [2, 5], ChangePosition.at(at(0)))
    offered = [ref(3, 20, 30), ref(4, 30)]
    assert first_after_gap(offered, position) == offered[0]


def test_a_list_not_read_to_its_end_then_rotated_away_is_a_gap() -> None:
    listed = ref(1, 0, 10)
    position = ChangePosition.at(at(0)).advance(listed, 0, change(2))  # 1 of its 2 changes
    assert first_after_gap([ref(2, 10)], position) == ref(2, 10)


def test_an_open_list_read_to_its_end_then_closed_and_rotated_away_is_a_gap() -> None:
    """Changes may have come into the list after it was read: its until was not known."""
    position = read(ref(1, 0), [2, 5], ChangePosition.at(at(0)))
    assert position.at_end and not position.read_whole
    assert first_after_gap([ref(2, 10)], position) == ref(2, 10)


def test_a_position_marked_at_the_end_only_of_its_own_list_and_only_at_its_end() -> None:
    position = ChangePosition.at(at(0)).advance(ref(1, 0, 10), 0, change(2))
    assert position.ended(ref(1, 0, 10), 2) == position  # one entry left
    assert position.ended(ref(2, 10, 20), 1) == position  # another list
    assert position.ended(ref(1, 0, 10), 1).read_whole


# -- checkpoints -----------------------------------------------------------------------------------

def test_the_window_survives_a_checkpoint_and_old_checkpoints_load_as_not_known() -> None:
    position = read(ref(1, 0, 10), [2, 5], ChangePosition.at(at(0)))
    data = position.to_json()
    assert data["list_until"] == "2026-01-01T00:10:00Z" and data["at_end"] is True
    assert ChangePosition.from_json(data) == position
    old = {key: value for key, value in data.items() if key not in ("list_until", "at_end")}
    loaded = ChangePosition.from_json(old)
    assert (loaded.list_until, loaded.at_end, loaded.read_whole) == (None, False, False)


# -- the error -------------------------------------------------------------------------------------

def test_the_error_names_the_checkpoint_the_first_change_offered_and_the_remedy() -> None:
    with pytest.raises(ChangeGapError) as raised:
        check_no_gap(INDEX, [ref(3, 20, 30), ref(4, 30)], ChangePosition.at(at(15)))
    message = str(raised.value)
    assert "the checkpoint is a snapshot at 2026-01-01T00:15:00Z" in message
    assert ("first change the Change List http://e.com/changelist.xml still offers is in "
            "http://e.com/changelist-3.xml , from 2026-01-01T00:20:00Z") in message
    assert "run a baseline into the mirror (or give on_gap='baseline'" in message
    assert raised.value.rerun_helps is False and "re-run this" not in message


def test_the_error_says_where_in_which_list_the_checkpoint_stands() -> None:
    listed = ref(1, 0, 10)
    position = ChangePosition.at(at(0)).advance(listed, 0, change(2))
    with pytest.raises(ChangeGapError, match=r"stands 1 entries into http://e.com/changelist-1"
                       r"\.xml \(from 2026-01-01T00:00:00Z, last change at 2026-01-01T00:02:00Z"
                       r"\), a list no longer offered and not read to its end"):
        check_no_gap(INDEX, [ref(2, 10)], position)


def test_a_very_long_url_is_quoted_shortened() -> None:
    long = ChangeListRef("http://e.com/" + "x" * 500, at(20))
    with pytest.raises(ChangeGapError, match=r"x\.\.\. \(513 characters\) , from") as raised:
        check_no_gap(INDEX, [long], ChangePosition.at(at(15)))
    assert "x" * 200 not in str(raised.value)
