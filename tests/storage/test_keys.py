"""URI -> key: injective, reversible, never escaping its prefix, for every path trick a Source
can play, in both layouts."""

from __future__ import annotations

import re
import string
from urllib.parse import quote, unquote_to_bytes

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_resourcesync.errors import (
    ConfigurationError,
    InvalidValueError,
    UnsafeContentError,
)
from airflow_provider_resourcesync.storage.keys import (
    RESERVED_PREFIX,
    KeyMapper,
    normalized,
    quoted_key,
)

_LABEL = st.text(string.ascii_lowercase + string.digits + "-", min_size=1, max_size=12).filter(
    lambda label: not label.startswith("-") and not label.endswith("-"))
_HOST = st.lists(_LABEL, min_size=1, max_size=4).map(".".join)
_SEGMENT = st.text(st.characters(exclude_characters="/?#"), max_size=30) | st.sampled_from(
    ["", ".", "..", "%2F", "%2E%2E", "%", "%3F", "a%20b", "a b", "x" * 300])
_QUERY = st.none() | st.text(st.characters(exclude_characters="#"), max_size=30)


@st.composite
def uris(draw: st.DrawFn) -> str:
    """Absolute http(s) URIs in normal form (lower-case scheme and host, no default port, a
    path): distinct ones name distinct resources."""
    scheme = draw(st.sampled_from(["http", "https"]))
    port = draw(st.none() | st.integers(1, 65535).filter(lambda p: p not in (80, 443)))
    authority = draw(_HOST) + (f":{port}" if port is not None else "")
    path = "/".join(draw(st.lists(_SEGMENT, min_size=1, max_size=5)))
    query = draw(_QUERY)
    return f"{scheme}://{authority}/{path}" + (f"?{query}" if query is not None else "")


def _assert_safe(key: str) -> None:
    assert not key.startswith("/")
    assert not key.startswith(RESERVED_PREFIX)
    assert all(segment not in ("", ".", "..") for segment in key.split("/")), key


PREFIXES = {"https://example.org/data/": "data/", "https://example.org/data/deep/": "deep/"}
MAPPERS = [KeyMapper(layout="escaped"), KeyMapper(PREFIXES, layout="escaped"),
           KeyMapper(layout="readable"), KeyMapper(PREFIXES, layout="readable")]
IDS = ["escaped", "escaped-prefixes", "readable", "readable-prefixes"]
ESCAPED_MAPPERS = MAPPERS[:2]
ANY_URI = uris() | st.builds("https://example.org/data/{}".format, _SEGMENT)


@pytest.mark.parametrize("mapper", ESCAPED_MAPPERS, ids=IDS[:2])
@settings(max_examples=300, deadline=None)
@given(st.lists(ANY_URI, unique=True, max_size=20))
def test_distinct_uris_never_share_an_escaped_key_and_keys_are_safe(
        mapper: KeyMapper, uri_list: list[str]) -> None:
    keys = [mapper.key(uri) for uri in uri_list]
    assert len(set(keys)) == len(keys)
    for key in keys:
        _assert_safe(key)


def _resource(uri: str) -> tuple[str, bytes, tuple[bytes, ...] | None]:
    """What tells resources apart in the readable layout: the URI before its path, the path's
    decoded bytes, and the query's, split at the escapes of a form's separators."""
    uri = normalized(uri)
    scheme, _, rest = uri.partition("://")
    authority, slash, path = rest.partition("/")
    path, question, query = (slash + path).partition("?")
    parts = re.split("(%26|%3D|%2B|%3B)", query, flags=re.IGNORECASE)
    kept = tuple(part.upper().encode() if i % 2 else _bytes(part) for i, part in enumerate(parts))
    return f"{scheme}://{authority}", _bytes(path), kept if question else None


