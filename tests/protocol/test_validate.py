"""The conformance validator: each check fires on a bad document and stays quiet on a good one."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from airflow_provider_resourcesync.errors import DocumentError
from airflow_provider_resourcesync.protocol.model import MAX_ENTRIES, Entry, Head, Link, Metadata
from airflow_provider_resourcesync.protocol.package import MANIFEST_NAME, open_package
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.validate import (
    Finding,
    Severity,
    has_errors,
    validate,
    validate_document,
    validate_source,
)
from tests.protocol.conftest import EXAMPLES, NS, XML_EXAMPLES

WITH_ERRORS = {"ex01.xml", "ex27.xml"}

UP = '<rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>'
RL = 'capability="resourcelist" at="2013-01-03T09:00:00Z"'
CL = 'capability="changelist" from="2013-01-03T00:00:00Z"'
ERROR, WARNING = Severity.ERROR, Severity.WARNING


def check(md: str | None, *entries: str, root: str = "urlset", links: str = UP) -> list[Finding]:
    """Validate a small document: the root's ``rs:md`` attributes, its links, its entries."""
    head = "" if md is None else f"<rs:md {md}/>"
    body = "\n".join(entries)
    xml = f'<?xml version="1.0"?>\n<{root} {NS}>\n{links}\n{head}\n{body}\n</{root}>\n'
    return validate_source(xml.encode(), url="http://example.com/doc.xml")


def url(inner: str = "", loc: str = "http://example.com/res1") -> str:
    return f"<url><loc>{loc}</loc>{inner}</url>"


def sitemap(inner: str = "", loc: str = "http://example.com/part1.xml") -> str:
    return f"<sitemap><loc>{loc}</loc>{inner}</sitemap>"


def change(when: str, loc: str = "http://example.com/res1", kind: str = "updated") -> str:
    return url(f'<rs:md change="{kind}" datetime="{when}"/>', loc)


def only(findings: list[Finding], severity: Severity, section: str, text: str = "",
         ) -> list[Finding]:
    """The findings of one severity and section whose message contains ``text``."""
    return [f for f in findings
            if f.severity is severity and f.section == section and text in f.message]


# -- the spec's own examples -------------------------------------------------------------------

@pytest.mark.parametrize("path", XML_EXAMPLES, ids=lambda p: p.name)
def test_verdict_on_every_spec_example(path: Path) -> None:
    findings = validate_source(path)
    assert has_errors(findings) is (path.name in WITH_ERRORS), [str(f) for f in findings]


def test_example_1_capability_case_slip_is_an_error_with_a_suggestion() -> None:
    findings = validate_source(EXAMPLES / "ex01.xml")
    [finding] = only(findings, ERROR, "7", "'resourceList' is not a defined value")
    assert "did you mean 'resourcelist'" in finding.message


def test_example_27_non_hex_hashes_are_errors_on_metadata_and_links() -> None:
    findings = only(validate_source(EXAMPLES / "ex27.xml"), ERROR, "7",
                    "is not a hex-encoded digest")
    assert len(findings) == 4
    assert {(f.line, f.loc) for f in findings} == {
        (8, "http://example.com/res4"), (20, "http://example.com/res5-full.tiff")}
    assert sum("<rs:ln" in f.message for f in findings) == 2


@pytest.mark.parametrize("name", ["ex02.xml", "ex03.xml", "ex04.xml", "ex05.xml", "ex08.xml"])
def test_walkthrough_examples_without_up_link_only_warn(name: str) -> None:
    findings = validate_source(EXAMPLES / name)
    assert findings and all(f.severity is WARNING and "rel=\"up\"" in f.message
                            for f in findings)


@pytest.mark.parametrize("name", ["ex12.xml", "ex13.xml", "ex14.xml", "ex15.xml", "ex17.xml",
                                  "ex18.xml", "ex19.xml", "ex20.xml", "ex21.xml", "ex22.xml",
                                  "ex23.xml"])
def test_complete_examples_have_no_findings_at_all(name: str) -> None:
    assert validate_source(EXAMPLES / name) == []


# -- API ---------------------------------------------------------------------------------------

