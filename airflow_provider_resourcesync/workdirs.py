"""Work folders that a killed process cannot leave in the way of the next one.

A :class:`WorkDir` is ``<parent>/process-<random token>``, holding a ``.lock`` file on which its
process keeps an exclusive ``flock`` while it uses the folder. The kernel drops that lock when the
process ends, however it ends (SIGKILL included), so a folder whose lock can be taken belongs to a
dead process. A process ID would say nothing: a container's next task often has the same one
(PID 1 on every run), and the folder's name is random, so a new process never meets an old name.

Each new WorkDir sweeps its parent: sibling folders whose lock it can take, and entries with no
lock (a process killed while making its folder, or files of earlier versions passed as
``legacy``) once nothing in them changed for :data:`ABANDONED_AFTER`. One INFO line says what was
removed, from where. A WorkDir removes itself at :meth:`WorkDir.close`, when it is collected, or
at the interpreter's exit.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Iterable
from pathlib import Path

__all__ = ["ABANDONED_AFTER", "WorkDir"]

_log = logging.getLogger(__name__)

#: Seconds after which an entry nobody holds a lock on counts as abandoned.
ABANDONED_AFTER = 3600.0
_PREFIX = "process-"
_MAKING = ".making-"  # a folder being made, locked before it gets its name
_LOCK = ".lock"
_NAMES_SHOWN = 5


class WorkDir:
    """A folder of this process's own under ``parent`` (created if missing).

    :param parent: where the work folders of every process live.
    :param legacy: more leftovers to sweep by age alone (old layouts); read once, at creation.
    :raises OSError: the folder cannot be made.
    """

    def __init__(self, parent: str | os.PathLike[str], *, legacy: Iterable[Path] = ()) -> None:
        self.parent = Path(parent)
        self.parent.mkdir(parents=True, exist_ok=True)
        making = Path(tempfile.mkdtemp(prefix=_MAKING, dir=self.parent))
        try:
            lock = os.open(making / _LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            shutil.rmtree(making, ignore_errors=True)
            raise
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.path = self.parent / (_PREFIX + making.name.removeprefix(_MAKING))
            os.rename(making, self.path)  # named only once locked: no sweeper can take it
        except OSError:
            os.close(lock)
            shutil.rmtree(making, ignore_errors=True)
            raise
        self._release = weakref.finalize(self, _release, self.path, lock, os.getpid())
        _sweep(self.parent, self.path, legacy)

    def close(self) -> None:
        """Remove the folder and everything in it, then drop the lock."""
        self._release()

    def __enter__(self) -> WorkDir:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _release(path: Path, lock: int, pid: int) -> None:
    if os.getpid() == pid:  # a forked child leaves its parent's folder alone
        shutil.rmtree(path, ignore_errors=True)
    os.close(lock)


def _sweep(parent: Path, own: Path, legacy: Iterable[Path]) -> None:
    """Remove what dead processes left in ``parent`` (and ``legacy``), with one log line."""
    with os.scandir(parent) as entries:
        names = [entry.name for entry in entries if entry.path != str(own)]
    swept = [(path, _take_dead(path)) for path in
             (parent / name for name in names if name.startswith(_PREFIX))]
    swept += [(path, _remove(path) if _abandoned(path) else None) for path in
              [*(parent / name for name in names if name.startswith(_MAKING)), *legacy]]
    removed = [path.name if path.parent == parent else str(path)
               for path, freed in swept if freed is not None]
    if removed:
        size = sum(freed for _, freed in swept if freed is not None)
        more = f" and {len(removed) - _NAMES_SHOWN} more" if len(removed) > _NAMES_SHOWN else ""
        _log.info("Removed %d leftover(s) of killed runs (%d bytes) from %s: %s%s",
                  len(removed), size, parent, ", ".join(removed[:_NAMES_SHOWN]), more)


def _take_dead(path: Path) -> int | None:
    """Remove the work folder ``path`` if its lock can be taken (its process is dead); one with
    no lock is judged by age. The bytes it held, or None if it was kept."""
    try:
        lock = os.open(path / _LOCK, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return _remove(path) if _abandoned(path) else None
    except OSError:  # not ours to look into
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held: its process is alive
        return None
    else:
        return _remove(path)
    finally:
        os.close(lock)


def _abandoned(path: Path) -> bool:
    """Whether nothing at or under ``path`` changed for :data:`ABANDONED_AFTER` seconds."""
    cutoff = time.time() - ABANDONED_AFTER
    try:
        if path.lstat().st_mtime > cutoff:
            return False
    except OSError:
        return False
    if not path.is_dir() or path.is_symlink():
        return True
    for directory, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                if os.lstat(os.path.join(directory, name)).st_mtime > cutoff:
                    return False
            except OSError:
                continue
    return True


def _remove(path: Path) -> int | None:
    """Delete ``path`` (a folder, whole); the bytes it held, or None if it is still there."""
    size = 0
    if path.is_dir() and not path.is_symlink():
        for directory, _, files in os.walk(path):
            for name in files:
                try:
                    size += os.lstat(os.path.join(directory, name)).st_size
                except OSError:
                    continue
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            size = path.lstat().st_size
            path.unlink()
        except OSError:
            return None
    return None if os.path.lexists(path) else size
