"""One part of a URI as one name of a key, in each layout (the rule: :mod:`.keys`), and back.

A :class:`Layout` names a path segment (:meth:`Layout.segment`), a query (:meth:`Layout.query`,
appended to the last segment after :attr:`Layout.marker`) and reads them back
(:meth:`Layout.path`). Names too long for a file name are cut with a digest (:func:`capped`).
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote, unquote, unquote_to_bytes

from ..errors import InvalidValueError

__all__ = ["ESCAPED", "LAYOUTS", "READABLE", "Layout", "capped", "escaped"]

#: A name's longest length in bytes of UTF-8 (255 on ext4, APFS, and the like, with room to spare).
_MAX_NAME = 200
#: Cut names end with this and the SHA-256 of the whole: nothing else holds it.
_CUT = "%%"
#: ``urllib.parse.quote`` keeps ``A-Z a-z 0-9 _ . - ~``; these it may keep too, in a path
#: segment (RFC 3986 3.3, ``pchar``) and in a query (3.4).
_SEGMENT_SAFE = "!$&'()*+,;=:@"
_QUERY_SAFE = _SEGMENT_SAFE + "/?%"

_UNSAFE = re.compile(rb"[^A-Za-z0-9\-._~]")
_SAFE = re.compile(r"[A-Za-z0-9\-._~]*")
_PERCENT = re.compile(rb"%([0-9A-Fa-f]{2})")
#: What a readable name never holds as itself: ``%``, ``/``, ``\``, C0 and C1 controls and DEL,
#: the line and paragraph separators, the invisible characters that hide or reorder text
#: (zero-width, bidirectional controls, word joiners, the BOM), and the bytes that are not UTF-8
#: (decoded as lone surrogates); in a path segment, ``?`` as well.
_HIDDEN = ("%/\\\\\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069"
           "\ufeff\ud800-\udfff")
_NOT_IN_QUERY = re.compile(f"[{_HIDDEN}]")
_NOT_IN_SEGMENT = re.compile(f"[{_HIDDEN}?]")
#: The characters whose escapes a readable query keeps: a form's separators (``&``, ``=``,
#: ``;``) and its space (``+``), which tell values apart when escaped.
_FORM = frozenset(b"&=+;")


def escaped(text: str) -> str:
    """``text`` with every character outside ``A-Z a-z 0-9 - . _ ~`` escaped as ``%XX``
    (upper-case hex of its UTF-8 bytes): the escaped layout's names, and both layouts' hosts."""
    if _SAFE.fullmatch(text):  # most segments: nothing to escape
        return text
    raw = text.encode("utf-8", errors="surrogatepass")
    return _UNSAFE.sub(lambda m: b"%%%02X" % m.group()[0], raw).decode("ascii")


def capped(name: str) -> str:
    """``name`` short enough for a file name: cut, with a digest of the whole to stay unique."""
    raw = name.encode("utf-8", "surrogatepass")
    if len(raw) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(raw).hexdigest()
    kept = raw[:_MAX_NAME - len(_CUT) - len(digest)].decode("utf-8", "ignore")  # whole chars
    return f"{kept}{_CUT}{digest}"


def _byte_escapes(match: re.Match[str]) -> str:
    char = match.group()
    if "\udc80" <= char <= "\udcff":  # a byte that is not UTF-8, as decoded
        return f"%{ord(char) - 0xDC00:02X}"
    return "".join(f"%{byte:02X}" for byte in char.encode())


def _readable(text: str, hidden: re.Pattern[str], kept: frozenset[int] = frozenset()) -> str:
    """``text`` with its escapes decoded (UTF-8; those of ``kept`` characters stay, in upper
    case), and then what ``hidden`` matches escaped."""
    if not hidden.search(text):  # most names: nothing to decode or escape
        return text
    raw, parts, pending, start = text.encode("utf-8", "surrogatepass"), [], bytearray(), 0
    for match in _PERCENT.finditer(raw):
        pending += raw[start:match.start()]
        start, byte = match.end(), int(match[1], 16)
        if byte in kept:
            parts += [_decoded(pending, hidden), f"%{byte:02X}"]
            pending.clear()
        else:
            pending.append(byte)
    pending += raw[start:]
    parts.append(_decoded(pending, hidden))
    return "".join(parts)


def _decoded(raw: bytes | bytearray, hidden: re.Pattern[str]) -> str:
    return hidden.sub(_byte_escapes, bytes(raw).decode("utf-8", "surrogateescape"))


class Layout:
    """How a key names the parts of a URI's path: :data:`READABLE` or :data:`ESCAPED`."""

    #: The layout's name, as ``key_layout`` and the mirror's record give it.
    name: str
    #: What starts the query in the last name.
    marker: str
    #: The name of an empty segment (``a//b``, a trailing slash).
    empty: str

    def __repr__(self) -> str:
        return f"<{self.name} layout>"

    def segment(self, text: str) -> str:
        """The name of a path segment as the URI spells it (not yet cut: :func:`capped`)."""
        if text == "":
            return self.empty
        name = self._name(text)
        return "%2E" * len(name) if name in (".", "..") else name

    def query(self, text: str) -> str:
        """A query's part of the last name, after :attr:`marker`."""
        raise NotImplementedError

    def path(self, names: list[str]) -> str:
        """The path (and query) of a URI the key's ``names`` stand for: the inverse of
        :meth:`segment` and :meth:`query`, as a URI spells it.

        :raises InvalidValueError: a name was cut (its digest stands for the rest).
        """
        for name in names:
            if _CUT in name:
                raise InvalidValueError(f"the key name {name!r} was cut to fit a file name: "
                                        "the URI it stands for cannot be read back")
        last, marker, query = names[-1].partition(self.marker)
        segments = [self._segment_text(name) for name in [*names[:-1], last]]
        return "/".join(segments) + (marker and "?" + self._query_text(query))

    def _name(self, text: str) -> str:
        raise NotImplementedError

    def _segment_text(self, name: str) -> str:
        return "" if name == self.empty else self._text(name)

    def _text(self, name: str) -> str:
        raise NotImplementedError

    def _query_text(self, name: str) -> str:
        raise NotImplementedError


class _Readable(Layout):
    name, marker, empty = "readable", "?", "%"

    def query(self, text: str) -> str:
        return _readable(text, _NOT_IN_QUERY, _FORM)

    def _name(self, text: str) -> str:
        return _readable(text, _NOT_IN_SEGMENT)

    def _text(self, name: str) -> str:
        text = quote(unquote_to_bytes(name), safe=_SEGMENT_SAFE)
        return name if text in (".", "..") else text  # escaped: a client would drop them

    def _query_text(self, name: str) -> str:
        return quote(name, safe=_QUERY_SAFE)


class _Escaped(Layout):
    name, marker, empty = "escaped", "%3F", "%2F"

    def query(self, text: str) -> str:
        return escaped(text)

    def _name(self, text: str) -> str:
        return escaped(text)

    def _text(self, name: str) -> str:
        return unquote(name, errors="surrogatepass")

    _query_text = _text


#: Names as the URI's decoded text (``a b.txt``), escaping only what a name cannot hold.
READABLE: Layout = _Readable()
#: Names as the URI's text with everything but ``A-Z a-z 0-9 - . _ ~`` escaped (``a%2520b.txt``):
#: the layout of mirrors made before there was a choice.
ESCAPED: Layout = _Escaped()
LAYOUTS = {layout.name: layout for layout in (READABLE, ESCAPED)}