def test_finding_reads_as_one_line() -> None:
    finding = Finding(ERROR, "12.1", "entries are not in forward chronological order", 14,
                      "http://example.com/res1")
    assert str(finding) == ("error [12.1] line 14 http://example.com/res1 : "
                            "entries are not in forward chronological order")
    assert str(Finding(WARNING, "Appendix A", "x")) == "warning [Appendix A]: x"


def test_has_errors_ignores_warnings() -> None:
    assert not has_errors([Finding(WARNING, "7", "x")])
    assert has_errors([Finding(WARNING, "7", "x"), Finding(ERROR, "7", "y")])
    assert not has_errors([])


def test_validate_document_matches_validate_source() -> None:
    path = EXAMPLES / "ex27.xml"
    assert validate_document(read_document(path)) == validate_source(path)


def test_unreadable_documents_raise_document_error() -> None:
    with pytest.raises(DocumentError):
        validate_source(b"<urlset")


# -- section 7: the document's own rs:md -------------------------------------------------------

def test_document_without_rs_md_is_an_error() -> None:
    assert only(check(None, url()), ERROR, "7", "no <rs:md>")
    assert check(RL, url()) == []


def test_document_without_capability_is_an_error() -> None:
    assert only(check('at="2013-01-03T09:00:00Z"', url()), ERROR, "7", "no capability")


def test_undefined_capability_is_an_error_listing_the_defined_values() -> None:
    [finding] = only(check('capability="resourcemap"', url()), ERROR, "7", "not a defined")
    assert "resourcelist" in finding.message


@pytest.mark.parametrize(("capability", "section"), [
    ("resourcedump-manifest", "11.2"), ("changedump-manifest", "13.2")])
def test_manifest_has_no_index_form(capability: str, section: str) -> None:
    findings = check(f'capability="{capability}" at="2013-01-03T09:00:00Z"', sitemap(),
                     root="sitemapindex")
    assert only(findings, ERROR, section, "no <sitemapindex> form")


def test_capability_list_index_is_discouraged() -> None:
    findings = check('capability="capabilitylist"', sitemap(), root="sitemapindex")
    assert only(findings, WARNING, "9", "should not generate")
    assert not has_errors(findings)


# -- section 7: attribute values ---------------------------------------------------------------

def test_change_value_must_be_defined() -> None:
    assert only(check(CL, url('<rs:md change="modified"/>')), ERROR, "7", "'modified'")
    assert check(CL, url('<rs:md change="deleted"/>')) == []


@pytest.mark.parametrize("value", ["md5:XYZ", "1584abdf8ebdc9802ac0c6a7402c03b6", "md5:", "",
                                   " "])
def test_hash_must_be_algorithm_and_hex(value: str) -> None:
    findings = check(RL, url(f'<rs:md hash="{value}"/>'),
                     url(f'<rs:ln rel="duplicate" href="http://m/r" hash="{value}"/>'))
    assert len(only(findings, ERROR, "7", "hash")) == 2


def test_unknown_hash_algorithm_is_a_warning() -> None:
    findings = check(RL, url('<rs:md hash="blake2b:abcdef"/>'))
    assert only(findings, WARNING, "7", "'blake2b' is unknown")
    assert not has_errors(findings)


def test_known_hashes_are_quiet() -> None:
    assert check(RL, url('<rs:md hash="md5:1584ABDF sha-1:00ff sha-256:0a1b"/>')) == []


@pytest.mark.parametrize(("pri", "bad"), [(0, True), (1_000_000, True), (-3, True),
                                           (1, False), (999_999, False)])
def test_pri_range(pri: int, bad: bool) -> None:
    entry = url(f'<rs:ln rel="duplicate" href="http://m/r" pri="{pri}"/>')
    head_link = f'{UP}<rs:ln rel="describedby" href="http://x/about" pri="{pri}"/>'
    assert len(only(check(RL, entry, links=head_link), ERROR, "7", "pri")) == (2 if bad else 0)