def _bytes(text: str) -> bytes:
    return unquote_to_bytes(text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("mapper", MAPPERS, ids=IDS)
@settings(max_examples=300, deadline=None)
@given(st.lists(ANY_URI, unique=True, max_size=20))
def test_a_key_reads_back_to_a_uri_of_that_key_and_keys_are_safe(
        mapper: KeyMapper, uri_list: list[str]) -> None:
    for uri in uri_list:
        key = mapper.key(uri)
        _assert_safe(key)
        if "%%" not in key:  # a name cut to fit a file name cannot be read back
            back = mapper.uri(key)
            assert normalized(back) == back and mapper.key(back) == key
            if mapper.layout.name == "escaped":
                assert back == normalized(uri)


@pytest.mark.parametrize("mapper", MAPPERS[2:], ids=IDS[2:])
@settings(max_examples=300, deadline=None)
@given(st.lists(ANY_URI, unique=True, max_size=20))
def test_readable_keys_are_shared_by_one_resource_only(mapper: KeyMapper,
                                                       uri_list: list[str]) -> None:
    """Readable keys part URIs exactly as their decoded paths differ (the module's rule)."""
    by_key: dict[str, tuple[str, bytes, tuple[bytes, ...] | None]] = {}
    by_resource: dict[tuple[str, bytes, tuple[bytes, ...] | None], str] = {}
    for uri in uri_list:
        key, resource = mapper.key(uri), _resource(uri)
        assert by_key.setdefault(key, resource) == resource, (uri, key)
        assert by_resource.setdefault(resource, key) == key, (uri, key)


_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=4), st.none() | _TEXT)
def test_readable_keys_hold_the_decoded_path_and_read_back(segments: list[str],
                                                           query: str | None) -> None:
    """Any path, percent-encoded as a client does: its readable key holds each segment's text
    as itself but for the few escapes, and reads back to the same URI."""
    path = "/".join(quote(segment, safe="") for segment in segments)
    uri = f"https://example.org/{path}" + ("" if query is None else "?" + quote(query, safe=""))
    mapper = KeyMapper(layout="readable")
    key = mapper.key(uri)
    _assert_safe(key)
    if "%%" in key:
        return
    back = mapper.uri(key)
    assert mapper.key(back) == key
    assert unquote_to_bytes(back) == unquote_to_bytes(normalized(uri))
    plain = [s for s in segments if s not in ("", ".", "..") and s.isprintable()
             and not set(s) & set("%/?\\")]
    names = key.split("/")[2:]
    for segment in plain[:-1] if query is not None else plain:
        assert segment in names


@pytest.mark.parametrize(("uri", "key"), [
    # queries stay with the last segment, after %3F, which escaping never produces
    ("https://example.org/a?b=1&c=2", "https/example.org/a%3Fb%3D1%26c%3D2"),
    ("https://example.org/a?", "https/example.org/a%3F"),
    ("https://example.org/a%3F", "https/example.org/a%253F"),
    ("https://example.org/?q", "https/example.org/%2F%3Fq"),
    # percent-encoding is kept as written: %2F is not a slash
    ("https://example.org/a%2Fb", "https/example.org/a%252Fb"),
    ("https://example.org/a/b", "https/example.org/a/b"),
    ("https://example.org/a%20b", "https/example.org/a%2520b"),
    ("https://example.org/a b", "https/example.org/a%20b"),
    ("https://example.org/caf\u00e9", "https/example.org/caf%C3%A9"),
    # dot segments cannot climb
    ("https://example.org/a/../b", "https/example.org/a/%2E%2E/b"),
    ("https://example.org/a/./b", "https/example.org/a/%2E/b"),
    ("https://example.org/../../etc/passwd", "https/example.org/%2E%2E/%2E%2E/etc/passwd"),
    # trailing and double slashes are segments of their own
    ("https://example.org/a/", "https/example.org/a/%2F"),
    ("https://example.org/a", "https/example.org/a"),
    ("https://example.org/a//b", "https/example.org/a/%2F/b"),
    ("https://example.org/", "https/example.org/%2F"),
    # host and scheme are case-insensitive, the path is not
    ("HTTPS://EXAMPLE.org/A", "https/example.org/A"),
    ("https://example.org/a", "https/example.org/a"),
    # the fragment is not part of the resource
    ("https://example.org/a#part", "https/example.org/a"),
    # default ports vanish, others stay
    ("https://example.org:443/a", "https/example.org/a"),
    ("http://example.org:80/a", "http/example.org/a"),
    ("http://example.org:443/a", "http/example.org+443/a"),
    ("https://example.org:8443/a", "https/example.org+8443/a"),
    ("https://[::1]:8080/a", "https/%3A%3A1+8080/a"),
    # a name under the reserved prefix at the origin is just a path there
    ("https://example.org/.resourcesync/x", "https/example.org/.resourcesync/x"),
])
def test_escaped_path_tricks(uri: str, key: str) -> None:
    assert KeyMapper(layout="escaped").key(uri) == key


