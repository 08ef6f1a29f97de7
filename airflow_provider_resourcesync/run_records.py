"""What a finished DAG run left in the metadata database: its task instances' states, its
XComs and its Asset events, read the same way on every Airflow release the package supports
(Airflow 2 calls the models ``XCom`` and ``DatasetEvent``; Airflow 3 ``XComModel`` and
``AssetEvent``). For the demos and the tests, which run DAGs in-process with ``dag.test()``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .compat import AIRFLOW_3

__all__ = ["asset_events", "dag_test", "states", "xcoms"]


def dag_test(dag: Any, *, logical_date: datetime | None = None,
             run_conf: dict[str, Any] | None = None) -> Any:
    """``dag.test()``, at ``logical_date`` (Airflow 2 calls it ``execution_date``) if given and
    with ``run_conf``: the finished DAG run."""
    when = {} if logical_date is None else {
        "logical_date" if AIRFLOW_3 else "execution_date": logical_date}
    return dag.test(run_conf=run_conf, **when)


def states(run: Any) -> dict[str, str]:
    """Task (``task[map_index]`` when mapped) -> final state, in the order the tasks started."""
    from airflow.utils.session import create_session

    with create_session() as session:
        instances = sorted(run.get_task_instances(session=session),
                           key=lambda ti: (ti.start_date is None, ti.start_date))
        return {ti.task_id + (f"[{ti.map_index}]" if ti.map_index >= 0 else ""): str(ti.state)
                for ti in instances}


def xcoms(run: Any, key: str = "return_value") -> dict[tuple[str, int], Any]:
    """(task, map index) -> the value it pushed under ``key`` in ``run``."""
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        if AIRFLOW_3:
            from airflow.models.xcom import XComModel

            return {(row.task_id, row.map_index): XComModel.deserialize_value(row)
                    for row in session.scalars(select(XComModel).where(
                        XComModel.dag_id == run.dag_id, XComModel.run_id == run.run_id,
                        XComModel.key == key))}
        from airflow.models.xcom import XCom  # Airflow 2: its value deserialized when loaded

        return {(row.task_id, row.map_index): row.value for row in session.scalars(
            select(XCom).where(XCom.dag_id == run.dag_id, XCom.run_id == run.run_id,
                               XCom.key == key))}


def asset_events(run: Any) -> list[tuple[str, dict[str, Any]]]:
    """The Asset events ``run`` recorded: each Asset's URI and the event's ``extra``."""
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        if AIRFLOW_3:
            from airflow.models.asset import AssetEvent

            return [(event.asset.uri, event.extra) for event in session.scalars(
                select(AssetEvent).where(AssetEvent.source_run_id == run.run_id))]
        from airflow.models.dataset import DatasetEvent  # type: ignore[import-not-found]

        return [(event.dataset.uri, event.extra) for event in session.scalars(
            select(DatasetEvent).where(DatasetEvent.source_run_id == run.run_id))]