def test_negative_length_is_an_error() -> None:
    findings = check(RL, url('<rs:md length="-1"/><rs:ln rel="alternate" href="http://a" '
                             'length="-5"/>'))
    assert len(only(findings, ERROR, "7", "is negative")) == 2
    assert check(RL, url('<rs:md length="0"/>')) == []


def test_changefreq_must_be_defined() -> None:
    assert only(check(RL, url("<changefreq>sometimes</changefreq>")), WARNING, "7",
                "'sometimes'")
    assert check(RL, url("<changefreq>daily</changefreq>")) == []


def test_any_link_relation_is_fine() -> None:
    assert check(RL, url('<rs:ln rel="http://example.org/rel/custom x-y" href="http://a"/>'),
                 links=f'{UP}<rs:ln rel="license" href="http://l"/>') == []


def test_links_need_rel_and_href() -> None:
    head = Head(md=Metadata(capability="changelist", from_=None),
                links=(Link(rel="up", href=" "), Link(rel="", href="http://x")))
    assert len(only(list(validate(head, [])), ERROR, "7", "needs both rel and href")) == 2


def test_entry_capability_values() -> None:
    findings = check('capability="capabilitylist"', url('<rs:md capability="changeList"/>'),
                     url('<rs:md capability="audit-log"/>', "http://example.com/audit.xml"))
    assert only(findings, ERROR, "7", "did you mean 'changelist'")
    assert only(findings, WARNING, "7", "'audit-log' is not defined by this specification")


# -- Appendix A: at / from ---------------------------------------------------------------------

@pytest.mark.parametrize(("capability", "root", "attribute"), [
    ("resourcelist", "urlset", "at"), ("resourcelist", "sitemapindex", "at"),
    ("resourcedump", "urlset", "at"), ("resourcedump", "sitemapindex", "at"),
    ("resourcedump-manifest", "urlset", "at"),
    ("changelist", "urlset", "from"), ("changelist", "sitemapindex", "from"),
    ("changedump", "urlset", "from"), ("changedump", "sitemapindex", "from"),
    ("changedump-manifest", "urlset", "from"),
])
def test_mandatory_time_attribute(capability: str, root: str, attribute: str) -> None:
    findings = check(f'capability="{capability}"', root=root)
    assert only(findings, ERROR, "Appendix A", f"must have {'an' if attribute == 'at' else 'a'} "
                                               f"{attribute} attribute")
    good = check(f'capability="{capability}" {attribute}="2013-01-03T00:00:00Z"', root=root)
    assert not has_errors(good)


def test_snapshot_and_change_times_in_the_wrong_document_warn() -> None:
    findings = check(f'{CL} at="2013-01-03T00:00:00Z" completed="2013-01-03T01:00:00Z"')
    assert len(only(findings, WARNING, "7", "is not used for a Change List")) == 2
    findings = check(f'{RL} from="2013-01-03T00:00:00Z" until="2013-01-04T00:00:00Z"')
    assert len(only(findings, WARNING, "7", "is not used for a Resource List")) == 2
    assert only(check('capability="capabilitylist" at="2013-01-03T00:00:00Z"'), WARNING, "7",
                "at is not used for a Capability List")


def test_completed_before_at_and_until_before_from_are_errors() -> None:
    assert only(check(f'{RL} completed="2013-01-03T08:00:00Z"'), ERROR, "7",
                "completed 2013-01-03T08:00:00Z is before its at")
    assert only(check(f'{CL} until="2013-01-02T00:00:00Z"'), ERROR, "7", "until")
    child = sitemap('<rs:md from="2013-01-03T05:00:00Z" until="2013-01-03T04:00:00Z"/>')
    assert only(check(CL, child, root="sitemapindex"), ERROR, "7", "the entry's until")
    assert check(f'{RL} completed="2013-01-03T09:00:00Z"') == []


def test_change_index_children_should_have_from() -> None:
    findings = check(CL, sitemap(), sitemap("<rs:md/>", "http://example.com/p2.xml"),
                     root="sitemapindex")
    assert len(only(findings, WARNING, "Appendix A", "recommended")) == 2
    assert not has_errors(findings)


