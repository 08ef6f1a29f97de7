"""A change read and the position before it as plain values (strings, numbers, None, tuples,
dicts), which :mod:`marshal` turns into compact bytes fast: how a run's coalesced changes wait
in a scratch database. Entries and the records kept of them travel to and from a baseline's
worker processes the same way (pickling the model's objects costs several times more).

The trip is exact for every value the reader produces: each field of the entry, its ``rs:md``
and ``rs:ln`` (``extra`` and ``line`` too), the list and index it came from, ``doubtful``, and
the position. Datetimes travel as ISO 8601 text; one read with no time zone keeps its
:data:`~..protocol.datetimes.ZONE_ASSUMED` mark. Measured against the alternatives (an
``<url>`` written by the protocol writer and read back, a JSON form, pickled model objects),
this form costs the least per change and is the smallest but for the XML, which loses
``line`` and the mark.
"""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any, overload

from ..client.navigate import ChangeItem
from ..protocol.datetimes import ZONE_ASSUMED
from ..protocol.hashes import Hashes, HashValue
from ..protocol.model import Entry, Link, Metadata
from ..protocol.position import ChangeListRef, ChangePosition
from ..writer import ObjectRecord
from .tally import Outcome

__all__ = ["entry_from_plain", "entry_plain", "from_plain", "outcome_from_plain", "outcome_plain",
           "record_from_plain", "record_plain", "to_plain"]

Plain = tuple[Any, ...]

_ASSUMED = "?"  # appended to the text of a time read with no time zone
_OUTCOME_FIELDS = tuple(field.name for field in fields(Outcome))  # every one, in order


def to_plain(item: ChangeItem, before: ChangePosition) -> Plain:
    ref = item.list
    return (*entry_plain(item.entry), ref.url, _time(ref.from_), _time(ref.until), item.index,
            item.doubtful, _time(before.time), before.list_url, _time(before.list_from),
            before.consumed, before.last)


def from_plain(plain: Plain) -> tuple[ChangeItem, ChangePosition]:
    """What :func:`to_plain` was given."""
    (url, from_, until, index, doubtful, time, list_url, list_from, consumed,
     last) = plain[_ENTRY_FIELDS:]
    item = ChangeItem(ChangeListRef(url, _from_time(from_), _from_time(until)), index,
                      entry_from_plain(plain[:_ENTRY_FIELDS]), doubtful)
    return item, ChangePosition(_from_time(time), list_url, _from_time(list_from), consumed,
                                last)


def entry_plain(entry: Entry) -> Plain:
    return (entry.loc, _time(entry.lastmod), entry.changefreq, _md(entry.md),
            tuple(map(_link, entry.links)), entry.extra, entry.line)


_ENTRY_FIELDS = 7


def entry_from_plain(plain: Plain) -> Entry:
    """What :func:`entry_plain` was given."""
    loc, lastmod, changefreq, md, links, extra, line = plain
    return Entry(loc, _from_time(lastmod), changefreq, _from_md(md),
                 tuple(map(_from_link, links)), extra, line)


def record_plain(record: ObjectRecord) -> Plain:
    return (record.uri, record.key, record.length, _hashes(record.hashes),
            _time(record.lastmod), record.type)


def record_from_plain(plain: Plain) -> ObjectRecord:
    """What :func:`record_plain` was given."""
    uri, key, length, hashes, lastmod, type_ = plain
    return ObjectRecord(uri, key, length, _from_hashes(hashes), _from_time(lastmod), type_)


def _md(md: Metadata | None) -> Plain | None:
    if md is None:
        return None
    return (md.capability, _time(md.at), _time(md.completed), _time(md.from_), _time(md.until),
            md.change, _time(md.datetime), _hashes(md.hash), md.length, md.type, md.encoding,
            md.path, md.extra)


def _from_md(plain: Plain | None) -> Metadata | None:
    if plain is None:
        return None
    (capability, at, completed, from_, until, change, when, hashes, length, type_, encoding,
     path, extra) = plain
    return Metadata(capability, _from_time(at), _from_time(completed), _from_time(from_),
                    _from_time(until), change, _from_time(when), _from_hashes(hashes), length,
                    type_, encoding, path, extra)


def _link(link: Link) -> Plain:
    return (link.rel, link.href, link.pri, _time(link.modified), _hashes(link.hash), link.length,
            link.type, link.encoding, link.path, link.extra)


def _from_link(plain: Plain) -> Link:
    rel, href, pri, modified, hashes, length, type_, encoding, path, extra = plain
    return Link(rel, href, pri, _from_time(modified), _from_hashes(hashes), length, type_,
                encoding, path, extra)


def _hashes(hashes: Hashes | None) -> Plain | None:
    if hashes is None:
        return None
    return tuple((value.algorithm, value.digest) for value in hashes.values)


@overload
def _from_hashes(plain: Plain) -> Hashes: ...
@overload
def _from_hashes(plain: None) -> None: ...
def _from_hashes(plain: Plain | None) -> Hashes | None:
    if plain is None:
        return None
    return Hashes(tuple(HashValue(algorithm, digest) for algorithm, digest in plain))


def _time(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is ZONE_ASSUMED:
        return value.replace(tzinfo=None).isoformat() + _ASSUMED
    return value.isoformat()


def _from_time(text: str | None) -> datetime | None:
    if text is None:
        return None
    if text.endswith(_ASSUMED):
        return datetime.fromisoformat(text[:-1]).replace(tzinfo=ZONE_ASSUMED)
    return datetime.fromisoformat(text)


def outcome_plain(outcome: Outcome) -> Plain:
    """A resource's outcome, each of its fields in order."""
    return tuple([getattr(outcome, name) for name in _OUTCOME_FIELDS])


def outcome_from_plain(plain: Plain) -> Outcome:
    """The outcome of :func:`outcome_plain`."""
    return Outcome(*plain)
