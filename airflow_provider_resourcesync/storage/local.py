"""A destination on local disk: objects are files under a root directory.

Layout: the object at ``key`` is ``root/key``. Its :class:`ObjectInfo` travels as JSON in the
file's extended attribute ``user.resourcesync``, set on the staged file before it is renamed into
place, so object and description appear together. Where the filesystem has no user extended
attributes (or a description is too large for one), it is JSON at ``root/.resourcesync/meta/key``
instead (the same tree shape as the objects, so it can never clash where the objects do not),
written after the object. Writes are staged in ``root/.resourcesync/tmp/`` (the same
filesystem), each process in a folder of its own (``workdirs.WorkDir``: a name a
re-run cannot collide with, and swept by the next process once its owner is dead, however it
died), and committed with :func:`os.replace`, which is atomic: readers and a process that
dies see the old object or the new one. Files are not fsynced (that would cost more than a
fetch): after a power loss, recent writes may be lost, which an audit by hash finds. The
metadata is written after the object and only ever describes it or an older version: a crash in
between, or a torn metadata file (read as no metadata), makes the next sync fetch the object
again, never skip it wrongly.

Limitation of local disks (S3 has none): a path cannot be a file and a directory at once, so
keys ``a`` and ``a/b`` (URIs ``/x`` and ``/x/y`` both mirrored) cannot both be held, nor a
path longer than the filesystem allows. Such a write raises :class:`UnstorableKeyError` (a
re-run cannot help) naming the keys, and nothing stored is lost.

A cache lifetime (:attr:`ObjectInfo.cache_control`) is not kept: a file has no headers, and
the web server serving the folder gives the ``Cache-Control`` (docs/publishing.md, "Caches").

Keys are relative; a key that would resolve outside the root (``..``, an absolute path, a symbolic
link on the way) is refused, whatever produced it.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from ..errors import DestinationError, UnstorableKeyError
from ..protocol.datetimes import format_datetime, parse_datetime
from ..protocol.hashes import Hashes
from ..workdirs import WorkDir
from .base import Destination, ObjectInfo, Staged, shown_key
from .keys import RESERVED_PREFIX, quoted_key

__all__ = ["WORK_FOLDER", "LocalDestination", "key_segments"]

#: Where the processes using a destination keep their work folders.
WORK_FOLDER = RESERVED_PREFIX + "tmp"
_TMP = WORK_FOLDER
_META = RESERVED_PREFIX + "meta"
_XATTR = "user.resourcesync"
_BUFFER = 64 * 1024
_INTERNAL = (_TMP + "/", _META + "/")
#: What an operating system says when asked for a file that is not there (or cannot be).
_ABSENT = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG})
_SEPARATE = ("mirror to S3, or give the URIs involved key prefixes (key_prefixes) that keep "
             "them apart")


def key_segments(key: str) -> list[str]:
    """The ``/``-separated segments of a relative key.

    :raises DestinationError: for an absolute key, an empty, ``.`` or ``..`` segment, or a NUL.
    """
    segments = key.split("/")
    if "" in segments or "." in segments or ".." in segments or "\x00" in key:
        raise DestinationError(f"key {shown_key(key)} is not a relative path of non-empty "
                               "segments without '.' or '..'")
    return segments


class LocalDestination(Destination):
    """Objects as files under ``root`` (created if missing).

    :param root: the directory holding the mirror.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.realpath(root))
        self.url = self.root.as_uri() + "/"
        tmp = self.root / _TMP
        try:  # earlier versions staged as stage-<pid>-<n> right in tmp: a re-run could collide
            self._work = WorkDir(tmp, legacy=itertools.chain(tmp.glob("stage-*"),
                                                             tmp.glob("probe-*")))
        except OSError as exc:
            raise DestinationError(f"{self.root}: cannot create the mirror's directories: {exc}"
                                   ) from exc
        self._tmp = self._work.path
        self._staged = itertools.count()
        # Commits share the tree; deletes and moves, which prune empty directories, have it alone.
        self._tree = _SharedLock()
        self._xattrs = _xattrs_work(self._tmp)
        self._known: set[str] = set()  # directories created or checked: no link on the way
        # Per thread, the key (and its file) info() last found nothing at: a commit to it next,
        # as a fetch after its check makes, needs no second look for a link there.
        self._absent = threading.local()

    def close(self) -> None:
        """Remove this process's work folder now (else when the destination is collected); the
        destination is not written after."""
        self._work.close()

    # -- paths -----------------------------------------------------------------------------------

    @staticmethod
    def _segments(key: str) -> list[str]:
        segments = key_segments(key)
        if key in (_TMP, _META) or key.startswith(_INTERNAL):
            raise DestinationError(
                f"key {shown_key(key)} is inside the destination's own working area")
        return segments

    def _path(self, key: str) -> Path:
        """The file of ``key`` (see :meth:`_file`)."""
        return Path(self._file(key))

    def _file(self, key: str) -> str:
        """The file of ``key``, checked to stay under the root with no symbolic link on the way
        (directories once, then remembered; the file itself every time)."""
        path = self._located(key)
        if os.path.islink(path):
            raise self._escapes(key)
        return path

    def _located(self, key: str) -> str:
        """The file of ``key``, its directories checked (once, then remembered), not the file
        itself."""
        path = os.path.join(self.root, *self._segments(key))
        parent = os.path.dirname(path)
        if parent not in self._known:
            # noted under the tree lock: a delete (exclusive) pruning the folder between the
            # check and the note would leave it noted, and an install would skip making it
            with self._tree.shared():
                if os.path.realpath(parent) == parent and os.path.isdir(parent):
                    self._known.add(parent)
        if parent not in self._known and os.path.realpath(parent) != parent:
            raise self._escapes(key)
        return path

    def _escapes(self, key: str) -> DestinationError:
        return DestinationError(f"key {shown_key(key)} resolves outside {self.root} (a symbolic "
                                "link or a path that escapes the root)")

    def _meta_path(self, key: str) -> Path:
        return self.root / _META / key

    def _prepare(self, key: str, *paths: str | Path) -> None:
        """Create the parent directories of ``paths``, once each."""
        for path in paths:
            parent = os.path.dirname(path)
            if parent in self._known:
                continue
            try:
                os.makedirs(parent, exist_ok=True)
            except (FileExistsError, NotADirectoryError):
                raise self._file_in_the_way(key, Path(parent)) from None
            if os.path.realpath(parent) != parent:
                raise DestinationError(f"key {shown_key(key)} resolves outside {self.root}")
            self._known.add(parent)

    def _directory_in_the_way(self, key: str, path: Path) -> DestinationError:
        below = next(self._walk(path), None)
        holding = f" holding the key {shown_key(below)}" if below else ""
        return UnstorableKeyError(
            f"key {shown_key(key)} cannot be written: it is a directory{holding}, and a local "
            f"disk cannot hold both; {_SEPARATE}")

    def _file_in_the_way(self, key: str, parent: Path) -> DestinationError:
        for ancestor in (parent, *parent.parents):
            if ancestor.is_file() or ancestor.is_symlink():
                other = ancestor.relative_to(self.root).as_posix()
                if other.startswith(_META + "/"):
                    other = other[len(_META) + 1:]
                return UnstorableKeyError(
                    f"key {shown_key(key)} cannot be written: the key {shown_key(other)} is a "
                    f"file where it needs a directory, and a local disk cannot hold both; "
                    f"{_SEPARATE}")
        return DestinationError(f"key {shown_key(key)}: cannot create {parent}")

    def _walk(self, top: Path, prefix: str = "") -> Iterator[str]:
        """Regular files under ``top`` whose keys start with ``prefix``, in sorted order; the
        reserved prefix only if ``prefix`` asks for it, the working area never."""
        hidden = _INTERNAL if prefix.startswith(RESERVED_PREFIX) else (RESERVED_PREFIX,)
        for directory, dirs, files in os.walk(top):
            base = Path(directory).relative_to(self.root).as_posix()
            base = "" if base == "." else base + "/"
            dirs[:] = sorted(
                name for name in dirs if (child := base + name + "/") not in hidden
                and (child.startswith(prefix) or prefix.startswith(child)))
            for name in sorted(files):
                key = base + name
                if key.startswith(prefix) and not os.path.islink(os.path.join(directory, name)):
                    yield key

    # -- writing ---------------------------------------------------------------------------------

    def stage(self, key: str) -> _LocalStaged:
        self._segments(key)  # a key refused before anything is staged; links are checked on commit
        with _os_errors(f"cannot stage {shown_key(key)} in {self._tmp}"):
            return _LocalStaged(self, key)

    def _install(self, key: str, staged: str, info: ObjectInfo | None) -> None:
        """Rename ``staged`` to the object at ``key`` with its description: in an extended
        attribute set before the rename, else in a metadata file written after it."""
        absent, self._absent.key = getattr(self._absent, "key", None), None
        path = absent[1] if absent is not None and absent[0] == key else self._file(key)
        data = _info_json(info) if info is not None else None
        with self._tree.shared(), _os_errors(f"cannot write {shown_key(key)} under {self.root}"):
            attached = data is not None and self._attach(staged, data)
            sidecar = None if attached or data is None else self._meta_path(key)
            self._prepare(key, path, *([sidecar] if sidecar else []))
            try:
                os.replace(staged, path)
            except IsADirectoryError:
                raise self._directory_in_the_way(key, Path(path)) from None
            if sidecar is not None and data is not None:  # data: not None with a sidecar
                sidecar.write_bytes(data)
            elif data is None:
                self._meta_path(key).unlink(missing_ok=True)

    def _attach(self, staged: str, data: bytes) -> bool:
        """Set the description on the staged file; False where no attribute can hold it."""
        if not self._xattrs:
            return False
        try:
            os.setxattr(staged, _XATTR, data)
        except OSError:  # larger than the filesystem allows in one attribute
            return False
        return True

    def write_bytes(self, key: str, data: bytes, content_type: str, *,
                    cache_control: str | None = None) -> None:
        """Write a small object whole; a file has no content type, no :class:`ObjectInfo` and
        no ``Cache-Control`` (its web server gives those)."""
        staged = self.stage(key)
        with staged:
            staged.file.write(data)
            staged.install(None)

    # -- reading ---------------------------------------------------------------------------------

    def info(self, key: str) -> ObjectInfo | None:
        path = self._located(key)
        try:
            mode = os.lstat(path).st_mode  # one call: is it there, a file, a link
        except OSError:
            self._absent.key = (key, path)
            return None
        if stat.S_ISLNK(mode):
            raise self._escapes(key)
        if not stat.S_ISREG(mode):
            return None
        try:
            data = os.getxattr(path, _XATTR) if self._xattrs else None
        except OSError:
            data = None
        if data is None:
            try:
                data = self._meta_path(key).read_bytes()
            except OSError as exc:
                if exc.errno not in _ABSENT:
                    raise
                return None
        return _info_from_json(data)

    def open(self, key: str) -> BinaryIO:
        with _os_errors(f"cannot read the object at {shown_key(key)} under {self.root}"):
            return self._path(key).open("rb")

    def exists(self, key: str) -> bool:
        try:
            return stat.S_ISREG(os.stat(self._path(key)).st_mode)
        except OSError as exc:
            if exc.errno not in _ABSENT:
                raise
            return False

    def keys(self, prefix: str = "") -> Iterator[str]:
        top = self.root / prefix.rpartition("/")[0]
        if os.path.realpath(top) != str(top) or not top.is_dir():
            return iter(())
        return self._walk(top, prefix)

    def object_url(self, key: str) -> str:
        self._segments(key)
        return self.url + quoted_key(key)

    # -- changing --------------------------------------------------------------------------------

    def delete(self, key: str) -> None:
        path, meta = self._path(key), self._meta_path(key)
        with self._tree.exclusive(), _os_errors(
                f"cannot delete {shown_key(key)} under {self.root}"):
            if os.path.isdir(path):
                raise DestinationError(f"key {shown_key(key)} is a directory, not an object")
            _unlink(path)
            _unlink(meta)
            self._prune(path.parent, self.root)
            self._prune(meta.parent, self.root / _META)

    def move(self, key: str, to_key: str) -> None:
        path, meta = self._path(key), self._meta_path(key)
        to_path, to_meta = self._path(to_key), self._meta_path(to_key)
        with self._tree.exclusive(), _os_errors(
                f"cannot move {shown_key(key)} to {shown_key(to_key)} under {self.root}"):
            if not path.is_file():
                raise DestinationError(f"cannot move {shown_key(key)} to {shown_key(to_key)}: "
                                       f"there is no object at {shown_key(key)}")
            self._prepare(to_key, to_path, to_meta)
            os.replace(path, to_path)
            if meta.is_file():
                os.replace(meta, to_meta)
            else:
                to_meta.unlink(missing_ok=True)
            self._prune(path.parent, self.root)
            self._prune(meta.parent, self.root / _META)

    def _prune(self, directory: Path, stop: Path) -> None:
        """Remove empty directories from ``directory`` up to (not including) ``stop``."""
        while directory != stop and stop in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return
            self._known.discard(str(directory))
            directory = directory.parent


