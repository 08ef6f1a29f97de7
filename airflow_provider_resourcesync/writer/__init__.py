"""The Source writer, the layer between ``storage`` and the engines (``sync``, ``publish``): a
collection's ResourceSync documents kept at a destination over time (docs/design.md, "The Source
writer"). :class:`SourceWriter` keeps together the snapshot (:mod:`.snapshot`), the journal
(:mod:`.journal`), the lookup index (:mod:`.shards`) of records (:mod:`.record`), one run's
record store (:mod:`.records`), the documents' keys and URLs (:mod:`.documents`), the saved
checkpoint (:mod:`.checkpoint`) and the mirror's key layout (:mod:`.layout`);
:class:`MirrorState` (:mod:`.mirror`) is the mirror's, the publisher's documents another."""

from __future__ import annotations

from .checkpoint import checkpoint_key, saved_checkpoint
from .documents import (
    CAPABILITY_LIST,
    CHANGE_LIST_INDEX,
    CHANGES,
    CHECKPOINT,
    DESCRIPTION,
    DOCUMENTS_MAX_AGE,
    IMMUTABLE,
    NAMESPACE,
    RESOURCE_LIST,
    XML,
    base_url,
    documents_cache_control,
    name_of,
)
from .journal import Journal, stamp_at
from .layout import LAYOUT
from .mirror import WELL_KNOWN, MirrorState, check_well_known, publish_well_known
from .record import ObjectRecord
from .shards import ShardIndex
from .source_writer import RESOURCE_LIST_MAX_AGE, SourceWriter

__all__ = [
    "CAPABILITY_LIST",
    "CHANGES",
    "CHANGE_LIST_INDEX",
    "CHECKPOINT",
    "DESCRIPTION",
    "DOCUMENTS_MAX_AGE",
    "IMMUTABLE",
    "LAYOUT",
    "NAMESPACE",
    "RESOURCE_LIST",
    "RESOURCE_LIST_MAX_AGE",
    "WELL_KNOWN",
    "XML",
    "Journal",
    "MirrorState",
    "ObjectRecord",
    "ShardIndex",
    "SourceWriter",
    "base_url",
    "check_well_known",
    "checkpoint_key",
    "documents_cache_control",
    "name_of",
    "publish_well_known",
    "saved_checkpoint",
    "stamp_at",
]
