"""Change positions: which changes come after a checkpoint (spec 12.1, 12.2)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_resourcesync.protocol.model import DocumentKind, Entry, Metadata
from airflow_provider_resourcesync.protocol.position import (
    ChangeListRef,
    ChangePosition,
    Reading,
    changes_after,
    in_order,
    lists_to_read,
    reading,
)
from airflow_provider_resourcesync.protocol.reader import read_document
from tests.protocol.conftest import EXAMPLES, XML_EXAMPLES

CHANGE_LISTS = [path for path in XML_EXAMPLES
                if read_document(path).head.kind is DocumentKind.CHANGE_LIST]

T0 = datetime(2013, 1, 3, tzinfo=UTC)
LIST = ChangeListRef("http://e.com/changelist.xml", from_=T0)


def change(name: str, minutes: int | None, *, lastmod: bool = False) -> Entry:
    when = None if minutes is None else T0 + timedelta(minutes=minutes)
    if lastmod:
        return Entry(f"http://e.com/{name}", lastmod=when, md=Metadata(change="updated"))
    return Entry(f"http://e.com/{name}", md=Metadata(change="updated", datetime=when))


def consume(ref: ChangeListRef, entries: list[Entry], position: ChangePosition,
            limit: int | None = None) -> tuple[list[str], ChangePosition]:
    """Consume up to ``limit`` changes after ``position``; their names and the new position."""
    names = []
    for index, entry in changes_after(ref, entries, position,
                                      reading(ref, position, lambda: entries)):
        if limit is not None and len(names) == limit:
            break
        names.append(entry.loc.rsplit("/", 1)[1])
        position = position.advance(ref, index, entry)
    return names, position


def test_a_baseline_position_includes_changes_at_its_own_time() -> None:
    entries = [change("a", 0), change("b", 10), change("c", 20)]
    names, _ = consume(LIST, entries, ChangePosition.at(T0 + timedelta(minutes=10)))
    assert names == ["b", "c"]


def test_several_changes_sharing_one_datetime_resume_exactly() -> None:
    entries = [change("a", 5), change("b", 5), change("c", 5), change("d", 6)]
    first, position = consume(LIST, entries, ChangePosition(), limit=2)
    assert first == ["a", "b"]
    assert (position.time, position.consumed) == (T0 + timedelta(minutes=5), 2)
    rest, _ = consume(LIST, entries, position)
    assert rest == ["c", "d"]
    # The same list after it was closed and moved into an index: its ``from`` identifies it.
    moved = ChangeListRef("http://e.com/changelist-1.xml", from_=T0, until=T0 + timedelta(hours=1))
    assert consume(moved, entries, position)[0] == ["c", "d"]


def test_changes_sharing_a_datetime_across_two_lists_are_all_read() -> None:
    # A closed list ends at 11:00 holding b@11:00; the next list starts with c@11:00.
    first = ChangeListRef("http://e.com/cl-1.xml", T0, T0 + timedelta(minutes=11))
    second = ChangeListRef("http://e.com/cl-2.xml", T0 + timedelta(minutes=11))
    names, position = consume(first, [change("a", 10), change("b", 11)], ChangePosition())
    assert names == ["a", "b"]
    assert [r.url for r in lists_to_read([first, second], position)] == [first.url, second.url]
    assert consume(first, [change("a", 10), change("b", 11)], position)[0] == []
    assert consume(second, [change("c", 11), change("d", 12)], position)[0] == ["c", "d"]


def test_entries_without_time_follow_their_place_in_the_list() -> None:
    # Spec Example 19: the last change has neither lastmod nor datetime.
    document = read_document(EXAMPLES / "ex19.xml")
    ref = ChangeListRef.of("http://example.com/changelist.xml", document.head)
    names, position = consume(ref, document.entries, ChangePosition(), limit=3)
    assert names == ["res1.html", "res2.pdf", "res3.tiff"]
    assert consume(ref, document.entries, position)[0] == ["res2.pdf"]


def test_an_open_list_that_grew_yields_only_the_new_entries() -> None:
    entries = [change("a", 1), change("b", None), change("c", 2)]
    _, position = consume(LIST, entries, ChangePosition())
    grown = [*entries, change("d", 2), change("e", None)]
    assert consume(LIST, grown, position)[0] == ["d", "e"]


def test_a_rotated_list_at_the_same_url_is_read_by_time() -> None:
    entries = [change("a", 1), change("b", 2)]
    _, position = consume(LIST, entries, ChangePosition())
    rotated = ChangeListRef(LIST.url, from_=T0 + timedelta(minutes=2))
    assert consume(rotated, [change("c", 3), change("d", 4)], position)[0] == ["c", "d"]


def test_one_point_zero_lists_use_lastmod() -> None:
    entries = [change("a", 1, lastmod=True), change("b", 2, lastmod=True)]
    position = ChangePosition.at(T0 + timedelta(minutes=2))
    assert consume(ChangeListRef("http://e.com/other.xml", T0), entries, position)[0] == ["b"]


def test_a_list_with_no_from_cannot_say_which_changes_are_old_so_all_come_after() -> None:
    """resync 2.0.1 writes no ``from`` and dates a deletion by the file's old ``lastmod``."""
    entries = [change("a", 5, lastmod=True),
               Entry("http://e.com/gone", lastmod=T0, md=Metadata(change="deleted"))]
    position = ChangePosition.at(T0 + timedelta(minutes=2))
    resync = ChangeListRef("http://e.com/changelist.xml")
    assert consume(resync, entries, position)[0] == ["a", "gone"]
    assert "has no from" in (reading(resync, position, lambda: entries).doubt or "")
    assert reading(resync, ChangePosition(), lambda: entries) == Reading()  # no time: all


