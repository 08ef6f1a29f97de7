"""Names inside a dump package (spec 11.2, 13.2): one rule for ZIP members and manifest paths, so
the validator and :func:`~.package.open_package` accept the same manifests.
"""

from __future__ import annotations

import re

__all__ = ["manifest_member", "manifest_path_problem", "member_name_problem"]

_DRIVE = re.compile(r"[A-Za-z]:")


def member_name_problem(name: str) -> str | None:
    """Why a ZIP member name could escape the package or alias another one; None if it is safe."""
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return "is an absolute path"
    if "\\" in name:
        return "contains a backslash"
    if "\x00" in name:
        return "contains a NUL character"
    for segment in name.split("/"):
        if segment in ("", ".", ".."):
            return f"has a {segment!r} segment"
    return None


def manifest_path_problem(path: str) -> str | None:
    """Why a manifest's ``path`` cannot name a file of the package; None if it can.

    A path is ``/`` followed by the name of a member (11.2: relative to the package's root, with
    a leading slash), safe by :func:`member_name_problem`.
    """
    if not path.startswith("/"):  # forgiven by the reader (resync 2.0.1 writes "file.txt")
        return "does not start with '/'"
    return member_name_problem(manifest_member(path))


def manifest_member(path: str) -> str:
    """The member name a manifest ``path`` names: the path from the package's root, with or
    without the leading ``/`` that 11.2 asks for."""
    return path.removeprefix("/")
