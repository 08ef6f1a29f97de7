"""Checkpoints: the small, versioned JSON a sync run returns as its XCom (DESIGN.md "Checkpoints").

A checkpoint says what was synced (the Source's Capability List and the document used), to where,
and up to which point of the Source's changes: a baseline from a Resource List stands at its
``at`` (spec 10.1); an incremental run at the position after its last committed change (12.1).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ..errors import ConfigurationError
from ..protocol.datetimes import format_datetime, parse_datetime
from ..protocol.position import ChangePosition
from .shard import Shard

__all__ = ["VERSION", "Checkpoint", "combine"]

VERSION = 1


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Where a mirror stands.

    :param kind: ``"baseline"`` or ``"incremental"``.
    :param source: the Source's Capability List URL.
    :param document: the document synced from (Resource List, Resource Dump, Change List...).
    :param destination: the destination's URL.
    :param at: the snapshot time the mirror reflects (a Resource List's ``at``).
    :param position: where the mirror stands in the Source's changes.
    :param shard: the part of the resources this run covered, for a sharded baseline.
    :param stats: counts of the run (listed, fetched, unchanged, removed, failed, bytes...).
    """

    kind: str
    source: str
    document: str
    destination: str
    at: datetime | None
    position: ChangePosition
    shard: Shard | None = None
    stats: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "kind": self.kind,
            "source": self.source,
            "document": self.document,
            "destination": self.destination,
            "at": format_datetime(self.at) if self.at else None,
            "position": self.position.to_json(),
            "shard": [self.shard.index, self.shard.count] if self.shard else None,
            "stats": dict(self.stats),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        """Read a checkpoint back.

        :raises ConfigurationError: not a checkpoint of a version we read.
        """
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise ConfigurationError(
                f"not a ResourceSync checkpoint of version {VERSION}: {str(data)[:200]!r}")
        try:
            return cls(
                kind=data["kind"], source=data["source"], document=data["document"],
                destination=data["destination"],
                at=parse_datetime(data["at"]) if data.get("at") else None,
                position=ChangePosition.from_json(data["position"]),
                shard=Shard(*data["shard"]) if data.get("shard") else None,
                stats={str(k): int(v) for k, v in (data.get("stats") or {}).items()},
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigurationError(f"malformed checkpoint ({error}): {str(data)[:200]!r}"
                                     ) from None


def combine(checkpoints: list[Checkpoint]) -> Checkpoint:
    """One checkpoint for the shards of one sharded baseline: every shard present once, the same
    Source, document, destination and snapshot; stats added up.

    :raises ConfigurationError: shards missing, repeated, or from different runs.
    """
    if not checkpoints:
        raise ConfigurationError("no checkpoints to combine")
    first = checkpoints[0]
    count = first.shard.count if first.shard else 1
    indexes = sorted(c.shard.index for c in checkpoints if c.shard)
    if indexes != list(range(count)) or any(
            (c.source, c.document, c.destination, c.at) !=
            (first.source, first.document, first.destination, first.at) for c in checkpoints):
        raise ConfigurationError(
            f"checkpoints are not the {count} shards of one baseline: shards {indexes}, "
            f"documents {sorted({c.document for c in checkpoints})}")
    stats: dict[str, int] = {}
    for checkpoint in checkpoints:
        for name, value in checkpoint.stats.items():
            stats[name] = stats.get(name, 0) + value
    return replace(first, shard=None, stats=stats)
