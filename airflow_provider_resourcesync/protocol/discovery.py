"""Discovery parsers (spec 6.3): robots.txt ``Sitemap`` lines, HTTP ``Link`` headers, HTML links.

Pure functions over text the caller has already fetched; nothing here fetches anything. Lenient in:
a malformed part is skipped, never raised. URLs come back absolute, in document order, each once,
and only http(s) ones (a ``file:`` or ``javascript:`` link is dropped).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

__all__ = [
    "RESOURCESYNC_REL",
    "HeaderLink",
    "parse_link_header",
    "resourcesync_links_from_header",
    "resourcesync_links_from_html",
    "sitemaps_from_robots",
]

#: Relation type of a link to a Capability List (spec 6.3.3).
RESOURCESYNC_REL = "resourcesync"


def _resolve(base_url: str, reference: str) -> str | None:
    """``reference`` made absolute against ``base_url``; None unless it is an http(s) URL."""
    try:
        url = urljoin(base_url, reference)
    except ValueError:  # e.g. an unbalanced IPv6 bracket in the authority
        return None
    return url if urlsplit(url).scheme.lower() in ("http", "https") else None


def _unique(urls: Iterable[str | None]) -> list[str]:
    """The URLs in first-seen order, each once, unusable ones (None) left out."""
    return [url for url in dict.fromkeys(urls) if url is not None]


# --- robots.txt (spec 6.3.4) ----------------------------------------------------------------------

_EOL = re.compile(r"\r\n|\r|\n")


def sitemaps_from_robots(text: str, base_url: str) -> list[str]:
    """Every ``Sitemap:`` value of a robots.txt, in order, absolute and each once (spec 6.3.4).

    A Source may list several Resource Lists and ordinary Sitemaps side by side, so all directives
    count. The field name is case-insensitive; comments, blank values and other fields are ignored.
    """
    return _unique(_resolve(base_url, value) for value in _sitemap_values(text))


def _sitemap_values(text: str) -> Iterator[str]:
    for line in _EOL.split(text.removeprefix("\ufeff")):
        name, colon, value = line.partition("#")[0].partition(":")
        value = value.strip()
        if colon and value and name.strip().lower() == "sitemap":
            yield value


# --- HTTP Link header (spec 6.3.3, RFC 8288) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HeaderLink:
    """One link of an HTTP ``Link`` header (RFC 8288 section 3).

    ``href`` is absolute; ``rels`` holds the lower-cased relation types of the first ``rel``
    parameter (empty if there was none); ``params`` the other parameters, names lower-cased, the
    first occurrence of each, values unquoted.
    """

    href: str
    rels: tuple[str, ...]
    params: dict[str, str] = field(default_factory=dict, hash=False)


class _MalformedLinkError(ValueError):
    """Internal: the link-value being read is broken and is skipped."""


_OWS = " \t\r\n"  # r"\s" would also take Unicode spaces; obs-fold leaves CR LF and indentation.
_TOKEN = re.compile(r'[^\s;,="<>]+')
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)
_QUOTED_PAIR = re.compile(r"\\(.)", re.DOTALL)


class _LinkScanner:
    """A cursor over one ``Link`` field value: ``#link-value`` (RFC 8288 section 3)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def links(self) -> Iterator[tuple[str, list[tuple[str, str]]]]:
        """Each well-formed link-value as (target, [(param name, value), ...])."""
        while self._skip(_OWS + ","):
            try:
                link = self._link_value()
            except _MalformedLinkError:
                self._skip_past_link()
                continue
            yield link

    def _peek(self) -> str:
        return self.text[self.pos : self.pos + 1]

    def _skip(self, chars: str) -> bool:
        """Move past any of ``chars``; True if text is left."""
        while self.pos < len(self.text) and self.text[self.pos] in chars:
            self.pos += 1
        return self.pos < len(self.text)

    def _skip_past_link(self) -> None:
        """Move to the comma that ends the current link-value, quoted strings included."""
        while self.pos < len(self.text) and self.text[self.pos] != ",":
            quoted = _QUOTED.match(self.text, self.pos)
            self.pos = quoted.end() if quoted else self.pos + 1

    def _link_value(self) -> tuple[str, list[tuple[str, str]]]:
        if self._peek() != "<":
            raise _MalformedLinkError
        end = self.text.find(">", self.pos)
        if end < 0:
            raise _MalformedLinkError
        target = self.text[self.pos + 1 : end].strip(_OWS)
        self.pos = end + 1
        params: list[tuple[str, str]] = []
        while self._skip(_OWS) and self._peek() != ",":
            if self._peek() != ";":
                raise _MalformedLinkError
            self.pos += 1
            if self._skip(_OWS) and self._peek() not in ";,":
                params.append(self._param())
        return target, params

    def _param(self) -> tuple[str, str]:
        """``token BWS [ "=" BWS ( token / quoted-string ) ]``; a bare name has the value ""."""
        name = self._match(_TOKEN)
        if name is None:
            raise _MalformedLinkError
        value = ""
        if self._skip(_OWS) and self._peek() == "=":
            self.pos += 1
            self._skip(_OWS)
            quoted = self._match(_QUOTED, group=1)
            value = _QUOTED_PAIR.sub(r"\1", quoted) if quoted is not None else self._bare()
        return name.lower(), value

    def _bare(self) -> str:
        if self._peek() == '"':  # an opening quote that never closes
            raise _MalformedLinkError
        return self._match(_TOKEN) or ""

    def _match(self, pattern: re.Pattern[str], group: int = 0) -> str | None:
        found = pattern.match(self.text, self.pos)
        if found is None:
            return None
        self.pos = found.end()
        return found.group(group)


