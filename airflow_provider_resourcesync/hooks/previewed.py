"""A destination looked at and not written, for a dry run: a local folder's work folder, which
:class:`~..storage.local.LocalDestination` makes when opened, is taken away again, and the
folders above it that were not there before (the destination's own too, if it was missing), so
that a dry run leaves the place as it found it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..storage.base import Destination
from ..storage.keys import RESERVED_PREFIX
from ..storage.local import WORK_FOLDER, LocalDestination
from .destination import DestinationURL, destination_from_url

__all__ = ["previewed"]


@contextmanager
def previewed(url: str, *, aws_conn_id: str | None) -> Iterator[Destination]:
    """The destination at ``url`` (:func:`~.destination.destination_from_url`), for reading
    only; closed on exit, and the folders opening it made removed (those still empty)."""
    where = DestinationURL.parse(url)
    made: list[Path] = []
    if where.scheme == "file":
        root = Path(where.path)
        made = [folder for folder in (root / WORK_FOLDER, root / RESERVED_PREFIX, root)
                if not folder.exists()]  # deepest first
    destination = destination_from_url(url, aws_conn_id=aws_conn_id)
    try:
        yield destination
    finally:
        if isinstance(destination, LocalDestination):
            destination.close()
        for folder in made:
            try:
                os.rmdir(folder)
            except OSError:  # not empty: something was put there meanwhile, and stays
                break
