"""A dump's package, downloaded and checked whole before anything of it is written (11.1, 13.1).

Checked whole means: its own ``hash`` and ``length``, the ZIP rules of :func:`open_package`, the
kind of its manifest, and every resource its manifest names on one of the Source's origins (or
a host the connection allows): the same rule as a resource fetched on its own, so a package
cannot write, overwrite or delete another origin's objects held in the same destination.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from ..client.sync_client import ResourceSyncClient
from ..errors import DocumentError, ResourceSyncError, UnsafeContentError
from ..protocol.model import DocumentKind, Entry
from ..protocol.package import DumpPackage, open_package
from .tally import fix_for

__all__ = ["Refused", "fetched_package"]


class Refused(Protocol):
    """Told of a refused package: its URL, why, whether a re-run can help, and if not the fix
    (:meth:`.tally.Tally.fail`)."""

    def __call__(self, what: str, reason: str, *, rerun_helps: bool, fix: str | None) -> None:
        ...

log = logging.getLogger(__name__)


@contextmanager
def fetched_package(client: ResourceSyncClient, package: Entry, manifest: DocumentKind,
                    dump: str, refused: Refused) -> Iterator[DumpPackage | None]:
    """The package a dump lists, downloaded into a temporary file, verified (its ``hash``,
    ``length``) and opened, checked by :func:`open_package`; its manifest must be a
    ``manifest`` naming resources on the Source's origins only. Refused, it is None, and
    ``refused`` was told why, whether a re-run can help (a download that failed) or not (a
    package a rule refuses), and what must change then.

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
            _check_origins(client, opened)
        except ResourceSyncError as error:
            refused(package.loc, f"package refused, nothing of it written: {error}",
                    rerun_helps=error.rerun_helps, fix=fix_for(error))
            yield None
            return
        for warning in opened.warnings:
            log.warning("Package %s : %s", package.loc, warning)
        with opened:
            yield opened


def _check_origins(client: ResourceSyncClient, opened: DumpPackage) -> None:
    """Every resource the manifest names (``deleted`` changes included) is one the client
    would fetch; the package is closed and refused otherwise."""
    for entry, _ in opened.entries():
        try:
            client.guard.check_url(entry.loc)
        except UnsafeContentError as error:
            opened.close()
            raise UnsafeContentError(
                f"its manifest names {entry.loc!r}, which this Source may not write: "
                f"{error.message.removesuffix(f' [refused by rule: {error.rule}]')}",
                rule=error.rule, url=opened.manifest_url, line=entry.line) from None
