"""The mirror's key layout, recorded in ``layout.json`` under ``.resourcesync/`` before its first
object, so that every later run makes keys as the first one did (:mod:`..storage.keys`).

A mirror with a state and no record was made before layouts were recorded: its layout is
``escaped``, and is recorded so. A new mirror takes the layout asked for, ``readable`` if none.
"""

from __future__ import annotations

import json

from ..errors import ConfigurationError, DocumentError
from ..storage.base import Destination
from ..storage.keys import ESCAPED, LAYOUTS, RESERVED_PREFIX, KeyMapper, Layout

__all__ = ["LAYOUT", "held_layout", "settled"]

#: Where the mirror records its key layout.
LAYOUT = RESERVED_PREFIX + "layout.json"


def held_layout(destination: Destination) -> Layout | None:
    """The layout recorded at ``destination``; None: none recorded.

    :raises DocumentError: the record is not one of ours.
    """
    data = destination.read_bytes(LAYOUT)
    if data is None:
        return None
    try:
        return LAYOUTS[json.loads(data)["key_layout"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise DocumentError(f"the mirror's key layout record is not readable: {exc!r}",
                            url=destination.object_url(LAYOUT)) from None


def settled(destination: Destination, mapper: KeyMapper | None, *, made: bool,
            record: bool = True) -> KeyMapper:
    """``mapper`` (None: the default one) in the layout of the mirror at ``destination``:
    the recorded one; else ``escaped`` for a mirror ``made`` before there was a record, else
    the one asked for. Recorded unless ``record`` is False (a run that writes nothing).

    :raises ConfigurationError: the mapper asks for another layout than the mirror's.
    """
    mapper = mapper or KeyMapper()
    layout = held_layout(destination)
    if layout is None:
        layout = ESCAPED if made else mapper.layout
        if record:
            destination.write_bytes(LAYOUT, json.dumps({"key_layout": layout.name}).encode(),
                                    "application/json")
    if mapper.asked not in (None, layout.name):
        raise ConfigurationError(
            f"key_layout={mapper.asked!r}: the mirror at {destination.url} keeps its keys in the "
            f"{layout.name!r} layout ({LAYOUT}); leave key_layout unset to go on with it, or "
            f"baseline into a new destination or prefix with key_layout={mapper.asked!r}")
    return mapper.in_layout(layout)