def test_a_list_with_no_from_rewritten_at_its_url_is_read_whole() -> None:
    """resync writes each new Change List over the last one at the same URL, with no ``from``:
    it is the position's own list only while the entry last consumed is still in its place."""
    resync = ChangeListRef("http://e.com/changelist.xml")
    _, position = consume(resync, [change("a", 1), change("b", 2)], ChangePosition())
    assert position.last == "http://e.com/b"
    grown = [change("a", 1), change("b", 2), change("c", 3)]
    assert consume(resync, grown, position)[0] == ["c"]
    rewritten = [change("c", 3), change("d", 4), change("e", 5)]
    assert consume(resync, rewritten, position)[0] == ["c", "d", "e"]
    b_again = [change("c", 3), change("b", 4)]  # b changed again, at its old place
    assert consume(resync, b_again, position)[0] == ["c", "b"]
    assert consume(resync, [change("c", 3)], position)[0] == ["c"]  # shorter than consumed


def test_a_list_out_of_order_cannot_say_which_changes_are_old_so_all_come_after() -> None:
    entries = [change("a", 1), change("b", 5), change("c", 1)]
    position = ChangePosition.at(T0 + timedelta(minutes=2))
    assert not in_order(entries) and in_order([change("a", 1), change("b", None), change("c", 1)])
    assert consume(LIST, entries, position)[0] == ["a", "b", "c"]
    assert "out of order" in (reading(LIST, position, lambda: entries).doubt or "")
    by_time = [entry.loc[-1] for _, entry in changes_after(LIST, entries, position,
                                                            Reading(by_time=True))]
    assert by_time == ["b"]  # read as if in order, c would be lost


def test_every_change_of_a_list_beginning_after_the_position_comes_after_it() -> None:
    later = ChangeListRef("http://e.com/cl-2.xml", T0 + timedelta(minutes=10))
    entries = [change("early", 1), change("b", 11)]  # dated before its own from: still in it
    position = ChangePosition.at(T0 + timedelta(minutes=5))
    assert consume(later, entries, position)[0] == ["early", "b"]
    assert reading(later, position, lambda: entries) == Reading()


@pytest.mark.parametrize("path", CHANGE_LISTS, ids=lambda path: path.name)
def test_the_specs_change_lists_are_read_by_time_where_they_straddle_a_position(
        path: Path) -> None:
    """Each printed Change List has a ``from`` and its changes in order: no doubt, and a
    position inside its window skips exactly the changes dated before it."""
    document = read_document(path)
    ref = ChangeListRef.of("http://example.com/changelist.xml", document.head)
    assert ref.from_ is not None
    position = ChangePosition.at(ref.from_ + timedelta(hours=13))
    how = reading(ref, position, lambda: document.entries)
    assert how == Reading(by_time=True)
    after = [entry for _, entry in changes_after(ref, document.entries, position, how)]
    assert after == [entry for entry in document.entries
                     if entry.change_time is None or entry.change_time >= position.time]


def test_lists_ending_before_the_position_are_skipped() -> None:
    day = timedelta(days=1)
    lists = [ChangeListRef("l1", T0, T0 + day), ChangeListRef("l2", T0 + day, T0 + 2 * day),
             ChangeListRef("l3", T0 + 2 * day)]
    assert [r.url for r in lists_to_read(lists, ChangePosition.at(T0 + day + day / 2))] == [
        "l2", "l3"]
    # A list ending exactly at the position may still hold a change at that very time.
    assert [r.url for r in lists_to_read(lists, ChangePosition.at(T0 + day))] == [
        "l1", "l2", "l3"]
    assert [r.url for r in lists_to_read(lists, ChangePosition())] == ["l1", "l2", "l3"]


def test_positions_survive_json() -> None:
    position = ChangePosition(T0, LIST.url, T0, 7, "http://e.com/r7")
    assert ChangePosition.from_json(position.to_json()) == position
    assert ChangePosition.from_json(ChangePosition().to_json()) == ChangePosition()


@given(st.lists(st.one_of(st.none(), st.integers(0, 5)), max_size=30),
       st.lists(st.integers(1, 4), max_size=10))
def test_consuming_in_any_batches_sees_every_change_once(times: list[int | None],
                                                        batches: list[int]) -> None:
    times = _forward(times)
    entries = [change(f"r{n}", minutes) for n, minutes in enumerate(times)]
    position, seen = ChangePosition(), []
    for size in [*batches, None]:
        names, position = consume(LIST, entries, position, limit=size)
        seen += names
    assert seen == [f"r{n}" for n in range(len(entries))]


def _forward(times: list[int | None]) -> list[int | None]:
    """Forward chronological order (12.1), untimed entries left in their places."""
    ordered = iter(sorted(t for t in times if t is not None))
    return [None if t is None else next(ordered) for t in times]
