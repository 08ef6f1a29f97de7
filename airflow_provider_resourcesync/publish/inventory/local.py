"""An inventory of a local directory: for the embedded default and for tests.

Keys are the ``/``-separated paths of the regular files under the root, yielded in the order S3
would list them: by the UTF-8 bytes of the whole key, not directory by directory (``a-b`` and
``a.b`` come before everything in directory ``a``, as ``-`` and ``.`` sort before ``/``). A
directory's entries are sorted as they are met, the subdirectories by their name and a ``/``,
so one directory's names are in memory at a time per level, never the whole tree.

Only regular files are listed: symbolic links (to files or directories) are skipped, and so is
anything else that is not a regular file (sockets, FIFOs, devices), so a hostile tree cannot make
the publisher read outside the root. A file removed while the walk runs is left out.

There is no MD5 to be had without reading every byte, so an object's ``etag`` is a change token,
``<size>-<mtime in ns>`` in hexadecimal: a write that changes the size or the modification time
changes it. The publisher hashes the bytes as it copies them anyway.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from ...errors import InventoryError
from .objects import InventoryObject, in_scope
from .skipped import Skipped

__all__ = ["change_token", "last_modified", "walk_directory"]


def change_token(info: os.stat_result) -> str:
    """A file's change token, its ``etag``: size and modification time (ns), in hexadecimal."""
    return f"{info.st_size:x}-{info.st_mtime_ns:x}"


def walk_directory(root: str | os.PathLike[str], prefix: str = "", *,
                   exclude_prefix: str | None = None,
                   skipped: Skipped | None = None) -> Iterator[InventoryObject]:
    """The regular files under ``root`` as objects, in S3's key order.

    :param prefix: only keys under it are listed.
    :param exclude_prefix: keys under it are left out (where the publication is written).
    :param skipped: counts the file names no URL can carry, which are left out (None: a new
        :class:`.Skipped`, with the default share).
    :raises InventoryError: ``root`` or a directory under it cannot be read, or too many file
        names cannot be published as URLs.
    """
    base = Path(root)
    where = f"the directory {base}"
    try:
        if not stat.S_ISDIR(os.stat(base).st_mode):
            raise InventoryError(f"{where}: not a directory; give the directory to publish")
    except OSError as exc:
        raise InventoryError(f"{where}: cannot be read ({exc}); give a readable directory") \
            from exc
    skipping = skipped if skipped is not None else Skipped()
    yield from skipping.counted(_files(base, prefix, exclude_prefix, skipping, where), where)


def _files(base: Path, prefix: str, exclude_prefix: str | None, skipped: Skipped,
           where: str) -> Iterator[InventoryObject]:
    for key, info in _walk(base, "", where, exclude_prefix):
        if in_scope(key, prefix, exclude_prefix) and skipped.key(key) is not None:
            yield InventoryObject(key, info.st_size, change_token(info), last_modified(info))


def _walk(directory: Path, key_prefix: str, where: str,
          excluded: str | None) -> Iterator[tuple[str, os.stat_result]]:
    """``(key, stat)`` of the regular files under ``directory``, in key order; a directory
    whose keys are all under ``excluded`` is not entered."""
    try:
        with os.scandir(directory) as scanned:
            entries = [(os.fsencode(entry.name), entry) for entry in scanned
                       if not entry.is_symlink()]
    except OSError as exc:
        raise InventoryError(f"{where}: cannot read {directory} ({exc}); make it readable") \
            from exc
    entries.sort(key=lambda pair: pair[0] + b"/" if _is_dir(pair[1]) else pair[0])
    for name, entry in entries:
        key = key_prefix + _decoded(name)
        if _is_dir(entry):
            if not (excluded and (key + "/").startswith(excluded)):
                yield from _walk(Path(entry.path), key + "/", where, excluded)
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InventoryError(f"{where}: cannot read {entry.path} ({exc}); make it "
                                 "readable") from exc
        if stat.S_ISREG(info.st_mode):
            yield key, info


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _decoded(name: bytes) -> str:
    """A file name's bytes as text; bytes that are not UTF-8 become lone surrogates, which
    :class:`.Skipped` skips, counted."""
    return name.decode("utf-8", "surrogateescape")


def last_modified(info: os.stat_result) -> datetime:
    """A file's modification time (``info``'s), in UTC, to the microsecond."""
    seconds, nanoseconds = divmod(info.st_mtime_ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=nanoseconds // 1000)
