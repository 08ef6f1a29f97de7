"""The Source writer: a collection's ResourceSync documents kept at a destination over time
(docs/design.md, "The Source writer"). So far its lookup index (:mod:`.shards`)."""

from __future__ import annotations

from .held import Held
from .shards import ShardIndex

__all__ = ["Held", "ShardIndex"]
