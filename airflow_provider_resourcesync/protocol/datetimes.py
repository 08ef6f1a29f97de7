"""W3C Datetime values (spec section 7): parsed into aware UTC datetimes, written as UTC.

Every granularity of the W3C profile of ISO 8601 is read: ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``,
``YYYY-MM-DDThh:mmTZD``, ``YYYY-MM-DDThh:mm:ssTZD`` and ``YYYY-MM-DDThh:mm:ss.sTZD``. A time zone
designator ``+hh:mm`` means that many hours *ahead* of UTC, so it is subtracted to reach UTC.
A date without a time denotes the start of that period in UTC.

A time without a zone designator breaks the profile, but real Sources write it (CORE writes
``2021-01-20T20:25:31.541226``): it is read as UTC, marked by the tzinfo :data:`ZONE_ASSUMED`
(equal to UTC in every comparison), so that the validator can still report it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from ..errors import InvalidValueError

__all__ = ["ZONE_ASSUMED", "format_datetime", "parse_datetime", "zone_assumed"]

#: The time zone of a time read without one: UTC, under a name of its own.
ZONE_ASSUMED = timezone(timedelta(0), "UTC, assumed: no time zone designator")

_W3C = re.compile(
    r"(?P<year>[0-9]{4})"
    r"(?:-(?P<month>[0-9]{2})"
    r"(?:-(?P<day>[0-9]{2})"
    r"(?:T(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2})"
    r"(?::(?P<second>[0-9]{2})(?:\.(?P<fraction>[0-9]+))?)?"
    r"(?P<tzd>Z|[+-][0-9]{2}:[0-9]{2})?)?)?)?"
)


def parse_datetime(text: str) -> datetime:
    """Parse a W3C Datetime into an aware datetime in UTC.

    :raises InvalidValueError: for anything that is not a W3C Datetime.
    """
    value = text.strip()
    # Fast path for the recommended form YYYY-MM-DDThh:mm:ssZ (the vast majority of values).
    if (
        len(value) == 20
        and value[19] == "Z"
        and value[10] == "T"
        and value[4] == "-"
        and value[7] == "-"
        and value[13] == ":"
        and value[16] == ":"
        and value.isascii()
    ):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass  # fall through to the full parser, which names the problem
    match = _W3C.fullmatch(value)
    if match is None:
        raise InvalidValueError(
            f"{text!r} is not a W3C Datetime (expected YYYY, YYYY-MM, YYYY-MM-DD or "
            "YYYY-MM-DDThh:mm[:ss[.s]] followed by Z or +hh:mm/-hh:mm)"
        )
    return _from_match(match, text)


def _from_match(match: re.Match[str], text: str) -> datetime:
    parts = match.groupdict()
    fraction = parts["fraction"] or ""
    try:
        tz = _timezone(parts["tzd"]) if parts["tzd"] or not parts["hour"] else ZONE_ASSUMED
        local = datetime(
            int(parts["year"]),
            int(parts["month"] or 1),
            int(parts["day"] or 1),
            int(parts["hour"] or 0),
            int(parts["minute"] or 0),
            int(parts["second"] or 0),
            int(fraction[:6].ljust(6, "0")) if fraction else 0,
            tzinfo=tz,
        )
        if tz is not ZONE_ASSUMED:
            local = local.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise InvalidValueError(f"{text!r} is not a valid W3C Datetime: {exc}") from None
    return local


def zone_assumed(value: datetime) -> bool:
    """Whether ``value`` was read with no time zone designator (and taken as UTC)."""
    return value.tzinfo is ZONE_ASSUMED


def _timezone(tzd: str | None) -> timezone:
    if tzd is None or tzd == "Z":
        return UTC
    hours, minutes = int(tzd[1:3]), int(tzd[4:6])
    if hours > 23 or minutes > 59:
        raise ValueError(f"time zone offset {tzd} out of range")
    offset = timedelta(hours=hours, minutes=minutes)
    return timezone(-offset if tzd[0] == "-" else offset)


def format_datetime(value: datetime) -> str:
    """Write a datetime as ``YYYY-MM-DDThh:mm:ss[.s]Z`` in UTC, the form the spec recommends.

    :raises InvalidValueError: for a naive datetime, whose time zone would be a guess.
    """
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidValueError(f"{value!r} has no time zone; ResourceSync datetimes need one")
    utc = value if value.tzinfo is UTC else value.astimezone(UTC)
    text = (f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T"  # strftime is 3x slower
            f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}".rstrip("0")
    return text + "Z"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros(value: datetime | None, what: str = "lastmod") -> int | None:
    """Microseconds since the epoch: exact, and ordered as the instants are.

    :raises InvalidValueError: ``value`` has no time zone (``what`` names it).
    """
    if value is None:
        return None
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidValueError(f"{what} {value!r} has no time zone")
    return (value - _EPOCH) // timedelta(microseconds=1)


def as_datetime(value: int | None) -> datetime | None:
    """The instant of :func:`micros`."""
    return None if value is None else _EPOCH + timedelta(microseconds=value)
