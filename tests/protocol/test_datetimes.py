"""W3C Datetime parsing and writing (spec section 7)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_resourcesync.errors import InvalidValueError
from airflow_provider_resourcesync.protocol.datetimes import (
    format_datetime,
    parse_datetime,
    zone_assumed,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2013", datetime(2013, 1, 1, tzinfo=UTC)),
        ("2013-05", datetime(2013, 5, 1, tzinfo=UTC)),
        ("2013-05-06", datetime(2013, 5, 6, tzinfo=UTC)),
        ("2013-05-06T10:20Z", datetime(2013, 5, 6, 10, 20, tzinfo=UTC)),
        ("2013-05-06T10:20:30Z", datetime(2013, 5, 6, 10, 20, 30, tzinfo=UTC)),
        ("2013-05-06T10:20:30.5Z", datetime(2013, 5, 6, 10, 20, 30, 500000, tzinfo=UTC)),
        ("2013-05-06T10:20:30.123456789Z",
         datetime(2013, 5, 6, 10, 20, 30, 123456, tzinfo=UTC)),
        # +01:00 is one hour ahead of UTC: 10:20 there is 09:20 in UTC.
        ("2013-05-06T10:20+01:00", datetime(2013, 5, 6, 9, 20, tzinfo=UTC)),
        ("2013-05-06T10:20:30-05:30", datetime(2013, 5, 6, 15, 50, 30, tzinfo=UTC)),
        ("2013-01-01T00:30:00+01:00", datetime(2012, 12, 31, 23, 30, tzinfo=UTC)),
        ("2013-12-31T23:30:00-01:00", datetime(2014, 1, 1, 0, 30, tzinfo=UTC)),
        ("  2013-01-03T09:00:00Z\n", datetime(2013, 1, 3, 9, tzinfo=UTC)),
    ],
)
def test_every_granularity_and_offset(text: str, expected: datetime) -> None:
    parsed = parse_datetime(text)
    assert parsed == expected
    assert parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(("text", "expected"), [
    ("2021-01-20T20:25:31.541226", datetime(2021, 1, 20, 20, 25, 31, 541226, tzinfo=UTC)),
    ("2020-06-02T00:00:00", datetime(2020, 6, 2, tzinfo=UTC)),
    ("2013-05-06T10:20", datetime(2013, 5, 6, 10, 20, tzinfo=UTC)),
])
def test_a_time_without_a_zone_is_read_as_utc_and_marked(text: str, expected: datetime) -> None:
    """CORE writes times with no zone designator, which the W3C profile requires (spec 7)."""
    parsed = parse_datetime(text)
    assert parsed == expected and zone_assumed(parsed)
    assert format_datetime(parsed) == format_datetime(expected)
    assert not zone_assumed(parse_datetime(text + "Z"))
    assert not zone_assumed(parse_datetime("2013-05-06"))  # a date alone is the day in UTC


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "13-05-06",
        "2013-5-6",
        "2013-05-06T10Z",
        "2013-05-06 10:20:30Z",
        "2013-05-06T10:20:30.Z",
        "2013-13",
        "2013-02-30",
        "2013-05-06T24:00Z",
        "2013-05-06T10:60Z",
        "2013-05-06T10:20+24:00",
        "2013-05-06T10:20+0100",
        "20130506T102030Z",
        "2013-05-06T10:20:30\u0661Z",
        "0001-01-01T00:00+01:00",
    ],
)
def test_anything_else_is_a_clear_error(text: str) -> None:
    with pytest.raises(InvalidValueError, match="W3C Datetime"):
        parse_datetime(text)


def test_format_writes_utc_with_fraction_only_when_present() -> None:
    assert format_datetime(datetime(2013, 1, 3, 9, tzinfo=UTC)) == "2013-01-03T09:00:00Z"
    assert format_datetime(datetime(2013, 1, 3, 9, 0, 0, 250000, tzinfo=UTC)) == (
        "2013-01-03T09:00:00.25Z")
    plus_two = timezone(timedelta(hours=2))
    assert format_datetime(datetime(2013, 1, 3, 9, tzinfo=plus_two)) == "2013-01-03T07:00:00Z"


def test_format_pads_years_before_1000() -> None:
    assert format_datetime(datetime(999, 5, 1, tzinfo=UTC)) == "0999-05-01T00:00:00Z"


def test_format_refuses_naive_datetimes() -> None:
    with pytest.raises(InvalidValueError, match="no time zone"):
        format_datetime(datetime(2013, 1, 3, 9))


offsets = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59)
instants = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC))


@given(instants)
def test_format_then_parse_is_identity(value: datetime) -> None:
    assert parse_datetime(format_datetime(value)) == value


@given(instants, offsets)
def test_offsets_denote_the_same_instant(value: datetime, minutes: int) -> None:
    zone = timezone(timedelta(minutes=minutes))
    local = value.astimezone(zone)
    sign = "-" if minutes < 0 else "+"
    text = f"{local.year:04d}-" + local.strftime("%m-%dT%H:%M:%S") + f".{local.microsecond:06d}"
    text += f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    assert parse_datetime(text) == value


@given(st.text(max_size=40))
def test_arbitrary_text_parses_or_fails_cleanly(text: str) -> None:
    try:
        parsed = parse_datetime(text)
    except InvalidValueError:
        return
    assert parsed.tzinfo is UTC
