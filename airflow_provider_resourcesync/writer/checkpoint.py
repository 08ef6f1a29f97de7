"""The checkpoint record, ``checkpoint.json``: the caller's last checkpoint, when the mirror
saved it, its Change List Index (once there is one), its public URL and the Resource List's
``at``. Written last by a save: the recovery path when the XCom is gone."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import DocumentError, InvalidValueError
from ..protocol.datetimes import format_datetime, parse_datetime
from ..storage.base import Destination
from ..storage.keys import RESERVED_PREFIX
from .documents import CHECKPOINT

__all__ = ["SavedRecord", "checkpoint_key", "saved_checkpoint"]

_VERSION = 1


@dataclass(frozen=True, slots=True)
class SavedRecord:
    """What ``checkpoint.json`` holds."""

    saved_at: datetime
    changelist: str | None
    checkpoint: dict[str, Any] | None
    public_url: str | None
    #: The Resource List's ``at``; None in records written before it was kept.
    snapshot_at: datetime | None = None

    def to_bytes(self) -> bytes:
        """:raises InvalidValueError: the checkpoint cannot be written as JSON."""
        try:
            text = json.dumps({
                "version": _VERSION, "saved_at": format_datetime(self.saved_at),
                "changelist": self.changelist, "checkpoint": self.checkpoint,
                "public_url": self.public_url,
                "snapshot_at": format_datetime(self.snapshot_at) if self.snapshot_at else None,
            }, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise InvalidValueError(f"the checkpoint cannot be written as JSON: {exc}") from exc
        return text.encode()

    @classmethod
    def parse(cls, data: bytes, url: str) -> SavedRecord:
        """:raises DocumentError: ``data`` is not a record of ours (``url`` names it)."""
        try:
            value = json.loads(data)
            if value["version"] != _VERSION:
                raise ValueError(f"version {value['version']!r}, not {_VERSION}")
            saved_at = parse_datetime(value["saved_at"])
            snapshot_at = parse_datetime(value["snapshot_at"]) if value.get("snapshot_at") \
                else None
            missing = {"changelist", "checkpoint"} - value.keys()
            if missing:
                raise KeyError(", ".join(sorted(missing)))
        except (ValueError, KeyError, TypeError) as exc:
            raise DocumentError(f"the mirror's checkpoint is not readable: {exc}",
                                url=url) from exc
        return cls(saved_at, value["changelist"], value["checkpoint"], value.get("public_url"),
                   snapshot_at)


def checkpoint_key(location: str = RESERVED_PREFIX) -> str:
    """The key of ``checkpoint.json`` of a writer whose documents live under ``location``."""
    return location + CHECKPOINT.removeprefix(RESERVED_PREFIX)


def saved_checkpoint(destination: Destination, location: str = RESERVED_PREFIX
                     ) -> dict[str, Any] | None:
    """The checkpoint a writer whose documents live under ``location`` (the mirror's, by
    default; a publisher's ``""``) saved at ``destination``, reading nothing else (for a
    sensor, say); None: no run saved one.

    :raises DocumentError: the saved record is not readable.
    """
    key = checkpoint_key(location)
    data = destination.read_bytes(key)
    if data is None:
        return None
    return SavedRecord.parse(data, destination.object_url(key)).checkpoint
