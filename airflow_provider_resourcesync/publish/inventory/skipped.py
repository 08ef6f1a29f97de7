"""Keys no URL can carry (:func:`.objects.unpublishable`), left out of an inventory and counted,
so that one such key, which anyone who can write into the prefix can make, does not stop the
publication: the run fails only when more than a set share of the keys in scope are skipped
(an inventory read wrongly, a bucket written by a broken client).

A skipped key never reaches the rest of the publisher: it is in no entry, no objects record and
no document, so a later run neither publishes it nor trips on it; it is skipped again, and
counted again, while it is there.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from typing import TypeVar

from ...errors import ConfigurationError, InventoryError
from ...storage.base import shown_key
from .objects import unpublishable

__all__ = ["DEFAULT_SHARE", "EXAMPLES", "Skipped"]

#: The share of the keys in scope that may be skipped before a run fails, by default.
DEFAULT_SHARE = 0.01
#: The skipped keys named, in messages and in the operator's XCom.
EXAMPLES = 3
T = TypeVar("T")
S = TypeVar("S", bound=Sized)


class Skipped:
    """The keys an inventory skipped: how many, and the first :data:`EXAMPLES` of them with why.

    :param share: a run fails once more than this share (0 to 1) of the keys in scope are
        skipped; 0: any such key fails it.
    :raises ConfigurationError: a share outside 0 to 1.
    """

    def __init__(self, share: float = DEFAULT_SHARE) -> None:
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
            raise ConfigurationError(f"the share of keys that may be skipped, {share!r}: give a "
                                     f"number from 0 to 1 (default {DEFAULT_SHARE})")
        self.share = share
        self.count = 0
        self.examples: list[str] = []

    def key(self, key: str) -> str | None:
        """``key`` if a URL can carry it; else None, and the key counted."""
        why = unpublishable(key)
        if why is None:
            return key
        self.add(shown_key(key), why)
        return None

    def add(self, shown: str, why: str) -> None:
        """Count a key skipped (``shown`` as messages show it) because it ``why``."""
        self.count += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(f"{shown} {why}")

    def counted(self, items: Iterable[T], where: str) -> Iterator[T]:
        """``items`` (one a key kept) passed through; at their end, :meth:`check`."""
        kept = 0
        for item in items:
            kept += 1
            yield item
        self.check(kept, where)

    def counted_batches(self, batches: Iterable[S], where: str) -> Iterator[S]:
        """:meth:`counted` for ``batches`` of kept keys (a report's entries)."""
        kept = 0
        for batch in batches:
            kept += len(batch)
            yield batch
        self.check(kept, where)

    def check(self, kept: int, where: str) -> None:
        """:raises InventoryError: more than :attr:`share` of the keys (``kept`` and those
        skipped) were skipped (the count and a few of them named)."""
        total = kept + self.count
        if self.count > self.share * total:
            raise InventoryError(
                f"{where}: {self.count:,} of {total:,} keys cannot be published as URLs, more "
                f"than the {self.share:.2%} that may be skipped ({self.summary()}); rename "
                "those objects or move them out of the published prefix, or allow a larger "
                "share (max_skipped_share)")

    def summary(self) -> str:
        """The examples, for a message or a log line."""
        return "e.g. " + "; ".join(self.examples) if self.examples else "none"

    def as_dict(self) -> dict[str, object]:
        """How many keys were skipped, and a few of them: for the operator's XCom."""
        return {"count": self.count, "examples": list(self.examples)}