def test_resource_index_children_at_is_optional() -> None:
    assert check(RL, sitemap(), sitemap('<rs:md at="2013-01-03T09:00:00Z"/>', "http://p2"),
                 root="sitemapindex") == []


def test_children_time_attributes_where_not_used_warn() -> None:
    findings = check(CL, sitemap('<rs:md from="2013-01-03T00:00:00Z" at="2013-01-03T00:00:00Z"/>'),
                     root="sitemapindex")
    assert only(findings, WARNING, "Appendix A", "at is not used on entries of a Change List Index")
    findings = check(RL, url('<rs:md from="2013-01-03T00:00:00Z"/>'))
    assert only(findings, WARNING, "Appendix A", "from is not used on entries of a Resource List")


# -- 6.2 and 9-13: up links --------------------------------------------------------------------

def test_missing_up_link_is_a_warning_naming_the_document_above() -> None:
    [finding] = check(RL, url(), links="")
    assert (finding.severity, finding.section) == (WARNING, "10.1")
    assert "Capability List" in finding.message
    [finding] = check('capability="capabilitylist"', links="")
    assert (finding.severity, finding.section) == (WARNING, "9")
    assert "Source Description" in finding.message


def test_source_description_needs_no_up_link() -> None:
    assert check('capability="description"', links="") == []


# -- 8 and 9: Source Description and Capability List -------------------------------------------

def test_source_description_lists_capability_lists() -> None:
    findings = check('capability="description"', url('<rs:md capability="resourcelist"/>'))
    assert only(findings, ERROR, "8", "'resourcelist', not 'capabilitylist'")
    assert check('capability="description"', url(),
                 url('<rs:md capability="capabilitylist"/>', "http://cl2")) == []


def test_capability_list_entries_need_a_capability() -> None:
    findings = check('capability="capabilitylist"', url(), url("<rs:md/>", "http://b"))
    assert len(only(findings, ERROR, "9", "must have <rs:md capability>")) == 2


def test_capability_list_lists_each_capability_once() -> None:
    findings = check('capability="capabilitylist"',
                     url('<rs:md capability="resourcelist"/>', "http://a"),
                     url('<rs:md capability="changelist"/>', "http://b"),
                     url('<rs:md capability="resourcelist"/>', "http://c"))
    [finding] = only(findings, ERROR, "9", "listed more than once")
    assert finding.loc == "http://c" and "(first at line" in finding.message


def test_capability_list_pointing_at_description_warns() -> None:
    findings = check('capability="capabilitylist"',
                     url('<rs:md capability="description"/>', "http://a"))
    assert only(findings, WARNING, "9", "'description' in a Capability List")
    assert not has_errors(findings)


# -- 12.1 and 13.2: changes --------------------------------------------------------------------

@pytest.mark.parametrize("inner", ["", '<rs:md datetime="2013-01-03T10:00:00Z"/>'])
def test_change_list_entries_need_change(inner: str) -> None:
    assert only(check(CL, url(inner)), ERROR, "12.1", "must have <rs:md change>")


def test_change_list_out_of_order_by_datetime() -> None:
    findings = check(CL, change("2013-01-03T12:00:00Z"), change("2013-01-03T10:00:00Z", "http://b"))
    [finding] = only(findings, ERROR, "12.1", "not in forward chronological order")
    assert finding.loc == "http://b" and finding.line == 6
    assert "2013-01-03T10:00:00Z is earlier than the previous change's 2013-01-03T12:00:00Z" \
        in finding.message


def test_change_list_equal_times_are_in_order() -> None:
    assert check(CL, change("2013-01-03T12:00:00Z"), change("2013-01-03T12:00:00Z", "http://b")
                 ) == []


def test_change_list_without_datetime_is_ordered_by_lastmod() -> None:
    def entry(lastmod: str, loc: str) -> str:
        return url(f'<lastmod>{lastmod}</lastmod><rs:md change="updated"/>', loc)

    bad = check(CL, entry("2013-01-03T12:00:00Z", "http://a"), entry("2013-01-03T10:00:00Z", "b"))
    assert only(bad, ERROR, "12.1", "not in forward chronological order")
    assert check(CL, entry("2013-01-03T10:00:00Z", "http://a"),
                 entry("2013-01-03T12:00:00Z", "http://b")) == []


