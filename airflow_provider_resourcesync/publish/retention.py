"""Retention: how long a publication keeps its changes (docs/publishing.md, "Retention").

The Source writer retires the Change Lists and the Change Dumps that end before
``keep_changes_for`` ago (never one the Resource List lacks), their index first
(:meth:`~..writer.source_writer.SourceWriter.retire`); a Change Dump's packages and their
manifest copies go with it, deleted by :func:`dropping_packages` before the Change Dump itself.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from ..protocol.model import Entry
from ..storage.base import Destination
from ..writer import name_of

__all__ = ["KEEP_CHANGES_FOR", "dropping_packages"]

#: How long a publication keeps its Change Lists, Change Dumps and packages by default: a
#: follower that runs at least monthly never has to baseline again.
KEEP_CHANGES_FOR = timedelta(days=30)


def dropping_packages(destination: Destination, folder: str) -> Callable[[list[Entry]], None]:
    """What deletes the packages a retired Change Dump lists (``entries``), each with the
    manifest copy its ``contents`` link names, from ``folder`` (their key prefix)."""

    def drop(entries: list[Entry]) -> None:
        for entry in entries:
            for url in (entry.loc, *(link.href for link in entry.links
                                     if link.rel == "contents")):
                destination.delete(folder + name_of(url))

    return drop
