"""The installed ``airflow-resourcesync`` script, run as users run it, against files and a loopback
Source. Each run costs a process start (about 0.4 s): the spec's examples run in parallel."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from tests.protocol.conftest import XML_EXAMPLES

SCRIPT = Path(sys.executable).with_name("airflow-resourcesync")
#: Of the spec's printed examples, these break a rule of the spec (see docs/protocol.md).
WITH_ERRORS = {"ex01.xml", "ex27.xml"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def examples_validated() -> dict[str, subprocess.CompletedProcess[str]]:
    with ThreadPoolExecutor(4) as pool:
        runs = pool.map(lambda path: run("validate", str(path)), XML_EXAMPLES)
        return {path.name: done for path, done in zip(XML_EXAMPLES, runs, strict=True)}


@pytest.fixture
def source() -> Iterator[ResourceSyncSource]:
    with SourceServer(max_lifetime=60) as server:
        yield ResourceSyncSource(server, resources={f"r{n}.txt": b"%d\n" % n for n in range(5)})


@pytest.mark.parametrize("example", [path.name for path in XML_EXAMPLES])
def test_validate_every_spec_example(
        examples_validated: dict[str, subprocess.CompletedProcess[str]], example: str) -> None:
    done = examples_validated[example]
    *findings, summary = done.stdout.splitlines()
    assert done.stderr == ""
    if example in WITH_ERRORS:
        assert done.returncode == 1
        assert summary.startswith(f"{XML_EXAMPLES[0].parent / example} : not valid: ")
        assert any(line.startswith("error [") for line in findings)
    else:
        assert done.returncode == 0, done.stdout
        assert summary.startswith(f"{XML_EXAMPLES[0].parent / example} : valid: 0 errors, ")
        assert all(line.startswith("warning [") for line in findings)


def test_validate_over_http(source: ResourceSyncSource) -> None:
    source.publish()
    source.server.put("/broken.xml", Path(XML_EXAMPLES[0]).read_bytes(), "application/xml")
    clean = run("validate", source.change_list_url, "--allow-private")
    assert (clean.returncode, clean.stdout) == (
        0, f"{source.change_list_url} : valid: 0 errors, 0 warnings\n")
    broken = run("validate", source.server.url("/broken.xml"), "--allow-private")
    assert broken.returncode == 1
    assert "error [" in broken.stdout and "not valid: 1 error" in broken.stdout


def test_a_readable_document_with_findings_exits_1_not_2(tmp_path: Path) -> None:
    """Times with no zone (as CORE writes them) are read as UTC and reported (spec 7)."""
    document = tmp_path / "changelist.xml"
    document.write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:rs="http://www.openarchives.org/rs/terms/">'
        '<rs:md capability="changelist" from="2020-06-02T00:00:00"/>'
        '<url><loc>http://example.org/a</loc>'
        '<rs:md change="updated" datetime="2021-01-20T20:25:31.541226"/></url></urlset>')
    done = run("validate", str(document))
    assert done.returncode == 1, done.stderr
    assert done.stdout.count("has no time zone designator") == 2
    assert "not valid: 2 errors" in done.stdout


def test_discover_says_what_it_found_and_how(source: ResourceSyncSource) -> None:
    source.publish()
    done = run("discover", source.server.url("/"), "--allow-private", "--token", "s3cret")
    assert done.returncode == 0, done.stderr
    lines = [line.split("\t") for line in done.stdout.splitlines()]
    assert ["route", "well-known"] in lines
    assert ["source-description", source.source_description_url] in lines
    assert ["capability-list", source.capability_list_url] in lines
    assert ["capability", "resourcelist", source.resource_list_url] in lines
    assert any(line[0] == "step" and "Source Description" in line[1] for line in lines)
    assert all(r.headers["authorization"] == "Bearer s3cret" for r in source.server.requests)


def test_ls_follows_an_index_to_its_parts(source: ResourceSyncSource) -> None:
    written = source.publish(max_entries=2)
    assert len([url for url in written if "resourcelist" in url]) == 4  # an index and 3 parts
    done = run("ls", source.resource_list_url, "--allow-private")
    assert done.returncode == 0, done.stderr
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert [row[0] for row in rows] == [source.uri(f"r{n}.txt") for n in range(5)]
    assert all(row[1] == "2026-01-01T00:00:00Z" and row[2] == "" for row in rows)


def test_ls_lists_changes_with_their_time_and_kind(source: ResourceSyncSource) -> None:
    updated = source.update("r1.txt", b"new\n")
    source.close_changelist()
    source.delete("r2.txt")
    source.publish()
    done = run("ls", source.change_list_url, "--allow-private")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"{updated.uri}\t2026-01-01T00:00:01Z\tupdated"
    assert done.stdout.splitlines()[1].startswith(f"{source.uri('r2.txt')}\t")
    assert done.stdout.splitlines()[1].endswith("\tdeleted")


def test_a_dead_url_exits_2_with_the_error_on_stderr() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/resourcelist.xml"
    done = run("validate", url, "--allow-private", "--tries", "1")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("airflow-resourcesync: ") and url in done.stderr
    assert "Connection refused" in done.stderr


def test_private_addresses_need_allow_private(source: ResourceSyncSource) -> None:
    source.publish()
    done = run("ls", source.resource_list_url)
    assert done.returncode == 2 and "non-public address 127.0.0.1" in done.stderr
    assert source.server.count() == 0


def test_a_missing_file_and_a_wrong_option_exit_2(tmp_path: Path) -> None:
    missing = run("validate", str(tmp_path / "missing.xml"))
    assert missing.returncode == 2 and "missing.xml" in missing.stderr
    wrong = run("ls", "https://example.org/resourcelist.xml", "--allowed-host", "https://cdn/")
    assert wrong.returncode == 2 and "allowed_hosts" in wrong.stderr


def test_the_command_line_does_not_import_airflow() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, airflow_provider_resourcesync.cli\n"
         "print(sorted(m for m in sys.modules if m.split('.')[0] == 'airflow'))"],
        capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "[]\n")