@pytest.mark.parametrize(("uri", "key"), [
    # the examples: the decoded path, as wget -x, aws s3 sync and rclone name files
    ("https://example.org/space%20dir/a%20b.txt", "https/example.org/space dir/a b.txt"),
    ("https://example.org/caf%C3%A9", "https/example.org/caf\u00e9"),
    ("https://example.org/caf%c3%a9", "https/example.org/caf\u00e9"),
    ("https://example.org/caf\u00e9", "https/example.org/caf\u00e9"),  # an IRI
    ("https://example.org/a b", "https/example.org/a b"),  # sent as a%20b
    ("https://example.org/a+b%2Bc#no", "https/example.org/a+b+c"),
    ("https://example.org/%7Euser/%23x", "https/example.org/~user/#x"),
    # what a name cannot hold stays escaped; % itself too
    ("https://example.org/a%2Fb", "https/example.org/a%2Fb"),
    ("https://example.org/a%2fb", "https/example.org/a%2Fb"),
    ("https://example.org/100%25", "https/example.org/100%25"),
    ("https://example.org/100%", "https/example.org/100%25"),
    ("https://example.org/a%3Fb", "https/example.org/a%3Fb"),
    ("https://example.org/a%5Cb", "https/example.org/a%5Cb"),
    ("https://example.org/a%00b%0A%7F%C2%85", "https/example.org/a%00b%0A%7F%C2%85"),
    ("https://example.org/evil%E2%80%AEtxt.exe", "https/example.org/evil%E2%80%AEtxt.exe"),
    ("https://example.org/%FF%C3", "https/example.org/%FF%C3"),  # not UTF-8
    ("https://example.org/%ff", "https/example.org/%FF"),
    # dot segments, however spelled, cannot climb; empty segments are %
    ("https://example.org/a/../b", "https/example.org/a/%2E%2E/b"),
    ("https://example.org/a/%2e%2E/b", "https/example.org/a/%2E%2E/b"),
    ("https://example.org/a/%2E/b", "https/example.org/a/%2E/b"),
    ("https://example.org/..%2F..%2Fetc", "https/example.org/..%2F..%2Fetc"),
    ("https://example.org/", "https/example.org/%"),
    ("https://example.org/a//b/", "https/example.org/a/%/b/%"),
    # the query after ?, a form's separators apart from their escapes
    ("https://example.org/a?b=1&c=d%20e", "https/example.org/a?b=1&c=d e"),
    ("https://example.org/a?b=1%26c%3dd%2B%3B", "https/example.org/a?b=1%26c%3Dd%2B%3B"),
    ("https://example.org/a?p=x/y%2Fz", "https/example.org/a?p=x%2Fy%2Fz"),
    ("https://example.org/a?", "https/example.org/a?"),
    ("https://example.org/?q", "https/example.org/%?q"),
    # hosts as in the escaped layout
    ("https://[::1]:8080/a", "https/%3A%3A1+8080/a"),
    ("HTTP://Example.org:80/A", "http/example.org/A"),
])
def test_readable_path_tricks(uri: str, key: str) -> None:
    assert KeyMapper(layout="readable").key(uri) == key


def test_new_mappers_are_readable_until_told() -> None:
    mapper = KeyMapper()
    assert mapper.asked is None and mapper.layout.name == "readable"
    escaped = mapper.in_layout(KeyMapper(layout="escaped").layout)
    assert escaped.asked == "escaped" and mapper.asked is None
    assert escaped.key("https://h/a%20b") == "https/h/a%2520b"
    assert mapper.key("https://h/a%20b") == "https/h/a b"


def test_an_unknown_layout_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="key_layout 'pretty' is not one of readable"):
        KeyMapper(layout="pretty")


@pytest.mark.parametrize("key", ["https/example.org", "ftp/h/x", ".resourcesync/checkpoint.json",
                                 "https//x", "data/x"])
def test_a_key_of_no_uri_is_refused(key: str) -> None:
    with pytest.raises(InvalidValueError, match="names no URI"):
        KeyMapper().uri(key)