def test_change_list_lastmod_is_not_a_change_time_once_datetime_is_used() -> None:
    # As in Example 19: an old lastmod after datetimes, and an entry with no time at all.
    findings = check(CL, change("2013-01-03T11:00:00Z"),
                     url('<lastmod>2000-01-01T00:00:00Z</lastmod><rs:md change="created"/>', "b"),
                     url('<rs:md change="updated"/>', "http://c"),
                     change("2013-01-03T12:00:00Z", "http://d"))
    assert findings == []


def test_change_datetime_within_from_and_until() -> None:
    head = f'{CL} until="2013-01-04T00:00:00Z"'
    early, late = check(head, change("2013-01-02T23:00:00Z")), check(head, change("2013-01-05"))
    assert only(early, ERROR, "7", "datetime 2013-01-02T23:00:00Z is before the document's from")
    assert only(late, ERROR, "7", "datetime 2013-01-05T00:00:00Z is after the document's until")
    assert check(head, change("2013-01-03T00:00:00Z"), change("2013-01-04T00:00:00Z", "b")) == []


def test_times_without_a_zone_are_read_and_each_reported() -> None:
    """CORE writes ``from="2020-06-02T00:00:00"``: readable, and an error of section 7."""
    findings = check('capability="changelist" from="2020-06-02T00:00:00"',
                     url('<lastmod>2021-01-20T20:25:31.541226</lastmod>'
                         '<rs:md change="updated" datetime="2020-06-03T00:00:00Z"/>'))
    assert [f.message for f in only(findings, ERROR, "7", "no time zone")] == [
        "the document's from 2020-06-02T00:00:00 has no time zone designator (a W3C Datetime "
        "needs Z or +hh:mm); read as UTC",
        "the entry's <lastmod> 2021-01-20T20:25:31.541226 has no time zone designator (a W3C "
        "Datetime needs Z or +hh:mm); read as UTC"]
    assert len(findings) == 2


def test_lastmod_outside_from_and_until_is_fine() -> None:
    entry = url('<lastmod>2000-01-01T00:00:00Z</lastmod>'
                '<rs:md change="created" datetime="2013-01-03T11:00:00Z"/>')
    assert check(f'{CL} until="2013-01-04T00:00:00Z"', entry) == []


CDM = 'capability="changedump-manifest" from="2013-01-02T00:00:00Z"'


def test_change_dump_manifest_order_and_change() -> None:
    findings = check(CDM,
                     url('<rs:md change="updated" datetime="2013-01-02T13:00:00Z" path="/a"/>'),
                     url('<rs:md change="created" datetime="2013-01-02T12:00:00Z" path="/b"/>'),
                     url('<rs:md path="/c"/>'))
    assert only(findings, ERROR, "13.2", "not in forward chronological order")
    assert only(findings, ERROR, "13.2", "must have <rs:md change>")


# -- 12.2 and 13.1: indexes and dumps of changes -----------------------------------------------

def interval(start: str, end: str | None = None, loc: str = "http://example.com/cl.xml") -> str:
    until = f' until="{end}"' if end else ""
    return sitemap(f'<rs:md from="{start}"{until}/>', loc)


def test_change_list_index_children_in_forward_order() -> None:
    findings = check(CL, interval("2013-01-04T00:00:00Z", "2013-01-05T00:00:00Z", "http://a"),
                     interval("2013-01-03T00:00:00Z", "2013-01-04T00:00:00Z", "http://b"),
                     root="sitemapindex")
    [finding] = only(findings, ERROR, "12.2", "not in forward chronological order")
    assert finding.loc == "http://b"


def test_change_list_index_only_the_last_child_is_open() -> None:
    findings = check(CL, interval("2013-01-03T00:00:00Z", None, "http://a"),
                     interval("2013-01-04T00:00:00Z", None, "http://b"),
                     root="sitemapindex")
    [finding] = only(findings, ERROR, "12.2", "only the last may be open")
    assert finding.loc == "http://a" and "the next is http://b" in finding.message


