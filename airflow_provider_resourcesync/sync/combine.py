"""Sharded baselines: where each shard keeps its view, and how the views become the mirror's state.

Shards run at once (dynamic task mapping), so none may write the mirror's state: each saves its
complete view of its partition under :func:`shard_location`, and :func:`combine_shards`, run once
they all succeeded, makes the mirror's state out of the views, then applies the changes made
after the listing the shards read, which they left out (a late joiner's catch-up).
"""

from __future__ import annotations

import logging

from ..client.sync_client import ResourceSyncClient
from ..errors import ConfigurationError
from ..storage.base import Destination
from ..storage.keys import RESERVED_PREFIX, KeyMapper
from ..writer import MirrorState
from .catch_up import TO_CATCH_UP, caught_up
from .checkpoint import Checkpoint, combine
from .log import Log
from .shard import Shard

__all__ = ["combine_shards", "shard_location"]

_log = logging.getLogger(__name__)


def shard_location(shard: Shard) -> str:
    """Where a shard keeps its view of its partition: ``.resourcesync/shards/<i+1>-of-<n>/``."""
    return f"{RESERVED_PREFIX}shards/{shard}/"


def combine_shards(destination: Destination, checkpoints: list[Checkpoint], *,
                   client: ResourceSyncClient | None = None, mapper: KeyMapper | None = None,
                   concurrency: int = 16, log: Log | None = None) -> Checkpoint:
    """The mirror's state from the views of the shards of one baseline, saved with their
    combined checkpoint; the views are deleted then. Where the shards' listing is older than
    changes the Source's Change Lists offer, the shards left those resources out: they are
    applied from the Change Lists now (with ``client``), and the checkpoint stands after them.

    :param checkpoints: what each shard returned, every shard once.
    :param client: reads the changes to catch up with; None: the checkpoint stays at the
        listing's ``at`` (its ``to_catch_up`` stat counts them) and the next incremental run
        applies them.
    :param mapper: URI -> key mapping, the shards' (the default layout if None).
    :param concurrency: the most resources the catch-up has in progress at once.
    :raises ConfigurationError: shards missing, repeated, from different runs, or a view at the
        destination that is not the one its shard returned (another run's, or an unfinished one).
    """
    log = log or _log
    combined = combine(checkpoints)
    with MirrorState.load(destination) as state:
        for checkpoint in checkpoints:
            assert checkpoint.shard is not None  # combine() checked
            location = shard_location(checkpoint.shard)
            with MirrorState.load(destination, location=location) as view:
                found = view.checkpoint()
                if found is None or Checkpoint.from_json(found) != checkpoint:
                    raise ConfigurationError(
                        f"{destination.url}{location} does not hold the view of shard "
                        f"{checkpoint.shard} that its checkpoint describes: re-run that shard")
                if view.public_base_url is not None:  # the one the shards were given
                    state.public_base_url = view.public_base_url
                for record in view.records():
                    state.put(record)
                    state.mark_seen(record.uri)
        removed = 0
        for uri in state.unseen():  # the partitions cover every URI: the shards dropped these
            state.remove(uri)
            removed += 1
        state.save(checkpoint=combined.to_json())
        held = len(state)
    for checkpoint in checkpoints:
        assert checkpoint.shard is not None
        for key in list(destination.keys(shard_location(checkpoint.shard))):
            destination.delete(key)
    log.info("Combined %s shards of the baseline of %s : the mirror holds %s resources (%s "
             "dropped from its state); stats %s", len(checkpoints), combined.document, held,
             removed, combined.stats)
    if not combined.stats.get(TO_CATCH_UP):
        return combined
    if client is None:
        log.warning("%s resources changed after the listing the shards read: the next "
                    "incremental run from this checkpoint applies them",
                    combined.stats[TO_CATCH_UP])
        return combined
    return caught_up(client, destination, combined, mapper=mapper, concurrency=concurrency,
                     log=log)