@pytest.mark.parametrize("mapper", MAPPERS[::2], ids=IDS[::2])
@pytest.mark.parametrize("long", ["x" * 300, "\u00e9" * 150, "%C3%A9" * 40 + "\U0001f600" * 30])
def test_very_long_segments_are_cut_to_bytes_and_keep_apart(mapper: KeyMapper,
                                                             long: str) -> None:
    key_a = mapper.key(f"https://example.org/{long}a")
    key_b = mapper.key(f"https://example.org/{long}b")
    assert key_a != key_b
    for key in (key_a, key_b):
        last = key.rsplit("/", 1)[1]
        assert len(last.encode()) <= 200 and "%%" in last
        with pytest.raises(InvalidValueError, match="cut to fit a file name"):
            mapper.uri(key)


@pytest.mark.parametrize("mapper", MAPPERS[::2], ids=IDS[::2])
def test_long_query_is_cut_too(mapper: KeyMapper) -> None:
    key = mapper.key("https://example.org/a?" + "q" * 300)
    assert len(key.rsplit("/", 1)[1]) <= 200


@pytest.mark.parametrize("mapper", MAPPERS[::2], ids=IDS[::2])
def test_dot_hosts_cannot_climb(mapper: KeyMapper) -> None:
    _assert_safe(mapper.key("https://../x"))


@pytest.mark.parametrize("mapper", MAPPERS[::2], ids=IDS[::2])
def test_query_without_path_keeps_apart(mapper: KeyMapper) -> None:
    assert mapper.key("https://example.org?a/b") != mapper.key("https://example.org/b")
    assert mapper.key("https://example.org?q") != mapper.key("https://example.org/")


@pytest.mark.parametrize("uri", ["ftp://example.org/a", "file:///etc/passwd", "/relative",
                                 "https:///nohost", "https://example.org:99999/a", "mailto:x@y"])
def test_refuses_what_is_not_absolute_http(uri: str) -> None:
    with pytest.raises(UnsafeContentError, match="absolute http"):
        KeyMapper().key(uri)


@settings(max_examples=200, deadline=None)
@given(uris(), st.sampled_from(["", "#", "#part"]), st.booleans(), st.booleans())
def test_every_spelling_of_a_uri_is_its_normal_form_with_its_key(
        uri: str, fragment: str, upper: bool, port: bool) -> None:
    scheme, _, rest = uri.partition("://")
    authority, _, path = rest.partition("/")
    if port and ":" not in authority:
        authority += ":" + {"http": "80", "https": "443"}[scheme]
    if upper:
        scheme, authority = scheme.upper(), authority.upper()
    spelling = f"{scheme}://{authority}/{path}{fragment}"
    assert normalized(spelling) == normalized(uri) == uri
    for mapper in MAPPERS:
        assert mapper.key(spelling) == mapper.key(uri)


@pytest.mark.parametrize(("uri", "form"), [
    ("HTTP://H:80/x#f", "http://h/x"),
    ("http://h/x", "http://h/x"),
    ("http://h", "http://h/"),
    ("http://h?q", "http://h/?q"),
    ("http://h:/x", "http://h/x"),
    ("https://h:0443/x", "https://h/x"),
    ("http://h:0081/x", "http://h:81/x"),
    ("HTTPS://[::1]:8443/A?B#C", "https://[::1]:8443/A?B"),
    ("http://h/A%2f/b?C=D", "http://h/A%2f/b?C=D"),  # path and query as written
])
def test_normal_forms(uri: str, form: str) -> None:
    assert normalized(uri) == form
    assert KeyMapper().key(uri) == KeyMapper().key(form)


@pytest.mark.parametrize("uri", ["http://user@h/x", "http://user:secret@h/x", "http://@h/x",
                                 "HTTP://u:p@H:80/x", "http://h\\@evil/x", "http://a@b@h/x"])
def test_a_uri_with_user_information_is_refused(uri: str) -> None:
    # Issue 12, item 8: it shared the key of the URI without it.
    for refuse in (normalized, KeyMapper().key):
        with pytest.raises(UnsafeContentError, match="user information") as raised:
            refuse(uri)
        assert raised.value.rule == "no credentials in resource URIs"
        assert not raised.value.rerun_helps
        assert str(raised.value).startswith(f"{uri} : it holds user information")


@pytest.mark.parametrize("uri", ["http://a b/x", "http://h\tx/", "http://h\x00/", "http://h\\x/",
                                 "ht tp://h/x", "http\n://h/x", "http://[::1/x", "http://[::1]x/",
                                 "http://h:8o/x", "http://h:1:2/x", "http:///x", "http:h/x",
                                 "http://h:99999/x", "http://h:\u0661/x"])
