"""A dump's package, downloaded and checked whole before anything of it is written (11.1, 13.1)."""

from __future__ import annotations

from typing import BinaryIO

from ..client.sync_client import ResourceSyncClient
from ..errors import DocumentError
from ..protocol.model import DocumentKind, Entry
from ..protocol.package import DumpPackage, open_package

__all__ = ["fetch_package"]


def fetch_package(client: ResourceSyncClient, package: Entry, file: BinaryIO,
                  manifest: DocumentKind, dump: str) -> DumpPackage:
    """Download the package a dump lists into ``file``, verified (its ``hash``, ``length``), and
    open it, checked by :func:`open_package`; its manifest must be a ``manifest``.

    :param dump: the dump's title, for the error ("Resource Dump").
    :raises ResourceSyncError: the package is refused, saying why.
    """
    client.download(package.loc, file, expected=package.md)
    opened = open_package(file, url=package.loc)
    if opened.kind is not manifest:
        opened.close()
        raise DocumentError(f"a {opened.kind.title} package in a {dump}", url=package.loc,
                            section=manifest.section)
    return opened
