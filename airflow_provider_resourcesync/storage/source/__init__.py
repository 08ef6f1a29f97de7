"""The Source writer: a collection's ResourceSync documents kept at a destination over time
(docs/design.md, "The Source writer"): the lookup index (:mod:`.shards`, :mod:`.held`), the
journal (:mod:`.journal`), the snapshot (:mod:`.snapshot`), one run's record store
(:mod:`.records`), the documents' keys and URLs (:mod:`.documents`) and the checkpoint record
(:mod:`.checkpoint`); ``storage.state.MirrorState`` keeps the mirror's state over them."""

from __future__ import annotations

from .held import Held
from .shards import ShardIndex

__all__ = ["Held", "ShardIndex"]
