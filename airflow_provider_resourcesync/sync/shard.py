"""A stable partition of a Source's resources: for baselines sharded with dynamic task mapping,
and between the worker processes of one baseline (:mod:`.processes`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..errors import ConfigurationError

__all__ = ["Shard", "part_of"]


def part_of(uri: str, count: int) -> int:
    """The part of ``count`` that ``uri`` belongs to: a hash of the URI decides, so always the
    same one, whatever the order of the list or the run."""
    digest = hashlib.sha256(uri.encode("utf-8", errors="surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count


@dataclass(frozen=True, slots=True)
class Shard:
    """Part ``index`` of ``count``: a resource belongs to exactly one part, always the same one,
    whatever the order of the list or the run (a hash of its URI decides)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ConfigurationError(f"shard {self.index} of {self.count} does not exist")

    def holds(self, uri: str) -> bool:
        return part_of(uri, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index + 1}-of-{self.count}"
