"""The docs stay true: each how-to documents every argument of its class and its examples build
the DAG they show; the failures table is the one the tasks log; every link leads somewhere."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from airflow.sdk import DAG, Asset

from airflow_provider_resourcesync.operators.audit import ResourceSyncAuditOperator
from airflow_provider_resourcesync.operators.baseline import (
    ResourceSyncBaselineOperator,
    ResourceSyncCombineShardsOperator,
)
from airflow_provider_resourcesync.operators.incremental import ResourceSyncIncrementalOperator
from airflow_provider_resourcesync.operators.publish import ResourceSyncPublishOperator
from airflow_provider_resourcesync.sensors.changelist import (
    ResourceSyncChangeListSensor,
    ResourceSyncClosedChangeListSensor,
)
from airflow_provider_resourcesync.sync.next_step import NEXT_STEPS
from airflow_provider_resourcesync.triggers.event import ResourceSyncChangeEventTrigger
from airflow_provider_resourcesync.units import pace

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
HOWTO = DOCS / "howto"
#: Each class and the page that is its how-to.
PAGES: dict[type, Path] = {
    ResourceSyncBaselineOperator: HOWTO / "baseline.md",
    ResourceSyncCombineShardsOperator: HOWTO / "baseline.md",
    ResourceSyncIncrementalOperator: HOWTO / "incremental.md",
    ResourceSyncAuditOperator: HOWTO / "audit.md",
    ResourceSyncPublishOperator: DOCS / "publishing.md",
    ResourceSyncChangeListSensor: HOWTO / "change_list_sensor.md",
    ResourceSyncClosedChangeListSensor: HOWTO / "closed_change_list_sensor.md",
    ResourceSyncChangeEventTrigger: HOWTO / "change_event_trigger.md",
}
_CODE = re.compile(r"```python\n(.*?)```", re.S)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _arguments(cls: type) -> list[str]:
    """The keyword arguments a user passes to ``cls``."""
    return [name for name, parameter in inspect.signature(cls.__init__).parameters.items()
            if name != "self" and parameter.kind is not inspect.Parameter.VAR_KEYWORD]


def _documented(page: Path) -> set[str]:
    """The names in backquotes in the first cell of the page's table rows."""
    names: set[str] = set()
    for line in page.read_text().splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`(\w+)`", line.split(" | ")[0]))
    return names


@pytest.mark.parametrize("cls", list(PAGES), ids=lambda cls: cls.__name__)
def test_a_how_to_documents_every_argument_of_its_class(cls: type) -> None:
    missing = set(_arguments(cls)) - _documented(PAGES[cls])
    assert not missing, f"{PAGES[cls].name} does not document {sorted(missing)}"


@pytest.mark.parametrize("page", sorted(HOWTO.glob("*.md")), ids=lambda page: page.name)
def test_a_how_tos_examples_build_the_dag_they_show(page: Path) -> None:
    shown = {cls for cls, where in PAGES.items() if where == page}
    blocks = _CODE.findall(page.read_text())
    assert blocks, f"{page.name} has no example"
    used: set[type] = set()
    for block in blocks:
        names: dict[str, object] = {}
        exec(compile(block, str(page), "exec"), names)
        dags = [value for value in names.values() if isinstance(value, DAG)]
        assert len(dags) == 1, f"an example of {page.name} builds no DAG"
        tasks = dags[0].tasks
        assert tasks, f"an example of {page.name} has no task"
        used.update(type(task) for task in tasks)
        used.update(type(watcher.trigger) for asset in names.values()
                    if isinstance(asset, Asset) for watcher in asset.watchers)
    assert shown <= used, f"{page.name} shows no example of {shown - used}"


def test_the_failures_table_is_what_failed_tasks_log_first() -> None:
    table = (DOCS / "operators.md").read_text()
    for kind, step in NEXT_STEPS:
        assert f"| `{kind.__name__}` | {step} |" in table, kind.__name__


def test_the_progress_lines_shown_are_as_runs_log_them() -> None:
    logs = (DOCS / "operators.md").read_text()
    assert f"Progress: {pace(15, 100, 150, 30, 'resources')}: 15 fetched" in logs
    assert f"Progress: checking: {pace(12000, 48000, None, 30, 'resources')}: 3 missing" in logs


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings."""
    return {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            for line in page.read_text().splitlines() if line.startswith("#")}


def test_every_link_in_the_docs_leads_to_a_file_and_heading_that_exist() -> None:
    pages = [ROOT / "README.md", ROOT / "dags_examples" / "README.md", *DOCS.rglob("*.md")]
    broken = []
    for page in pages:
        for target in _LINK.findall(page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists() or (anchor and linked.suffix == ".md"
                                       and anchor not in _anchors(linked)):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken
