"""The publishing task's ``keep_changes_for`` (issue 28, item 2), in real ``dag.test()`` runs:
given, it reaches the publication, which retires older Change Lists, Change Dumps and their
packages; the default keeps them."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.operators.publish import ResourceSyncPublishOperator
from tests.publish.test_publish_run import write
from tests.publish.test_retention import named_and_there

from .runs import run_dag, states


@pytest.mark.parametrize(("keep", "kept"), [({}, 2), ({"keep_changes_for": timedelta(0)}, 1)],
                         ids=["default", "none-older-than-the-resource-list"])
def test_keep_changes_for_retires_older_changes_from_a_dag_run(
        tmp_path: Path, keep: dict[str, Any], kept: int) -> None:
    """Three runs, two with changes: with ``keep_changes_for=timedelta(0)`` only the newest
    Change List and Change Dump (and its packages) are kept (each run's changes rewrite the
    Resource List, so the older ones hold nothing it lacks); by default (30 days) both."""
    root, out = tmp_path / "collection", tmp_path / "published"
    for number in range(10):
        write(root, f"{number}.txt", b"first")
    for run in range(3):
        for number in (run * 2, run * 2 + 1) if run else ():  # a fifth: past the tenth
            write(root, f"{number}.txt", f"changed in run {run}".encode())
        done = run_dag("publish_retention", lambda: ResourceSyncPublishOperator(
            task_id="publish", source=str(root), publish_to=str(out),
            base_url="https://example.org/", check_urls=0, **keep))
        assert states(done) == {"publish": "success"}
    lists, dumps = named_and_there(out)
    assert len(lists) == len(dumps) == kept