def _xattrs_work(directory: Path) -> bool:
    """Whether files in ``directory`` take user extended attributes (Linux, most filesystems)."""
    if not hasattr(os, "setxattr"):
        return False
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix="probe-") as probe:
            os.setxattr(probe.name, _XATTR, b"{}")
    except OSError:
        return False
    return True


class _SharedLock:
    """Many holders in shared mode, or one in exclusive mode."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._shared_mode = _SharedMode(self)

    def shared(self) -> _SharedMode:
        """Hold the lock in shared mode for a ``with`` block."""
        return self._shared_mode

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._condition:
            self._condition.wait_for(lambda: not self._exclusive and not self._shared)
            self._exclusive = True
        try:
            yield
        finally:
            with self._condition:
                self._exclusive = False
                self._condition.notify_all()


class _SharedMode:
    """A :class:`_SharedLock` held in shared mode (one object serves every holder: a class,
    not a generator, for the cost of each commit)."""

    __slots__ = ("_lock",)

    def __init__(self, lock: _SharedLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        lock = self._lock
        with lock._condition:
            if lock._exclusive:
                lock._condition.wait_for(lambda: not lock._exclusive)
            lock._shared += 1

    def __exit__(self, *_: object) -> None:
        lock = self._lock
        with lock._condition:
            lock._shared -= 1
            if not lock._shared:  # only an exclusive holder waits for the shared ones
                lock._condition.notify_all()


class _LocalStaged(Staged):
    """A staging file in the destination's working area, renamed into place on commit."""

    def __init__(self, destination: LocalDestination, key: str) -> None:
        # numbered in the destination's own work folder: cheaper than random names
        self._temporary = os.path.join(destination._tmp, str(next(destination._staged)))
        fd = os.open(self._temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        # write-only: a read-write file costs three more lseek calls per object
        super().__init__(key, os.fdopen(fd, "wb", buffering=_BUFFER))  # no isatty probe either
        self._destination = destination

    def _publish(self, info: ObjectInfo) -> None:
        self.install(info)

    def install(self, info: ObjectInfo | None) -> None:
        """Rename the staged bytes into place, with ``info`` if any."""
        if self.committed:
            raise DestinationError(
                f"the staged object at {shown_key(self.key)} was already committed")
        with _os_errors(f"cannot write {shown_key(self.key)}"):
            self.file.flush()
        self._destination._install(self.key, self._temporary, info)
        self.committed = True

    def close(self) -> None:
        self.file.close()
        if not self.committed:
            Path(self._temporary).unlink(missing_ok=True)


def _unlink(path: Path) -> None:
    """Remove the file at ``path``, if there is one."""
    try:
        path.unlink()
    except OSError as exc:
        if exc.errno not in _ABSENT:
            raise


class _os_errors:  # a context manager used as a function: a class costs less per use
    """Turn an operating system's refusal into a :class:`DestinationError` saying ``what``."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if not isinstance(exc, OSError):
            return
        if exc.errno == errno.ENAMETOOLONG:
            raise UnstorableKeyError(
                f"{self.what}: the path is longer than the filesystem allows (commonly 255 bytes "
                "a name, 4096 a path); mirror to S3, or map the URIs to shorter keys "
                "(key_prefixes)") from exc
        raise DestinationError(f"{self.what}: {exc}") from exc


def _info_json(info: ObjectInfo) -> bytes:
    return json.dumps({
        "uri": info.uri,
        "length": info.length,
        "hash": str(info.hashes),
        "lastmod": format_datetime(info.lastmod) if info.lastmod is not None else None,
        "type": info.type,
    }, ensure_ascii=False).encode()


def _info_from_json(data: bytes) -> ObjectInfo | None:
    """The description; None for a torn or foreign one, so the object is fetched again."""
    try:
        value = json.loads(data)
        return ObjectInfo(
            uri=value["uri"], length=int(value["length"]), hashes=Hashes.parse(value["hash"]),
            lastmod=parse_datetime(value["lastmod"]) if value["lastmod"] is not None else None,
            type=value["type"],
        )
    except (ValueError, KeyError, TypeError):
        return None
