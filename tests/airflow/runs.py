"""Reading real DAG runs: task states, XComs, Asset events, and what the Source sent."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync import run_records
from airflow_provider_resourcesync.compat import AIRFLOW_3
from airflow_provider_resourcesync.demo import load_example_dag
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.testing import ResourceSyncSource

#: The task states of an ``incremental_mirror`` run once the mirror has its baseline.
HOURLY = {"baselined": "success", "baseline": "skipped", "changes": "success",
          "sync": "success"}


#: Event-driven scheduling is Airflow 3's: on Airflow 2 the event trigger, and the example DAG
#: that watches with it, refuse to be made (test_the_event_trigger_needs_airflow_3_and_says_so).
event_driven = pytest.mark.skipif(not AIRFLOW_3, reason="the event trigger needs Airflow 3")

#: A log line at ERROR or above, as ``dag.test()`` prints it (``[error    ] ...``).
_ERROR = re.compile(r"\[(error|critical) *\]|\bERROR\b")


def error_lines(out: str) -> list[str]:
    """The lines of ``out`` (what runs printed) logged at ERROR or above: none on success."""
    return [line for line in out.splitlines() if _ERROR.search(line)]


def run_example(name: str, logical_date: datetime | None = None) -> Any:
    """A real run of the example DAG ``name`` (parsed now), at ``logical_date``; without one, on
    Airflow 3 a run with no logical date (as a manual trigger makes), on Airflow 2 at now."""
    return run_records.dag_test(load_example_dag(name), logical_date=logical_date)


def run_dag(dag_id: str, make: Callable[[], Any], *, params: dict[str, Any] | None = None,
            run_conf: dict[str, Any] | None = None) -> Any:
    """A DAG of the tasks ``make`` makes (with ``params``), run with ``dag.test()`` (with
    ``run_conf``), registered first as each release needs (:func:`run_records.dag_test`)."""
    from airflow.providers.common.compat.sdk import DAG

    with DAG(dag_id=dag_id, schedule=None, start_date=datetime(2026, 1, 1, tzinfo=UTC),
             params=params) as dag:
        make()
    return run_records.dag_test(dag, run_conf=run_conf)


def states(run: Any) -> dict[str, str]:
    """Task (``task[map_index]`` when mapped) -> final state."""
    return run_records.states(run)


def xcom(run: Any, task_id: str, map_index: int = -1) -> Any:
    return run_records.xcoms(run)[task_id, map_index]


def asset_events(run: Any) -> list[tuple[str, dict[str, Any]]]:
    """The Asset events ``run`` recorded: each Asset's URI and the event's ``extra``."""
    return run_records.asset_events(run)


def asset_event_uris(run: Any) -> list[str]:
    return [uri for uri, _ in asset_events(run)]


def resource_bodies_sent(source: ResourceSyncSource) -> list[str]:
    """The resources the Source answered with a body (200) since its log was last reset."""
    return [record.path for record in source.server.requests
            if record.path.startswith(f"{source.prefix}/res/") and record.status == 200]


def assert_mirrors(source: ResourceSyncSource, root: Path) -> None:
    mapper = KeyMapper()
    for uri, body in source.state().items():
        assert (root / mapper.key(uri)).read_bytes() == body
