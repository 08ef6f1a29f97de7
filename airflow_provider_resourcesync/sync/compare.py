"""Whether an object the mirror holds is the resource the Source describes, without reading it.

The Source's description (``hash``, ``length``, ``lastmod``) is compared with the one stored with
the object (:class:`~..storage.base.ObjectInfo`): a hash in an algorithm both sides have decides;
where the Source lists no hash we can compute, ``lastmod`` and ``length`` do. With nothing to
compare the answer is "unknown": a baseline then fetches again, an audit does not call it a
mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..errors import UnsafeContentError
from ..protocol.hashes import Hashes
from ..protocol.model import Entry, Metadata
from ..storage.base import ObjectInfo
from ..storage.keys import normalized

__all__ = ["Expected", "agrees", "identity"]


@dataclass(frozen=True, slots=True)
class Expected:
    """What the Source says a resource is."""

    uri: str
    hashes: Hashes | None = None
    length: int | None = None
    lastmod: datetime | None = None
    type: str | None = None

    @classmethod
    def of(cls, entry: Entry) -> Expected:
        md = entry.md
        if md is None:
            return cls(entry.loc, lastmod=entry.lastmod)
        return cls(entry.loc, md.hash or None, md.length, entry.lastmod, md.type)

    def entry(self) -> Entry:
        """An entry to fetch the resource by (its ``loc`` and description)."""
        return Entry(self.uri, lastmod=self.lastmod,
                     md=Metadata(hash=self.hashes, length=self.length, type=self.type))


def agrees(expected: Expected, held: ObjectInfo) -> bool | None:
    """True: ``held`` is the described resource; False: it differs (another resource, length,
    hash, or, with no hash listed, ``lastmod``); None: nothing could be compared. URIs are
    compared by their normal form: another spelling of a URI is the same resource."""
    if identity(held.uri) != identity(expected.uri):
        return False
    if expected.length is not None and expected.length != held.length:
        return False
    listed = expected.hashes.values if expected.hashes else ()
    known = [value for value in listed if value.is_known]
    compared = False
    for value in known:
        digest = held.hashes.get(value.algorithm)
        if digest is None:
            continue
        if digest.lower() != value.digest.lower():
            return False
        compared = True
    if compared:
        return True
    if known or expected.lastmod is None:  # a hash we do not hold, or nothing to go by
        return None
    return held.lastmod == expected.lastmod


def identity(uri: str) -> str:
    """What names a resource: its URI's normal form, or the URI itself where it has none (such
    a URI is refused wherever it is fetched or mapped)."""
    try:
        return normalized(uri)
    except UnsafeContentError:
        return uri
