"""The mirror describes itself (spec 14.8): :class:`MirrorState` is the Source writer at
``.resourcesync/`` beside the mirror's objects, each entry with a ``via`` link to its origin;
a copy of the Source Description at ``.well-known/resourcesync`` if asked
(:func:`publish_well_known`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from ..errors import ConfigurationError, InvalidValueError, shown
from ..protocol.model import MAX_ENTRIES
from ..storage.base import Destination
from ..storage.keys import RESERVED_PREFIX, KeyMapper
from .documents import DESCRIPTION, DOCUMENTS_MAX_AGE, XML, documents_cache_control
from .layout import settled
from .source_writer import RESOURCE_LIST_MAX_AGE, SourceWriter

__all__ = ["WELL_KNOWN", "MirrorState", "check_well_known", "publish_well_known"]

#: Where a Destination looks for a Source's Source Description first (6.3.2, RFC 5785): the
#: mirror keeps a copy of its own there when it is served at the root of a host.
WELL_KNOWN = ".well-known/resourcesync"


class MirrorState(SourceWriter):
    """What the mirror holds, for one run: a :class:`~.source_writer.SourceWriter` whose
    objects sit beside its documents, each entry with a ``via`` link to its origin (14.8).

    :param location: :data:`RESERVED_PREFIX`, or a folder below it (a shard of a sharded
        baseline keeps its own view there).
    :param documents_max_age: how long a cache in front of ``public_base_url`` may keep a
        document that runs rewrite.
    :param max_entries: the most entries in one document (:class:`.SourceWriter`'s).
    """

    def __init__(self, destination: Destination, *, public_base_url: str | None = None,
                 location: str = RESERVED_PREFIX,
                 clock: Callable[[], datetime] | None = None,
                 resource_list_max_age: timedelta | None = RESOURCE_LIST_MAX_AGE,
                 documents_max_age: timedelta = DOCUMENTS_MAX_AGE,
                 max_entries: int = MAX_ENTRIES) -> None:
        if not location.startswith(RESERVED_PREFIX) or not location.endswith("/"):
            raise InvalidValueError(f"state location {location!r} must be {RESERVED_PREFIX!r} "
                                    "or a folder below it, ending with '/'")
        super().__init__(destination, public_base_url=public_base_url, location=location,
                         clock=clock, resource_list_max_age=resource_list_max_age,
                         documents_max_age=documents_max_age, max_entries=max_entries)

    def keys(self, mapper: KeyMapper | None, *, record: bool = True) -> KeyMapper:
        """``mapper`` (None: the default) in the key layout of this mirror, recorded before
        its first object unless ``record`` is False (:func:`.layout.settled`).

        :raises ConfigurationError: ``mapper`` asks for another layout than the mirror's.
        """
        return settled(self.destination, mapper, made=self.made, record=record)


def check_well_known(key_prefixes: Mapping[str, str] | None) -> None:
    """Refuse key prefixes that could put a resource where :func:`publish_well_known` writes
    (a URI mapped onto ``.well-known/`` could be ``.../resourcesync``; one mapped under
    ``.well-known/resourcesync/`` needs it to be a folder on local disk). The default layout
    cannot: its keys start with the scheme.

    :raises ConfigurationError: a key prefix clashes; nothing is written.
    """
    for uri_prefix, key_prefix in (key_prefixes or {}).items():
        if WELL_KNOWN.startswith(key_prefix) or key_prefix.startswith(WELL_KNOWN + "/"):
            raise ConfigurationError(
                f"key_prefixes maps {uri_prefix!r} to {key_prefix!r}, where a resource could "
                f"take the place of the mirror's Source Description at {WELL_KNOWN!r}: map it "
                "to another key prefix, or leave well_known off")


def publish_well_known(destination: Destination, *, description: str = DESCRIPTION,
                       max_age: timedelta = DOCUMENTS_MAX_AGE) -> bool:
    """Copy the mirror's Source Description (a publication's: at ``description``) to
    :data:`WELL_KNOWN` at ``destination``, where a Destination of it served at the root of a
    host finds it (6.3.2), for caches to keep ``max_age``, as the description itself. Called
    after a save, so it never points at a Capability List not yet written; a mirror with none
    saved yet gets none. Whether it was written.

    :raises ConfigurationError: a resource of the mirror is stored there (mapped by key
        prefixes of an earlier run); it is left as it is.
    :raises DestinationError: the destination refused the write.
    """
    body = destination.read_bytes(description)
    if body is None:
        return False
    held = destination.info(WELL_KNOWN)  # the mirror's own documents carry no description
    if held is not None:
        raise ConfigurationError(
            f"{destination.object_url(WELL_KNOWN)} holds the resource {shown(held.uri)!r}, "
            "not a Source "
            "Description: map that resource to another key prefix and baseline again, or "
            "leave well_known off")
    destination.write_bytes(WELL_KNOWN, body, XML,
                            cache_control=documents_cache_control(max_age))
    return True
