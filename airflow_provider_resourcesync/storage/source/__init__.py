"""The Source writer: a collection's ResourceSync documents kept at a destination over time
(docs/design.md, "The Source writer"): the lookup index (:mod:`.shards`, :mod:`.held`), the
journal (:mod:`.journal`), the snapshot (:mod:`.snapshot`), one run's record store
(:mod:`.records`), the documents' keys and URLs (:mod:`.documents`) and the checkpoint record
(:mod:`.checkpoint`), kept together by :class:`~.writer.SourceWriter`; the mirror's state
(``storage.state.MirrorState``) is one, the publisher's documents another."""

from __future__ import annotations

from .held import Held
from .shards import ShardIndex
from .writer import SourceWriter

__all__ = ["Held", "ShardIndex", "SourceWriter"]