def test_change_list_index_child_until_not_before_from() -> None:
    findings = check(CL, interval("2013-01-04T00:00:00Z", "2013-01-03T12:00:00Z"),
                     root="sitemapindex")
    assert only(findings, ERROR, "7", "until 2013-01-03T12:00:00Z is before its from")


def test_change_list_index_children_within_its_interval() -> None:
    head = f'{CL} until="2013-01-05T00:00:00Z"'
    findings = check(head, interval("2013-01-02T00:00:00Z", "2013-01-04T00:00:00Z", "http://a"),
                     interval("2013-01-04T00:00:00Z", "2013-01-06T00:00:00Z", "http://b"),
                     root="sitemapindex")
    assert only(findings, ERROR, "12.2", "before the Change List Index's from")
    assert only(findings, ERROR, "12.2", "until 2013-01-06T00:00:00Z is after")
    assert check(head, interval("2013-01-03T00:00:00Z", "2013-01-05T00:00:00Z"),
                 root="sitemapindex") == []


def test_change_dump_index_follows_the_change_list_index_rules() -> None:
    findings = check('capability="changedump" from="2013-01-03T00:00:00Z"',
                     interval("2013-01-03T00:00:00Z", None, "http://a"),
                     interval("2013-01-04T00:00:00Z", None, "http://b"), root="sitemapindex")
    assert only(findings, ERROR, "13.1", "only the last may be open")


def test_change_dump_packages_should_be_in_forward_order() -> None:
    head = 'capability="changedump" from="2013-01-01T00:00:00Z"'
    by_from = check(head, url('<rs:md from="2013-01-02T00:00:00Z"/>', "http://a"),
                    url('<rs:md from="2013-01-01T00:00:00Z"/>', "http://b"))
    [finding] = only(by_from, WARNING, "13.1", "not in forward chronological order")
    assert finding.loc == "http://b" and not has_errors(by_from)
    by_lastmod = check(head, url("<lastmod>2013-01-02T00:00:00Z</lastmod>", "http://a"),
                       url("<lastmod>2013-01-01T00:00:00Z</lastmod>", "http://b"))
    assert only(by_lastmod, WARNING, "13.1", "not in forward chronological order")


# -- 11.2 and 13.2: manifests ------------------------------------------------------------------

RDM = 'capability="resourcedump-manifest" at="2013-01-03T09:00:00Z"'


@pytest.mark.parametrize(("inner", "text"), [
    ("", "must have <rs:md path>"),
    ('<rs:md path="resources/res1"/>', "does not start with '/'"),
    ('<rs:md path="/resources/../../etc/passwd"/>', "has a '..' segment"),
    ('<rs:md path="/resources\\..\\x"/>', "contains a backslash"),
    ('<rs:md path="/a//b"/>', "has a '' segment"),
    ('<rs:md path="/./b"/>', "has a '.' segment"),
    ('<rs:md path="/\\evil"/>', "is an absolute path"),
    ('<rs:md path="/C:/evil"/>', "is an absolute path"),
])
def test_resource_dump_manifest_paths(inner: str, text: str) -> None:
    assert only(check(RDM, url(inner)), ERROR, "11.2", text)


def test_resource_dump_manifest_good_paths_are_quiet() -> None:
    assert check(RDM, url('<rs:md path="/resources/res1..v2"/>')) == []


@pytest.mark.parametrize("path", [
    "/a//b", "/./b", "/a\\b", "/\\evil", "/a/../b", "a/b", "//a", "/C:/a", "/a/", "/",
    "/a/b", "/a..b/.c",
])
def test_manifest_paths_are_refused_exactly_where_open_package_refuses_or_forgives_them(
        path: str) -> None:
    """The validator is strict where reading forgives: a path without its leading '/'."""
    manifest = (f'<urlset {NS}><rs:md {RDM}/>{UP}'
                f'<url><loc>http://example.com/a</loc><rs:md path="{path}"/></url></urlset>')
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(MANIFEST_NAME, manifest)
        archive.writestr("a/b", b"b")
        archive.writestr("a..b/.c", b"c")
    try:
        open_package(io.BytesIO(buffer.getvalue())).close()
    except DocumentError:
        opened = False
    else:
        opened = True
    forgiven = opened and not path.startswith("/")
    assert has_errors(validate_document(read_document(manifest.encode()))) is (
        not opened or forgiven)


