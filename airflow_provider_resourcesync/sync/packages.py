"""A dump's package, downloaded and checked whole before anything of it is written (11.1, 13.1)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..client.sync_client import ResourceSyncClient
from ..errors import DocumentError, ResourceSyncError
from ..protocol.model import DocumentKind, Entry
from ..protocol.package import DumpPackage, open_package

__all__ = ["fetched_package"]


@contextmanager
def fetched_package(client: ResourceSyncClient, package: Entry, manifest: DocumentKind,
                    dump: str, refused: Callable[[str, str], None]) -> Iterator[DumpPackage | None]:
    """The package a dump lists, downloaded into a temporary file, verified (its ``hash``,
    ``length``) and opened, checked by :func:`open_package`; its manifest must be a
    ``manifest``. Refused, it is None, and ``refused(url, why)`` was told.

    :param dump: the dump's title, for the error ("Resource Dump").
    """
    with tempfile.TemporaryFile(prefix="resourcesync-package-") as file:
        try:
            client.download(package.loc, file, expected=package.md)
            opened = open_package(file, url=package.loc)
            if opened.kind is not manifest:
                opened.close()
                raise DocumentError(f"a {opened.kind.title} package in a {dump}",
                                    url=package.loc, section=manifest.section)
        except ResourceSyncError as error:
            refused(package.loc, f"package refused, nothing of it written: {error}")
            yield None
            return
        with opened:
            yield opened
