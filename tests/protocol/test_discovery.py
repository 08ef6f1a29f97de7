"""Discovery parsers (spec 6.3) on the standard's examples and on what real Sources send."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_resourcesync.protocol.discovery import (
    HeaderLink,
    parse_link_header,
    resourcesync_links_from_header,
    resourcesync_links_from_html,
    sitemaps_from_robots,
)
from tests.protocol.conftest import EXAMPLES

BASE = "http://example.com/dir/page.html"


def example(name: str) -> str:
    return (EXAMPLES / name).read_text(encoding="utf-8")


def header_values(response: str, name: str) -> list[str]:
    """Values of one field in an HTTP/1.1 response head, obs-fold continuation lines kept."""
    values: list[str] = []
    current: str | None = None
    for line in response.splitlines()[1:]:
        if line[:1] in (" ", "\t") and current is not None:
            values[-1] += "\n" + line
            continue
        field_name, colon, value = line.partition(":")
        current = field_name if colon and field_name.lower() == name.lower() else None
        if current is not None:
            values.append(value.strip())
    return values


# --- the standard's examples ----------------------------------------------------------------------


def test_example_9_html_link() -> None:
    html = example("ex09-discovery-link.html")
    assert resourcesync_links_from_html(html, BASE) == [
        "http://www.example.com/dataset1/capabilitylist.xml"
    ]
    assert resourcesync_links_from_html(html.encode(), BASE) == [
        "http://www.example.com/dataset1/capabilitylist.xml"
    ]


def test_example_10_link_header_with_folded_line() -> None:
    values = header_values(example("ex10-discovery-link-header.http"), "Link")
    assert len(values) == 1
    assert "\n" in values[0]  # the continuation line is part of the value
    assert parse_link_header(values, BASE) == [
        HeaderLink("http://www.example.com/dataset1/capabilitylist.xml", ("resourcesync",), {})
    ]
    assert resourcesync_links_from_header(values, BASE) == [
        "http://www.example.com/dataset1/capabilitylist.xml"
    ]


def test_example_11_robots() -> None:
    assert sitemaps_from_robots(example("ex11-robots.txt"), "http://example.com/robots.txt") == [
        "http://example.com/dataset1/resourcelist.xml"
    ]


# --- robots.txt -----------------------------------------------------------------------------------

ROBOTS = "http://example.com/robots.txt"


def test_robots_every_sitemap_in_order_each_once() -> None:
    text = (
        "User-agent: *\n"
        "Sitemap: http://example.com/sitemap.xml\n"
        "Disallow: /tmp/\n"
        "sitemap: http://example.com/dataset1/resourcelist.xml\n"
        "  SITEMAP  :   http://example.com/dataset2/resourcelist.xml   \n"
        "Sitemap: http://example.com/sitemap.xml\n"
    )
    assert sitemaps_from_robots(text, ROBOTS) == [
        "http://example.com/sitemap.xml",
        "http://example.com/dataset1/resourcelist.xml",
        "http://example.com/dataset2/resourcelist.xml",
    ]


def test_robots_relative_values_resolve_against_base() -> None:
    text = "Sitemap: /dataset1/resourcelist.xml\nSitemap: rl.xml\n"
    assert sitemaps_from_robots(text, "https://example.com/a/robots.txt") == [
        "https://example.com/dataset1/resourcelist.xml",
        "https://example.com/a/rl.xml",
    ]


def test_robots_comments_and_blank_values_are_ignored() -> None:
    text = (
        "# Sitemap: http://example.com/commented-out.xml\n"
        "Sitemap: http://example.com/rl.xml # the resource list\n"
        "Sitemap:\n"
        "Sitemap:    # nothing here\n"
        "Sitemap http://example.com/no-colon.xml\n"
        "Sitemaps: http://example.com/other-field.xml\n"
    )
    assert sitemaps_from_robots(text, ROBOTS) == ["http://example.com/rl.xml"]


def test_robots_crlf_and_bom() -> None:
    text = "\ufeffSitemap: http://example.com/a.xml\r\nUser-agent: *\r\nSitemap: /b.xml\r\n"
    assert sitemaps_from_robots(text, ROBOTS) == [
        "http://example.com/a.xml",
        "http://example.com/b.xml",
    ]


def test_robots_without_sitemaps_and_unusable_values() -> None:
    assert sitemaps_from_robots("", ROBOTS) == []
    assert sitemaps_from_robots("User-agent: *\nDisallow: /\n", ROBOTS) == []
    assert sitemaps_from_robots("Sitemap: http://[::1/x.xml\n", ROBOTS) == []


# --- Link header ----------------------------------------------------------------------------------


def test_two_links_in_one_value_and_several_rels() -> None:
    value = (
        '<http://example.com/capabilitylist.xml>; rel="ResourceSync describedby", '
        "</about>; rel=author"
    )
    assert parse_link_header(value, BASE) == [
        HeaderLink("http://example.com/capabilitylist.xml", ("resourcesync", "describedby"), {}),
        HeaderLink("http://example.com/about", ("author",), {}),
    ]
    assert resourcesync_links_from_header(value, BASE) == ["http://example.com/capabilitylist.xml"]


def test_quoted_values_with_commas_semicolons_and_escapes() -> None:
    value = (
        '<cl.xml>; title="a, b; c"; rel="resourcesync"; anchor="x\\"y\\\\z", '
        '<second.xml>; title="<third.xml>; rel=resourcesync"'
    )
    links = parse_link_header(value, BASE)
    assert links == [
        HeaderLink(
            "http://example.com/dir/cl.xml",
            ("resourcesync",),
            {"title": "a, b; c", "anchor": 'x"y\\z'},
        ),
        HeaderLink(
            "http://example.com/dir/second.xml", (), {"title": "<third.xml>; rel=resourcesync"}
        ),
    ]
    assert resourcesync_links_from_header(value, BASE) == ["http://example.com/dir/cl.xml"]


def test_several_header_values() -> None:
    values = [
        "<http://example.com/a/capabilitylist.xml>; rel=resourcesync",
        '<http://example.com/style.css>; rel="stylesheet"',
        '<http://example.com/b/capabilitylist.xml>; rel="resourcesync",'
        ' <http://example.com/a/capabilitylist.xml>; rel="resourcesync"',
    ]
    assert resourcesync_links_from_header(values, BASE) == [
        "http://example.com/a/capabilitylist.xml",
        "http://example.com/b/capabilitylist.xml",
    ]
    assert len(parse_link_header(values, BASE)) == 4
    assert resourcesync_links_from_header(iter(values), BASE) == resourcesync_links_from_header(
        values, BASE
    )


def test_bare_token_rel_and_whitespace_around_equals() -> None:
    assert resourcesync_links_from_header("<cl.xml> ; rel = resourcesync", BASE) == [
        "http://example.com/dir/cl.xml"
    ]


def test_rel_must_match_a_whole_token() -> None:
    value = (
        '<a.xml>; rel="resourcesync-ish", <b.xml>; rel="alternate", <c.xml>; title="resourcesync",'
        " <d.xml>"
    )
    assert resourcesync_links_from_header(value, BASE) == []
    assert [link.rels for link in parse_link_header(value, BASE)] == [
        ("resourcesync-ish",),
        ("alternate",),
        (),
        (),
    ]


def test_only_the_first_rel_counts() -> None:
    value = '<a.xml>; rel="alternate"; rel="resourcesync"; type="a"; TYPE="b"'
    (link,) = parse_link_header(value, BASE)
    assert link.rels == ("alternate",)
    assert link.params == {"type": "a"}
    assert resourcesync_links_from_header(value, BASE) == []


def test_parameter_names_are_lower_cased_and_bare_names_kept() -> None:
    (link,) = parse_link_header('<a.xml>; REL="resourcesync"; Type=application/xml; hreflang', BASE)
    assert link == HeaderLink(
        "http://example.com/dir/a.xml",
        ("resourcesync",),
        {"type": "application/xml", "hreflang": ""},
    )
    assert hash(link) == hash(HeaderLink(link.href, link.rels, {}))


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        ",,,",
        "garbage",
        "http://example.com/cl.xml; rel=resourcesync",
        "<http://example.com/cl.xml; rel=resourcesync",
        '<http://example.com/cl.xml>; rel="resourcesync',
        "<http://example.com/cl.xml> rel=resourcesync",
        "<http://example.com/cl.xml>; rel=resource sync",
        "<http://example.com/cl.xml>; =resourcesync",
        "<http://[::1/cl.xml>; rel=resourcesync",
        "<<<>>>;;;===,,,\"\"\"'''\\\\\\",
    ],
)
def test_garbage_gives_nothing(value: str) -> None:
    assert resourcesync_links_from_header(value, BASE) == []


def test_a_malformed_link_does_not_hide_its_neighbours() -> None:
    value = (
        "garbage, <a.xml>; rel=resourcesync x, <b.xml>; rel=resourcesync,"
        ' <c.xml>; rel="resourcesync'
    )
    assert resourcesync_links_from_header(value, BASE) == ["http://example.com/dir/b.xml"]


def test_trailing_and_empty_parameters_are_tolerated() -> None:
    assert resourcesync_links_from_header("<a.xml>;; rel=resourcesync;", BASE) == [
        "http://example.com/dir/a.xml"
    ]


SAFE_URL = st.builds(
    "{}://{}.example/{}".format,
    st.sampled_from(["http", "https"]),
    st.from_regex(r"[a-z][a-z0-9-]{0,15}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9._~/-]{0,30}", fullmatch=True),
)
REL_TOKEN = st.from_regex(r"[a-z][a-z0-9.-]{0,15}", fullmatch=True)


@given(st.text())
def test_parse_link_header_never_raises(text: str) -> None:
    links = parse_link_header(text, BASE)
    assert all(isinstance(link, HeaderLink) for link in links)
    parse_link_header(text.split(","), BASE)


@given(st.lists(st.tuples(SAFE_URL, st.lists(REL_TOKEN, min_size=1, max_size=4, unique=True))))
def test_built_header_parses_back(links: list[tuple[str, list[str]]]) -> None:
    parts = [
        f"<{url}>; rel={rels[0]}" if len(rels) == 1 else f'<{url}>; rel="{" ".join(rels)}"'
        for url, rels in links
    ]
    parsed = parse_link_header(", ".join(parts), BASE)
    assert [(link.href, list(link.rels)) for link in parsed] == links
    assert parse_link_header(parts, BASE) == parsed


# --- HTML <link> ----------------------------------------------------------------------------------

PAGE = "http://example.com/dir/page.html"


def test_html_rel_is_a_case_insensitive_token_list() -> None:
    html = (
        '<HTML><HEAD><LINK REL="ResourceSync" HREF="/upper.xml">'
        '<link rel="alternate resourcesync" href="multi.xml">'
        '<link rel="resourcesync-ish" href="no1.xml"><link rel="stylesheet" href="no2.css">'
        '<link href="no3.xml"><link rel="resourcesync"><a rel="resourcesync" href="no4.xml">'
        "</HEAD></HTML>"
    )
    assert resourcesync_links_from_html(html, PAGE) == [
        "http://example.com/upper.xml",
        "http://example.com/dir/multi.xml",
    ]


def test_html_base_href_counts_first_only() -> None:
    html = (
        '<head><base target="_blank"><base href="/x/"><base href="/y/">'
        '<link rel="resourcesync" href="capabilitylist.xml">'
        '<link rel="resourcesync" href="http://other.example/cl.xml"></head>'
    )
    assert resourcesync_links_from_html(html, PAGE) == [
        "http://example.com/x/capabilitylist.xml",
        "http://other.example/cl.xml",
    ]


def test_html_base_after_the_link_still_applies() -> None:
    html = '<link rel=resourcesync href=cl.xml><base href="http://mirror.example/m/">'
    assert resourcesync_links_from_html(html, PAGE) == ["http://mirror.example/m/cl.xml"]


def test_html_unquoted_attributes_and_entities() -> None:
    html = "<link rel=resourcesync href=/a/cl.xml/><link rel=resourcesync href='b.xml?x=1&amp;y=2'>"
    assert resourcesync_links_from_html(html, PAGE) == [
        "http://example.com/a/cl.xml/",
        "http://example.com/dir/b.xml?x=1&y=2",
    ]


def test_html_link_in_body_and_duplicates() -> None:
    html = (
        "<html><head><title>t</title></head><body><p>text"
        '<link rel="resourcesync" href=" /cl.xml ">'
        '<link rel="resourcesync" href="http://example.com/cl.xml"></body></html>'
    )
    assert resourcesync_links_from_html(html, PAGE) == ["http://example.com/cl.xml"]


def test_html_links_in_comments_and_scripts_do_not_count() -> None:
    html = (
        '<!-- <link rel="resourcesync" href="commented.xml"> -->'
        '<script>document.write(\'<link rel="resourcesync" href="scripted.xml">\')</script>'
        '<link rel="resourcesync" href="real.xml">'
    )
    assert resourcesync_links_from_html(html, PAGE) == ["http://example.com/dir/real.xml"]


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('<head><link rel="resourcesync" href="cl.xml"><body><div><p><span>', ["cl.xml"]),
        ('<link rel="resourcesync" rel="x" href="cl.xml" href="other.xml">', ["cl.xml"]),
        ('<![if !IE]><link rel="resourcesync" href="cl.xml"><![endif]>', ["cl.xml"]),
        # A tag cut off by the end of the file, and one eaten by a bogus comment, are not links.
        ('<link rel="resourcesync" href="cl.xml"', []),
        ('<![ <link rel="resourcesync" href="cl.xml">', []),
    ],
)
def test_html_broken_markup(html: str, expected: list[str]) -> None:
    resolved = [f"http://example.com/dir/{href}" for href in expected]
    assert resourcesync_links_from_html(html, PAGE) == resolved


@pytest.mark.parametrize(
    "html",
    ["", "<", "<<<>>>", "<link", "<link rel=resourcesync href=http://[::1/>", "\x00\ufffd"],
)
def test_html_garbage_gives_nothing(html: str) -> None:
    assert resourcesync_links_from_html(html, PAGE) == []


def test_html_bytes_encodings() -> None:
    link = '<link rel="resourcesync" href="caf\u00e9.xml">'
    expected = ["http://example.com/dir/caf\u00e9.xml"]
    assert resourcesync_links_from_html(link.encode(), PAGE) == expected
    assert resourcesync_links_from_html(b"\xef\xbb\xbf" + link.encode(), PAGE) == expected
    assert resourcesync_links_from_html(b"\xff\xfe" + link.encode("utf-16-le"), PAGE) == expected
    latin = b'<meta charset="iso-8859-1">' + link.encode("latin-1")
    assert resourcesync_links_from_html(latin, PAGE) == expected
    declared = b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'
    assert resourcesync_links_from_html(declared + link.encode("cp1252"), PAGE) == expected
    for label in (b"utf-16", b"rot13", b"no-such-charset", b"idna", b"undefined"):
        page = b"<meta charset=" + label + b">" + link.encode()
        assert resourcesync_links_from_html(page, PAGE) == expected
    broken = b'<link rel="resourcesync" href="a\xff.xml">'
    assert resourcesync_links_from_html(broken, PAGE) == ["http://example.com/dir/a\ufffd.xml"]


@given(st.text())
def test_html_never_raises(text: str) -> None:
    resourcesync_links_from_html(text, PAGE)
    resourcesync_links_from_html(text.encode("utf-8", "surrogatepass"), PAGE)


def test_only_http_urls_come_back() -> None:
    robots = "Sitemap: file:///etc/passwd\nSitemap: ftp://e.com/x\nSitemap: /ok.xml\n"
    assert sitemaps_from_robots(robots, BASE) == ["http://example.com/ok.xml"]
    html = ('<link rel="resourcesync" href="javascript:alert(1)">'
            '<link rel="resourcesync" href="https://e.com/cap.xml">')
    assert resourcesync_links_from_html(html, BASE) == ["https://e.com/cap.xml"]
    header = '<gopher://e.com/x>; rel="resourcesync", <cap.xml>; rel="resourcesync"'
    assert resourcesync_links_from_header(header, BASE) == ["http://example.com/dir/cap.xml"]