def test_malformed_schemes_hosts_and_ports_are_refused(uri: str) -> None:
    with pytest.raises(UnsafeContentError, match="absolute http"):
        normalized(uri)


def test_a_very_long_refused_uri_is_shown_cut() -> None:
    uri = "ftp://h/" + "x" * 4400
    with pytest.raises(UnsafeContentError) as raised:
        normalized(uri)
    assert len(str(raised.value)) < 300
    assert str(raised.value).startswith(f"{uri[:100]}... (4408 characters) : it is not")


@pytest.mark.parametrize("prefix", ["ftp://h/", "https://user@h/", "https://h:x/"])
def test_a_uri_prefix_without_a_normal_form_is_a_configuration_error(prefix: str) -> None:
    with pytest.raises(ConfigurationError, match="key_prefixes: the URI prefix"):
        KeyMapper({prefix: "data/"})


def test_prefixes_match_every_spelling() -> None:
    mapper = KeyMapper({"HTTPS://Example.org:443/data/": "data/", "https://h": "h/"})
    assert mapper.key("https://EXAMPLE.ORG/data/x#f") == "data/x"
    assert mapper.key("https://example.org/data/x") == "data/x"
    assert mapper.key("https://h/x") == "h/x"
    assert mapper.key("https://h.evil/x") == "https/h.evil/x"  # a host name is not a prefix


@pytest.mark.parametrize(("layout", "empty", "query"), [("escaped", "%2F", "%3F"),
                                                         ("readable", "%", "?")])
def test_prefix_mappings(layout: str, empty: str, query: str) -> None:
    mapper = KeyMapper({"https://example.org/data/": "data/",
                        "https://example.org/data/deep/": "deep/",
                        "https://other.org/": "other/"}, layout=layout)
    assert mapper.key("https://example.org/data/x.csv") == "data/x.csv"
    assert mapper.key("https://example.org/data/deep/y") == "deep/y"  # the longest prefix wins
    assert mapper.key("https://example.org/data/../../z") == "data/%2E%2E/%2E%2E/z"
    assert mapper.key("https://example.org/data/") == f"data/{empty}"
    assert mapper.key("https://example.org/data/q?x#f") == f"data/q{query}x"
    assert mapper.key("https://other.org/a/b") == "other/a/b"
    assert mapper.key("https://example.org/elsewhere") == "https/example.org/elsewhere"
    for key in ("data/x.csv", "deep/y", f"data/q{query}x", "other/a/b", f"data/{empty}"):
        assert mapper.key(mapper.uri(key)) == key
    assert mapper.uri("deep/y") == "https://example.org/data/deep/y"


@pytest.mark.parametrize("prefixes", [
    {"https://example.org/": "data"},                       # no trailing slash
    {"https://example.org/": "/abs/"},                      # absolute
    {"https://example.org/": "../up/"},                     # climbing
    {"https://example.org/": "a/../../"},
    {"https://example.org/": ".resourcesync/"},             # reserved
    {"https://example.org/": ".resourcesync/x/"},
    {"https://example.org/": "https/"},                     # looks like the default layout
    {"https://example.org/": "http/x/"},
    {"https://example.org/a/": "data/", "https://example.org/b/": "data/sub/"},  # overlap
])
def test_prefix_refusals(prefixes: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError, match="key_prefixes"):
        KeyMapper(prefixes)


def test_prefix_refuses_one_key_prefix_twice() -> None:
    with pytest.raises(ConfigurationError, match="key_prefixes"):
        KeyMapper({"https://example.org/a/": "data/", "https://example.org/b/": "data/"})


@pytest.mark.parametrize("prefix", ["a//", "./", "a/./"])
def test_prefix_refuses_empty_and_dot_segments(prefix: str) -> None:
    with pytest.raises(ConfigurationError, match="key_prefixes"):
        KeyMapper({"https://example.org/": prefix})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("ab/ %+?#é\u2028~"), max_size=6), max_size=4))
def test_a_key_is_quoted_as_urllib_quotes_it(names: list[str]) -> None:
    """Keys quoted for URLs with their folders' encodings remembered: the same text as
    ``urllib.parse.quote`` (slashes kept), asked twice in a row and for keys sharing folders."""
    key = "/".join(names)
    assert quoted_key(key) == quoted_key(key) == quote(key, safe="/")
    assert quoted_key(key + "/other") == quote(key + "/other", safe="/")
