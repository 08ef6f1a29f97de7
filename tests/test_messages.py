"""URLs in messages stay links in Airflow's log view (issue 16).

The Airflow 3 UI's log view (its ``AnsiRenderer``) links an ``http(s)://`` URL that follows
whitespace or starts a line, and takes every character up to the next whitespace as part of it:
a URL directly followed by ``:``, ``,``, ``.``, ``;`` or ``)`` links to a page that does not
exist. The provider's one form: a URL is a word of its own, and punctuation after it is set off
by a space (``https://example.org/a.xml : not found``, ``... line 3``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_resourcesync.errors import (
    ContentMismatchError,
    DocumentError,
    FetchError,
    SyncIncompleteError,
    UnsafeContentError,
)

PACKAGE = Path(__file__).parents[1] / "airflow_provider_resourcesync"
#: The UI's pattern for a link in a log line, in Python's syntax.
LINK = re.compile(r"(?:^|(?<=\s))(https?://(?:www\.|(?!www))[^\s.]+\.\S{2,}|www\.\S+\.\S{2,})")
#: What ends a sentence or a clause, and would be taken into a link.
GLUED = tuple(":,.;)")
#: Names of values that hold a URL (a variable, an attribute, a function returning one).
URL_NAME = re.compile(r"(^|_)(url|uri|loc|href|location|link|sitemap|source|document"
                      r"|capability_list)s?($|_)|^shown$", re.IGNORECASE)
#: Logging methods, whose first argument is a %-format.
LOG_METHODS = frozenset({"debug", "info", "warning", "error", "exception", "critical", "note"})

URL = "https://example.org/dataset1/changelist.xml"


def links(text: str) -> list[str]:
    """The URLs Airflow's log view makes links of in ``text``."""
    return [match.group(1) for line in text.splitlines() for match in LINK.finditer(line)]


@pytest.mark.parametrize("error", [
    FetchError("not found", url=URL, status=404, tries=3),
    ContentMismatchError(url=URL, what="md5", expected="ab", actual="cd"),
    DocumentError("not well-formed", url=URL),
    DocumentError("bad datetime", url=URL, line=12, section="7"),
    UnsafeContentError("a DTD", rule="no DTDs", url=URL, line=1),
    SyncIncompleteError("the baseline committed 3", failed=2,
                        failures=[(URL, "HTTP 404"), (f"{URL}?2", "timed out")]),
], ids=lambda error: type(error).__name__)
def test_the_log_view_links_each_url_of_an_error_whole(error: Exception) -> None:
    assert links(f"Next: re-run. {error}") == [
        url for url in (URL, f"{URL}?2") if url in str(error)]


def test_the_log_view_takes_punctuation_into_a_glued_url() -> None:
    # the pattern above is the UI's: this is what a glued URL turns into
    assert links(f"{URL}: not found, {URL}, line 3") == [f"{URL}:", f"{URL},"]


def _names(node: ast.expr) -> Iterator[str]:
    """The names an expression reads a URL from: a variable, an attribute, a called function,
    what a ``str.join`` joins."""
    if _is_join(node):
        yield from _names(node.args[0])  # type: ignore[attr-defined]
    elif isinstance(node, ast.GeneratorExp | ast.ListComp):
        yield from _names(node.elt)
        for generator in node.generators:
            yield from _names(generator.iter)
    elif isinstance(node, ast.Call):
        yield from _names(node.args[0] if _is_shown(node) and node.args else node.func)
    elif isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr


def _is_join(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "join" and isinstance(node.func.value, ast.Constant)
            and len(node.args) == 1)


def _is_shown(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == "shown"


def _holds_url(node: ast.expr) -> bool:
    return any(URL_NAME.search(name) for name in _names(node))


def _glued_in_fstring(node: ast.JoinedStr) -> Iterator[str]:
    for value, after in zip(node.values, [*node.values[1:], None], strict=True):
        if not (isinstance(value, ast.FormattedValue) and value.conversion == -1
                and _holds_url(value.value)):
            continue
        if _is_join(value.value) and str(value.value.func.value.value).startswith(GLUED):
            yield f"{{{ast.unparse(value.value)}}}"
        if isinstance(after, ast.Constant) and str(after.value).startswith(GLUED):
            yield f"{{{ast.unparse(value.value)}}}{str(after.value)[:1]}"


def _glued_in_log_call(node: ast.Call) -> Iterator[str]:
    if not (isinstance(node.func, ast.Attribute) and node.func.attr in LOG_METHODS
            and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        return
    pieces = re.split(r"%[-#0 +]*\d*(?:\.\d+)?[sdrfi]", node.args[0].value.replace("%%", ""))
    for argument, after in zip(node.args[1:], pieces[1:], strict=False):
        if after.startswith(GLUED) and _holds_url(argument):
            yield f"%s{after[:1]} with {ast.unparse(argument)}"


def glued_urls(source: str) -> list[str]:
    """Where the code puts a URL-holding value directly before punctuation, in an f-string or
    in a log call's %-format."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr):
            found += [f"line {node.lineno}: {glued}" for glued in _glued_in_fstring(node)]
        elif isinstance(node, ast.Call):
            found += [f"line {node.lineno}: {glued}" for glued in _glued_in_log_call(node)]
    return found


def test_the_scan_finds_glued_urls() -> None:
    assert glued_urls('f"{url}: x"; f"{shown(entry.loc)}, y"; f"{self.list_url})"\n'
                      'log.info("%s: %d", capability_list_url, 1)') == [
        "line 1: {url}:", "line 1: {shown(entry.loc)},", "line 1: {self.list_url})",
        "line 2: %s: with capability_list_url"]
    assert glued_urls('f"{url} : x"; f"at {url}"; f"{uri!r}: y"; log.info("%s, %s", n, url)') \
        == []


def test_no_message_of_the_package_glues_a_url_to_punctuation() -> None:
    glued = {str(path.relative_to(PACKAGE)): found for path in sorted(PACKAGE.rglob("*.py"))
             if (found := glued_urls(path.read_text()))}
    assert glued == {}
