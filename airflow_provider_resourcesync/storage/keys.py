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

A key is made from a URI's normal form (:func:`normalized`), so two spellings of one resource
share its key and two resources never do; a URI with no normal form (credentials in it, no
well-formed http(s) host) is refused, and never fetched either.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from functools import lru_cache
from urllib.parse import quote

from ..errors import ConfigurationError, UnsafeContentError, shown

__all__ = ["RESERVED_PREFIX", "KeyMapper", "normalized", "quoted_key", "shown"]

#: Keys under this prefix belong to the mirror itself (its own documents); no URI maps there.
RESERVED_PREFIX = ".resourcesync/"

_UNSAFE = re.compile(rb"[^A-Za-z0-9\-._~]")
_SAFE = re.compile(r"[A-Za-z0-9\-._~]*")
_MAX_SEGMENT = 200
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: RFC 3986 3.2.2: a registered name's characters (and non-ASCII ones, of an IRI), or an IP
#: literal in brackets. Nothing else (no space, control character, backslash or ``@``).
_HOST = re.compile(r"(?:[A-Za-z0-9\-._~%!$&'()*+,;=\x80-\U0010ffff]+|\[[0-9A-Fa-f:.]+\])")
_URI_RULE = "resource URIs are absolute http(s) URIs with a well-formed host"
_CREDENTIALS_RULE = "no credentials in resource URIs"


def quoted_key(key: str) -> str:
    """``key`` percent-encoded for a URL path, its slashes kept (:func:`urllib.parse.quote`).
    A folder's part is encoded once and remembered: the keys of one listing share a few."""
    folder, slash, name = key.rpartition("/")
    return _quoted_folder(folder) + slash + quote(name)


#: Folders' encodings remembered (a bounded number: a listing's keys share few folders).
_quoted_folder = lru_cache(maxsize=4096)(quote)


def normalized(uri: str) -> str:
    """The one spelling of a resource URI: ``scheme://host[:port]/path[?query]`` with scheme and
    host in lower case, a default or empty port dropped, a port's leading zeros dropped, an
    empty path written ``/`` and the fragment dropped (RFC 3986 6.2.2, 6.2.3). Path and query
    keep their spelling. Two URIs with one normal form are one resource, with one key.

    :raises UnsafeContentError: the URI holds user information (``user@``, ``user:password@``:
        it is never fetched and never mapped), or is not an absolute http(s) URI with a
        well-formed host and port.
    """
    scheme, colon, rest = uri.partition(":")
    scheme = scheme.lower()
    if not colon or scheme not in _DEFAULT_PORTS or not rest.startswith("//"):
        raise _refused(uri, "it is not an absolute http(s) URI")
    rest = rest[2:].partition("#")[0]
    end = min((at for at in (rest.find("/"), rest.find("?")) if at >= 0), default=len(rest))
    authority, path = rest[:end], rest[end:]
    if "@" in authority:
        raise UnsafeContentError("it holds user information (credentials)",
                                 rule=_CREDENTIALS_RULE, url=shown(uri))
    host, port = _split_port(uri, authority)
    if not _HOST.fullmatch(host):
        raise _refused(uri, f"it has no well-formed host {shown(host)!r}")
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        host += f":{port}"
    return f"{scheme}://{host.lower()}{path if path.startswith('/') else '/' + path}"


def _split_port(uri: str, authority: str) -> tuple[str, int | None]:
    """``host`` and ``port`` of ``authority`` (None: no port, or an empty one)."""
    bracket = authority.find("]") + 1 if authority.startswith("[") else 0
    host, _, port = authority[bracket:].partition(":")
    host = authority[:bracket] + host
    if not port:
        return host, None
    if not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise _refused(uri, f"it has an invalid port {shown(port)!r}")
    return host, int(port)


def _refused(uri: str, why: str) -> UnsafeContentError:
    return UnsafeContentError(why, rule=_URI_RULE, url=shown(uri))


def _escape(text: str) -> str:
    if _SAFE.fullmatch(text):  # most segments: nothing to escape
        return text
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
        self._prefixes = sorted(((self._uri_prefix(uri), key) for uri, key in
                                 (prefixes or {}).items()), key=lambda item: -len(item[0]))
        self._check_prefixes()

    def key(self, uri: str) -> str:
        """The key of ``uri`` (of its normal form).

        :raises UnsafeContentError: for a URI :func:`normalized` refuses.
        """
        return self.normal_key(uri)[1]

    def normal_key(self, uri: str) -> tuple[str, str]:
        """``uri``'s normal form and its key, normalized once.

        :raises UnsafeContentError: for a URI :func:`normalized` refuses.
        """
        uri = normalized(uri)
        return uri, self._key_of(uri)

    def _key_of(self, uri: str) -> str:
        for uri_prefix, key_prefix in self._prefixes:
            if uri.startswith(uri_prefix):
                return key_prefix + self._path_key(uri[len(uri_prefix):])
        scheme, _, rest = uri.partition("://")
        authority, _, path = rest.partition("/")
        host, port = _split_port(uri, authority)
        host = _segment(host.removeprefix("[").removesuffix("]"))
        return f"{scheme}/{_capped(host if port is None else f'{host}+{port}')}/" + \
            self._path_key(path)

    @staticmethod
    def _uri_prefix(uri: str) -> str:
        """A configured URI prefix in normal form."""
        try:
            return normalized(uri)
        except UnsafeContentError as error:
            raise ConfigurationError(f"key_prefixes: the URI prefix {error}") from None

    @staticmethod
    def _path_key(path: str) -> str:
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
                raise ConfigurationError(f"key_prefixes: key prefix {key!r} must be relative, "
                                         "end with '/' and have no empty, '.' or '..' segment")
            if key.startswith(RESERVED_PREFIX) or segments[0] in _DEFAULT_PORTS:
                raise ConfigurationError(f"key_prefixes: key prefix {key!r} collides with reserved "
                                         "or default keys (.resourcesync/, http/, https/)")
        for i, key in enumerate(keys):
            for j, other in enumerate(keys):
                if i != j and other.startswith(key):
                    raise ConfigurationError(f"key_prefixes: key prefixes {key!r} and {other!r} "
                                             "overlap: two URIs could share a key")
