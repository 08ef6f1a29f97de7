"""URI -> key mapping: injective, and unable to escape the destination's prefix.

A key is ``<scheme>/<host>[+<port>]/<segment>/.../<segment>[%3F<query>]`` by default; users may map
URI prefixes to key prefixes instead (``{"https://example.org/data/": "data/"}``). Each part is
percent-encoded so that it can be decoded back, which is what makes the mapping injective:

- characters outside ``A-Z a-z 0-9 - . _ ~`` are escaped as ``%XX`` (upper-case hex), ``%`` itself
  included, so ``/a%2Fb`` and ``/a/b`` stay apart;
- the segments ``.`` and ``..`` are escaped (``%2E``, ``%2E%2E``) and cannot climb out of a prefix;
- an empty segment (a trailing slash, ``a//b``) becomes ``%2F``, which escaping never produces;
- a query is appended to the last segment after ``%3F``, which escaping never produces either;
- scheme and host are lower-cased (they are case-insensitive); path and query keep their case;
- a segment too long for a file name (query included) is cut and suffixed with ``%%`` and a
  SHA-256 of the whole; ``%%`` is never produced otherwise.

The fragment is not part of a resource's identity and is dropped.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from ..errors import DestinationError

__all__ = ["RESERVED_PREFIX", "KeyMapper"]

#: Keys under this prefix belong to the mirror itself (its own documents); no URI maps there.
RESERVED_PREFIX = ".resourcesync/"

_UNSAFE = re.compile(rb"[^A-Za-z0-9\-._~]")
_MAX_SEGMENT = 200
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _escape(text: str) -> str:
    raw = text.encode("utf-8", errors="surrogatepass")
    return _UNSAFE.sub(lambda m: b"%%%02X" % m.group()[0], raw).decode("ascii")


def _segment(text: str) -> str:
    if text == "":
        return "%2F"
    if text in (".", ".."):
        return "%2E" * len(text)
    return _escape(text)


def _capped(segment: str) -> str:
    """A segment short enough for a file name: cut, with a digest of the whole to stay unique."""
    if len(segment) <= _MAX_SEGMENT:
        return segment
    digest = hashlib.sha256(segment.encode()).hexdigest()
    return f"{segment[:_MAX_SEGMENT - 66]}%%{digest}"


class KeyMapper:
    """Maps resource URIs to destination keys.

    :param prefixes: URI prefix -> key prefix. The longest matching URI prefix wins; URIs no
        prefix matches use the default layout. Key prefixes must end with ``/``, must not be
        prefixes of each other nor look like the default layout, and must not be reserved.
    """

    def __init__(self, prefixes: Mapping[str, str] | None = None) -> None:
        self._prefixes = sorted((prefixes or {}).items(), key=lambda item: -len(item[0]))
        self._check_prefixes()

    def key(self, uri: str) -> str:
        """The key of ``uri``.

        :raises DestinationError: for a URI that is not absolute http(s).
        """
        for uri_prefix, key_prefix in self._prefixes:
            if uri.startswith(uri_prefix):
                return key_prefix + self._path_key(uri[len(uri_prefix):])
        parts = urlsplit(uri)
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise DestinationError(f"{uri!r} is not an absolute http(s) URI")
        host = _segment(parts.hostname.lower())
        try:
            port = parts.port
        except ValueError:
            raise DestinationError(f"{uri!r} has an invalid port") from None
        if port is not None and port != _DEFAULT_PORTS[scheme]:
            host += f"+{port}"
        rest = uri.split("//", 1)[1].split("#", 1)[0]
        ends = [at for at in (rest.find("/"), rest.find("?")) if at >= 0]
        remainder = rest[min(ends):] if ends else ""  # "", "/path...", or "?query..."
        return f"{scheme}/{_capped(host)}/" + self._path_key(remainder.removeprefix("/"))

    @staticmethod
    def _path_key(path: str) -> str:
        path = path.split("#", 1)[0]
        path, question, query = path.partition("?")
        segments = [_segment(part) for part in path.split("/")]
        if question:
            segments[-1] += "%3F" + _escape(query)
        return "/".join(_capped(segment) for segment in segments)

    def _check_prefixes(self) -> None:
        keys = [key for _, key in self._prefixes]
        for key in keys:
            segments = key.split("/")[:-1]
            if not key.endswith("/") or any(part in ("", ".", "..") for part in segments):
                raise DestinationError(f"key prefix {key!r} must be relative, end with '/' and "
                                       "have no empty, '.' or '..' segment")
            if key.startswith(RESERVED_PREFIX) or segments[0] in _DEFAULT_PORTS:
                raise DestinationError(f"key prefix {key!r} collides with reserved or default "
                                       "keys (.resourcesync/, http/, https/)")
        for i, key in enumerate(keys):
            for j, other in enumerate(keys):
                if i != j and other.startswith(key):
                    raise DestinationError(
                        f"key prefixes {key!r} and {other!r} overlap: two URIs could share a key")