PATCH = "http://www.openarchives.org/rs/terms/patch"


@pytest.mark.parametrize(("link", "problem"), [
    (f'<rs:ln rel="{PATCH}" href="http://e/p" type="application/json-patch"/>', "must have path"),
    (f'<rs:ln rel="{PATCH} alternate" href="http://e/p" type="t"/>', "must have path"),
    (f'<rs:ln rel="{PATCH}" href="http://e/p" type="t" path="p"/>', "does not start with '/'"),
    (f'<rs:ln rel="{PATCH}" href="http://e/p" type="t" path="/changes/p"/>', None),
    ('<rs:ln rel="alternate" href="http://e/p" type="t"/>', None),
])
def test_change_dump_manifest_patch_links_have_a_path(link: str, problem: str | None) -> None:
    entry = url(f'<rs:md change="updated" datetime="2013-01-02T20:00:00Z" path="/a"/>{link}')
    found = only(check(CDM, entry), ERROR, "14.4")
    assert [problem in f.message for f in found] == ([] if problem is None else [True])
    assert only(check(CL, url(f'<rs:md change="updated"/>{link}')), ERROR, "14.4") == []


def test_change_dump_manifest_path_needed_except_for_deletions() -> None:
    deleted = url('<rs:md change="deleted" datetime="2013-01-02T19:00:00Z"/>')
    updated = url('<rs:md change="updated" datetime="2013-01-02T20:00:00Z"/>', "http://b")
    findings = check(CDM, deleted, updated)
    [finding] = only(findings, ERROR, "13.2", "must have <rs:md path>")
    assert finding.loc == "http://b"


# -- section 7: 50,000 entries, streaming ------------------------------------------------------

def test_entry_limit_is_flagged_while_streaming() -> None:
    consumed = 0

    def entries() -> Iterator[Entry]:
        nonlocal consumed
        for i in range(60_000):
            consumed += 1
            yield Entry(f"http://example.com/res{i}", line=i + 1)

    head = Head(md=Metadata(capability="resourcelist", at=datetime(2013, 1, 3, tzinfo=UTC)),
                links=(Link(rel="up", href="http://example.com/cl.xml"),))
    findings = validate(head, entries())
    limit = next(findings)
    assert consumed == MAX_ENTRIES + 1
    assert (limit.severity, limit.section, limit.line) == (ERROR, "7", MAX_ENTRIES + 1)
    assert "more than 50,000 entries" in limit.message
    assert list(findings) == [] and consumed == 60_000


def test_entry_limit_not_reached() -> None:
    head = Head(md=Metadata(capability="resourcelist"))
    entries = (Entry(f"http://example.com/res{i}") for i in range(MAX_ENTRIES))
    assert not [f for f in validate(head, entries) if "entries in one document" in f.message]


# -- robustness --------------------------------------------------------------------------------

ODD_DOCUMENTS = [
    (None, [url()], "urlset"),
    ('capability="nonsense" at="2013" from="2013" until="2012"',
     [url('<rs:md capability="x" change="y" at="2013" from="2014" until="2013"/>')], "urlset"),
    ('capability="changelist"', [sitemap(), sitemap("<rs:md/>", "b"), sitemap("", "c")],
     "sitemapindex"),
    ('capability="changedump-manifest"', [url('<rs:md change="deleted" path=""/>')], "urlset"),
    ('capability="description"', [url('<rs:md capability="description"/>')], "sitemapindex"),
    ('capability=" ChangeList "', [url("<lastmod>2013</lastmod>"), url()], "urlset"),
]


@pytest.mark.parametrize(("md", "entries", "root"), ODD_DOCUMENTS)
def test_validator_never_raises_on_readable_documents(md: str | None, entries: list[str],
                                                      root: str) -> None:
    findings = check(md, *entries, root=root, links="")
    assert all(isinstance(f, Finding) and f.section for f in findings)
