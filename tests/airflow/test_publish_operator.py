"""The publishing task in real ``dag.test()`` runs (issue 28, items 5, 6, 8): its counts in the
XCom and the Asset event's ``extra``; a dry run that lists what a run would do and writes
nothing (the folder byte for byte as it was), first run and later run, refused or not; the
publication's Source Description at ``/.well-known/resourcesync``, where a Destination given
only the host discovers it (spec 6.3.2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.hooks.resourcesync import ResourceSyncHook
from airflow_provider_resourcesync.operators.publish import ResourceSyncPublishOperator
from airflow_provider_resourcesync.testing import ServedDirectory, SourceServer
from tests.publish.test_publish_run import write

from .runs import asset_events, error_lines, run_dag, states, xcom


def files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes; every folder (as ``None``)."""
    return {path.relative_to(root).as_posix(): path.read_bytes() if path.is_file() else None
            for path in sorted(root.rglob("*"))} if root.exists() else {}


def publishing(root: Path, out: Path, dag_id: str, **arguments: Any) -> Any:
    """A run of a DAG publishing ``root`` to ``out``."""
    return run_dag(dag_id, lambda: ResourceSyncPublishOperator(
        task_id="publish", source=str(root), publish_to=str(out),
        base_url="https://example.org/", check_urls=0, **arguments))


def test_the_xcom_and_the_asset_event_count_what_each_run_published(tmp_path: Path) -> None:
    root, out = tmp_path / "collection", tmp_path / "published"
    for number in range(4):
        write(root, f"{number}.txt", b"x" * number)
    write(root, "bad\x01.txt", b"a key no URL can carry")
    first = publishing(root, out, "publish_counted", max_skipped_share=0.5)
    assert states(first) == {"publish": "success"}
    checkpoint = xcom(first, "publish")
    assert checkpoint["stats"] == {"changes": 4, "created": 4, "updated": 0, "deleted": 0,
                                   "skipped": 1, "left": 0, "bytes": 6, "packages": 0}
    assert asset_events(first) == [(out.as_uri(), {"time": checkpoint["time"],
                                                   "stats": checkpoint["stats"]})]
    write(root, "0.txt", b"now 7")
    write(root, "new.txt", b"new")
    (root / "3.txt").unlink()
    second = publishing(root, out, "publish_counted", max_skipped_share=0.5)
    checkpoint = xcom(second, "publish")
    assert checkpoint["stats"] == {"changes": 3, "created": 1, "updated": 1, "deleted": 1,
                                   "skipped": 1, "left": 0, "bytes": 8, "packages": 1}
    assert [extra["stats"] for _, extra in asset_events(second)] == [checkpoint["stats"]]


def test_a_first_run_logs_no_error_and_the_next_starts_from_what_it_saved(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Issue 29, item 4: the first run asked for its previous XCom, and Airflow logged an ERROR
    ("XCom not found") in a run that succeeded; it is asked for only once a run has saved one."""
    root, out = tmp_path / "collection", tmp_path / "published"
    write(root, "a.txt", b"a")
    capfd.readouterr()
    assert states(publishing(root, out, "publish_quietly")) == {"publish": "success"}
    said = capfd.readouterr().out
    assert error_lines(said) == [] and "Nothing published at" in said
    write(root, "b.txt", b"b")
    assert states(publishing(root, out, "publish_quietly")) == {"publish": "success"}
    said = capfd.readouterr().out
    assert error_lines(said) == []
    assert "Starting from the publication's saved checkpoint: published up to" in said
    assert "is not the checkpoint saved" not in said  # the XCom holds it, and the counts


def test_a_dry_run_lists_what_a_run_would_publish_and_writes_nothing(tmp_path: Path) -> None:
    root, out = tmp_path / "collection", tmp_path / "published"
    for number in range(5):
        write(root, f"data/{number}.txt", b"v1")
    first = publishing(root, out, "publish_dry", dry_run=True)
    assert states(first) == {"publish": "success"} and asset_events(first) == []
    assert not out.exists()  # not even the folder, which a real run makes
    preview = xcom(first, "publish")
    assert preview["dry_run"] is True and preview["since"] is None
    assert preview["refused"] is None and preview["pending"] is None
    assert preview["stats"] == {"changes": 5, "created": 5, "updated": 0, "deleted": 0,
                                "skipped": 0, "unchanged": 0, "bytes": 10, "packages": 0}
    assert preview["examples"] == {"created": ["data/0.txt", "data/1.txt", "data/2.txt"],
                                   "skipped": []}

    assert states(publishing(root, out, "publish_dry")) == {"publish": "success"}
    write(root, "data/0.txt", b"v2 longer")
    write(root, "data/new.txt", b"new")
    (root / "data" / "4.txt").unlink()
    before = files(out)
    later = publishing(root, out, "publish_dry", dry_run=True)
    assert files(out) == before
    preview = xcom(later, "publish")
    assert preview["since"] is not None and preview["refused"] is None
    assert preview["stats"] == {"changes": 3, "created": 1, "updated": 1, "deleted": 1,
                                "skipped": 0, "unchanged": 3, "bytes": 12, "packages": 1}
    assert preview["examples"] == {"created": ["data/new.txt"], "updated": ["data/0.txt"],
                                   "deleted": ["data/4.txt"], "skipped": []}
    done = xcom(publishing(root, out, "publish_dry"), "publish")  # the run does as it said
    assert {name: done["stats"][name] for name in ("created", "updated", "deleted", "bytes",
                                                   "packages")} == {
        "created": 1, "updated": 1, "deleted": 1, "bytes": 12, "packages": 1}


def test_a_dry_run_that_would_be_refused_says_why_and_writes_nothing(tmp_path: Path) -> None:
    root, out = tmp_path / "collection", tmp_path / "published"
    for number in range(10):
        write(root, f"{number}.txt", b"x")
    assert states(publishing(root, out, "publish_dry_refused")) == {"publish": "success"}
    for number in range(5):
        (root / f"{number}.txt").unlink()
    before = files(out)
    run = publishing(root, out, "publish_dry_refused", dry_run=True)
    assert states(run) == {"publish": "success"} and files(out) == before
    preview = xcom(run, "publish")
    assert "would delete 5 of the 10 objects published, more than max_deletions=0.1" in (
        preview["refused"])
    assert preview["stats"]["deleted"] == 5 and preview["stats"]["unchanged"] == 5
    assert states(publishing(root, out, "publish_dry_refused")) == {"publish": "failed"}


def test_the_source_description_at_the_well_known_url_is_discovered_from_the_host(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, out = tmp_path / "collection", tmp_path / "published"
    write(root, "a.txt", b"a")
    with SourceServer(max_lifetime=120) as web:
        run = run_dag("publish_well_known", lambda: ResourceSyncPublishOperator(
            task_id="publish", source=str(root), publish_to=str(out),
            base_url=web.url("/collection/"), publish_url=web.url("/"), check_urls=0,
            well_known=True))
        assert states(run) == {"publish": "success"}
        assert (out / ".well-known" / "resourcesync").read_bytes() == (
            out / "description.xml").read_bytes()
        ServedDirectory(web, out, "/").refresh()
        monkeypatch.setenv("AIRFLOW_CONN_FOLLOWER", json.dumps({
            "conn_type": "resourcesync", "host": web.url("/"),
            "extra": {"allow_private": True}}))
        found = ResourceSyncHook(resourcesync_conn_id="follower").discover()
    assert [info.url for info in found.capability_lists] == [web.url("/capabilitylist.xml")]
    assert "well-known" in found.route
