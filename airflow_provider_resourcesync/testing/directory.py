"""A directory served by a :class:`SourceServer`, as a web server over it would serve it: a
published collection, a publication, a mirror others sync from."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from urllib.parse import quote

from .server import SourceServer

__all__ = ["ServedDirectory"]


class ServedDirectory:
    """The files under ``root`` served at ``prefix`` (a path ending with ``/``) of ``server``,
    as they are at each :meth:`refresh`: a file gone since answers 404."""

    def __init__(self, server: SourceServer, root: Path, prefix: str) -> None:
        self.server = server
        self.root = root
        self.prefix = prefix
        self._served: set[str] = set()

    @property
    def url(self) -> str:
        """The URL the directory is served at."""
        return self.server.url(self.prefix)

    def refresh(self) -> None:
        """Serve the files as they are now; stop serving those gone."""
        paths = set()
        for path in sorted(self.root.rglob("*")):
            if path.is_file():
                key = path.relative_to(self.root).as_posix()
                url_path = self.prefix + quote(key, safe="/")
                kind = mimetypes.guess_type(key)[0] or "application/octet-stream"
                self.server.put(url_path, path.read_bytes(), kind)
                paths.add(url_path)
        for gone in self._served - paths:
            self.server.remove(gone)
        self._served = paths

    def files(self) -> dict[str, bytes]:
        """Each file's bytes by the URL it is served at."""
        return {self.url + quote(path.relative_to(self.root).as_posix(), safe="/"):
                path.read_bytes() for path in self.root.rglob("*") if path.is_file()}
