"""A late joiner's catch-up: a baseline's listing older than the Source's later changes, brought
up to date from its Change Lists (spec 10.1 with 12.1: a Destination baselines, then applies the
changes since the snapshot; docs/design.md, "Late joiners")."""

from __future__ import annotations

from dataclasses import replace

from ..client.sync_client import ResourceSyncClient
from ..storage.base import Destination
from ..storage.keys import KeyMapper
from .checkpoint import Checkpoint
from .log import Log

__all__ = ["TO_CATCH_UP", "caught_up"]

#: A shard's stat: the URIs of its partition changed after the listing, left out of it for the
#: catch-up once the shards are combined.
TO_CATCH_UP = "to_catch_up"


def caught_up(client: ResourceSyncClient, destination: Destination, checkpoint: Checkpoint, *,
              mapper: KeyMapper | None, concurrency: int, log: Log) -> Checkpoint:
    """The changes after the baseline's listing applied from the Source's Change Lists (its
    Capability List is ``checkpoint.source``): the baseline's checkpoint, standing after them,
    its stats counting what they fetched and removed (``changed_after``: the resources they
    changed)."""
    from .incremental import run_incremental  # the incremental engine baselines on a gap

    log.info("Catching up with the changes after the listing's at")
    caught = run_incremental(client, destination, capability_list_url=checkpoint.source,
                             checkpoint=checkpoint, method="changelist", mapper=mapper,
                             concurrency=concurrency, log=log)
    stats = {name: value for name, value in checkpoint.stats.items() if name != TO_CATCH_UP}
    for name in ("fetched", "removed", "failed", "bytes"):
        stats[name] = stats.get(name, 0) + caught.stats.get(name, 0)
    stats["changed_after"] = caught.stats.get("resources", 0)
    return replace(checkpoint, position=caught.position, stats=stats)