def parse_link_header(values: str | Iterable[str], base_url: str) -> list[HeaderLink]:
    """The links of one or several ``Link`` header values, in order (RFC 8288 section 3).

    Each value may hold several comma-separated links and may be folded over lines. Targets are
    resolved against ``base_url``. Only the first ``rel`` parameter counts (RFC 8288 section 3.3).
    A malformed link is skipped; this never raises on any text.
    """
    texts = [values] if isinstance(values, str) else values
    links = (
        _header_link(target, params, base_url)
        for text in texts
        for target, params in _LinkScanner(text).links()
    )
    return [link for link in links if link is not None]


def _header_link(target: str, params: list[tuple[str, str]], base_url: str) -> HeaderLink | None:
    href = _resolve(base_url, target)
    if href is None:
        return None
    first: dict[str, str] = {}
    for name, value in params:
        first.setdefault(name, value)
    rels = tuple(dict.fromkeys(first.pop("rel", "").lower().split()))
    return HeaderLink(href, rels, first)


def resourcesync_links_from_header(values: str | Iterable[str], base_url: str) -> list[str]:
    """Targets of ``Link`` header links with relation type ``resourcesync`` (spec 6.3.3)."""
    links = parse_link_header(values, base_url)
    return _unique(link.href for link in links if RESOURCESYNC_REL in link.rels)


# --- HTML <link> (spec 6.3.3) ---------------------------------------------------------------------

_HTML_SPACE = " \t\n\r\f"
_META_CHARSET = re.compile(rb"""<meta\s[^>]*?charset\s*=\s*["']?\s*([a-z0-9._:-]+)""", re.I)
#: BOMs win over any declaration (HTML "decode" algorithm).
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


class _LinkCollector(HTMLParser):
    """Collects the first ``<base href>`` and the hrefs of ``<link rel="... resourcesync ...">``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base_href: str | None = None
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(reversed(attrs))  # a repeated attribute: the first one counts, as in HTML
        href = values.get("href")
        if href is None:
            return
        if tag == "base" and self.base_href is None:
            self.base_href = href.strip(_HTML_SPACE)
        elif tag == "link" and RESOURCESYNC_REL in (values.get("rel") or "").lower().split():
            self.hrefs.append(href.strip(_HTML_SPACE))

    def parse_marked_section(self, i: int, report: int = 1) -> int:
        """``<![...`` is a bogus comment up to the next ``>`` in HTML content, never an error."""
        end = self.rawdata.find(">", i + 3)
        return -1 if end < 0 else end + 1


def resourcesync_links_from_html(html: str | bytes, base_url: str) -> list[str]:
    """Hrefs of ``<link>`` elements whose ``rel`` has the token ``resourcesync`` (spec 6.3.3).

    ``rel`` is a case-insensitive token list. Hrefs are resolved against the first ``<base href>``
    (itself resolved against ``base_url``), else ``base_url``. Links outside ``<head>`` count too.
    Bytes are decoded by BOM, else ``<meta charset>``, else UTF-8 with replacement characters.
    Broken HTML gives what could be read; this never raises.
    """
    collector = _LinkCollector()
    try:
        collector.feed(_decode(html) if isinstance(html, bytes) else html)
        collector.close()
    except AssertionError:  # html.parser's remaining "cannot happen" paths: keep what was read
        pass
    base = base_url
    if collector.base_href is not None:
        base = _resolve(base_url, collector.base_href) or base_url
    return _unique(_resolve(base, href) for href in collector.hrefs)


def _decode(data: bytes) -> str:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, "replace")
    declared = _META_CHARSET.search(data[:1024])
    if declared:
        try:
            return _decode_declared(data, declared.group(1).decode("ascii"))
        except (LookupError, ValueError):  # unknown, or not a text codec (rot13, idna, ...)
            pass
    return data.decode("utf-8", "replace")


def _decode_declared(data: bytes, label: str) -> str:
    """Decode with a ``<meta>``-declared charset; UTF-16/32 there means UTF-8 (HTML spec)."""
    name = codecs.lookup(label).name
    if name.startswith(("utf-16", "utf-32")):
        name = "utf-8"
    elif name in ("ascii", "iso8859-1"):  # HTML maps these labels to windows-1252
        name = "cp1252"
    return data.decode(name, "replace")
