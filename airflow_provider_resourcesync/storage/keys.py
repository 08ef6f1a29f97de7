"""URI -> key mapping: injective, reversible, and unable to escape the destination's prefix.

A key is ``<scheme>/<host>[+<port>]/<name>/.../<name>`` by default; users may map URI prefixes
to key prefixes instead (``{"https://example.org/data/": "data/"}``). Scheme and host are
lower-cased (they are case-insensitive), the host named as in the escaped layout (below)
(``[::1]:8080`` is ``%3A%3A1+8080``). Each path segment is one name, in one of two layouts
(``key_layout``; a mirror keeps the one it was made with: :mod:`..writer.layout`):

**readable** (new mirrors): a name is the segment's decoded text, as ``wget -x``, ``aws s3
sync`` and rclone name files: ``https://host/space%20dir/caf%C3%A9.txt`` is
``https/host/space dir/café.txt``.

- the segment's ``%XX`` escapes are decoded as UTF-8 (upper or lower-case hex alike); bytes
  that are not UTF-8 stay escaped (``%FF``); characters a URI may not hold raw (a space,
  ``é``) are taken as the escapes a client sends for them (``a b`` is ``a%20b``);
- then only these are escaped as ``%XX`` (UTF-8, upper-case hex): ``%`` itself (``%25``), ``/``
  (``%2F``: ``a%2Fb`` stays one name), ``?`` (``%3F``), a backslash (``%5C``), C0 and C1 control
  characters and DEL, U+2028 and U+2029, and the invisible characters that hide or reorder
  text (U+200B-U+200F, U+202A-U+202E, U+2060-U+2064, U+2066-U+2069, U+FEFF). Everything else
  stays as itself: spaces, ``+``, ``#``, ``:``, ``&``, quotes, any other UTF-8. Linux and
  macOS file names hold it, and S3 keys do (boto3 escapes keys on the wire);
- the segments ``.`` and ``..`` (however spelled) are ``%2E`` and ``%2E%2E``, and an empty
  segment (``a//b``, a trailing slash) is ``%``: escaping never makes either;
- a query follows the last name after ``?`` (a ``?`` of the path is ``%3F``), decoded and
  escaped alike, except that escapes of ``&``, ``=``, ``+`` and ``;`` stay (upper-cased), as
  they tell a form's values apart: ``?q=a%26b`` is ``?q=a%26b``, ``?q=a b`` is ``?q=a b``.

So two spellings a server takes for one resource share a key: ``%7E`` and ``~``, ``%2f`` and
``%2F``, ``a%20b`` and the (invalid) ``a b``, an IRI's ``é`` and ``%C3%A9``, and, in a path,
an escaped reserved character and itself (``%2B`` and ``+``, as file servers and S3 read
them); two resources whose decoded paths differ never do. A Source that tells ``a%3Bb`` from
``a;b`` in its paths is mirrored with ``key_layout="escaped"``; in the readable layout the
second of two such URIs is refused while the mirror holds the first (``sync/transfer.py``), so
neither writes over nor deletes the other.

**escaped** (mirrors made before layouts were recorded): a name is the segment as the URI
spells it, every character outside ``A-Z a-z 0-9 - . _ ~`` escaped, ``%`` included
(``a%20b`` is ``a%2520b``, ``é`` is ``%C3%A9``); ``.`` and ``..`` are ``%2E`` and ``%2E%2E``,
an empty segment is ``%2F`` and the query follows after ``%3F``: escaping never makes these.

In both layouts a name longer than 200 bytes of UTF-8 (query included; 255 is the most most
file systems hold) is cut at a character and suffixed with ``%%`` and a SHA-256 of the whole;
``%%`` is never made otherwise. :meth:`KeyMapper.uri` reads a key back into a URI of the same
key (one that was not cut).

A key is made from a URI's normal form (:func:`normalized`), so two spellings of one resource
share its key and two resources never do; a URI with no normal form (credentials in it, no
well-formed http(s) host) is refused, and never fetched either. No key starts with ``/`` or
:data:`RESERVED_PREFIX`, nor holds an empty, ``.`` or ``..`` segment.

Unicode normalization is left as it is: a normalization-insensitive file system (APFS) or a
case-insensitive one (macOS's default) takes two names that differ only so for one file, as
it did in the escaped layout for case.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from functools import lru_cache
from urllib.parse import quote, unquote

from ..errors import ConfigurationError, InvalidValueError, UnsafeContentError, shown
from .names import ESCAPED, LAYOUTS, READABLE, Layout, capped

__all__ = ["ESCAPED", "LAYOUTS", "READABLE", "RESERVED_PREFIX", "KeyMapper", "Layout",
           "normalized", "quoted_key", "shown"]

#: Keys under this prefix belong to the mirror itself (its own documents); no URI maps there.
RESERVED_PREFIX = ".resourcesync/"

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


class KeyMapper:
    """Maps resource URIs to destination keys, and keys back to URIs.

    :param prefixes: URI prefix -> key prefix. The longest matching URI prefix wins; URIs no
        prefix matches get ``<scheme>/<host>[+<port>]/`` keys. Key prefixes must end with
        ``/``, must not be prefixes of each other nor look like ``http/`` or ``https/`` keys,
        and must not be reserved.
    :param layout: ``"readable"`` or ``"escaped"`` (see the module); None: the one the mirror
        was made with, ``"readable"`` for a new one (:attr:`asked` is then None, and
        :attr:`layout` readable until :meth:`in_layout` says otherwise).
    :raises ConfigurationError: for a prefix or layout as above.
    """

    def __init__(self, prefixes: Mapping[str, str] | None = None,
                 layout: str | None = None) -> None:
        if layout is not None:
            ConfigurationError.unless_one_of("key_layout", layout, LAYOUTS)
        #: The layout asked for (None: the mirror's own).
        self.asked = layout
        #: The layout keys are made in.
        self.layout: Layout = LAYOUTS[layout] if layout is not None else READABLE
        self._prefixes = sorted(((self._uri_prefix(uri), key) for uri, key in
                                 (prefixes or {}).items()), key=lambda item: -len(item[0]))
        self._check_prefixes()

    def in_layout(self, layout: Layout) -> KeyMapper:
        """This mapping, its keys made in ``layout``."""
        mapper = copy.copy(self)
        mapper.asked, mapper.layout = layout.name, layout
        return mapper

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

    def uri(self, key: str) -> str:
        """The URI ``key`` stands for, in normal form: one whose key is ``key`` (the inverse of
        :meth:`key`, up to the spellings that share a key).

        :raises InvalidValueError: no URI has this key here (a name cut to fit a file name, a
            key of the mirror's own, one of no prefix nor scheme and host).
        """
        for uri_prefix, key_prefix in self._prefixes:
            if key.startswith(key_prefix):
                return uri_prefix + self._path_of(key[len(key_prefix):])
        scheme, _, rest = key.partition("/")
        place, _, path = rest.partition("/")
        host, plus, port = place.rpartition("+")  # an escaped host holds no "+"
        host = unquote(host if plus else place)
        if scheme not in _DEFAULT_PORTS or not host or not path:
            raise InvalidValueError(f"the key {key!r} names no URI: it is neither under a key "
                                    "prefix nor <scheme>/<host>[+<port>]/<path>")
        host = f"[{host}]" if ":" in host else host
        return f"{scheme}://{host}{':' + port if plus else ''}/{self._path_of(path)}"

    def _key_of(self, uri: str) -> str:
        for uri_prefix, key_prefix in self._prefixes:
            if uri.startswith(uri_prefix):
                return key_prefix + self._path_key(uri[len(uri_prefix):])
        scheme, _, rest = uri.partition("://")
        authority, _, path = rest.partition("/")
        host, port = _split_port(uri, authority)
        host = ESCAPED.segment(host.removeprefix("[").removesuffix("]"))
        return f"{scheme}/{capped(host if port is None else f'{host}+{port}')}/" + \
            self._path_key(path)

    @staticmethod
    def _uri_prefix(uri: str) -> str:
        """A configured URI prefix in normal form."""
        try:
            return normalized(uri)
        except UnsafeContentError as error:
            raise ConfigurationError(f"key_prefixes: the URI prefix {error}") from None

    def _path_key(self, path: str) -> str:
        path, question, query = path.partition("?")
        layout = self.layout
        names = [layout.segment(part) for part in path.split("/")]
        if question:
            names[-1] += layout.marker + layout.query(query)
        return "/".join(capped(name) for name in names)

    def _path_of(self, key: str) -> str:
        return self.layout.path(key.split("/"))

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
