"""What a finished DAG run left in the metadata database: its task instances' states, its
XComs and its Asset events, read the same way on every Airflow release the package supports
(Airflow 2 calls the models ``XCom`` and ``DatasetEvent``; Airflow 3 ``XComModel`` and
``AssetEvent``). For the demos and the tests, which run DAGs in-process with ``dag.test()``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from packaging.version import Version

from .compat import AIRFLOW_3, AIRFLOW_VERSION

__all__ = ["asset_events", "dag_test", "states", "write_dag", "xcoms"]


def dag_test(dag: Any, *, logical_date: datetime | None = None,
             run_conf: dict[str, Any] | None = None) -> Any:
    """``dag.test()``, at ``logical_date`` (Airflow 2 calls it ``execution_date``) if given and
    with ``run_conf``: the finished DAG run. Before Airflow 3.1, ``dag.test()`` writes nothing
    of the DAG to the database, so its Assets are unknown there (Airflow 2 records no event for
    them, and 3.0 fails a task naming its outlets "inactive assets"): the DAG is written first
    (:func:`write_dag`)."""
    if Version("3.1") > AIRFLOW_VERSION:
        write_dag(dag)
    when = {} if logical_date is None else {
        "logical_date" if AIRFLOW_3 else "execution_date": logical_date}
    return dag.test(run_conf=run_conf, **when)


def write_dag(dag: Any) -> None:
    """Write ``dag`` to the metadata database as the DAG processor does (on Airflow 3, in the
    DAGs folder's bundle, serialized): the DAG, its Assets (active) and their watchers."""
    from airflow.utils.session import create_session

    if not AIRFLOW_3:
        dag.sync_to_db()
        return
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.collection import update_dag_parsing_results_in_db
    from airflow.serialization.serialized_objects import LazyDeserializedDAG

    update: Callable[..., None] = update_dag_parsing_results_in_db  # its parameters vary
    if Version("3.1") > AIRFLOW_VERSION:  # 3.0: no from_dag, and no parse duration
        from airflow.serialization import serialized_objects

        # as 3.0's DagBag does: the file's path in its bundle, else its own
        dag.relative_fileloc = getattr(dag, "relative_fileloc", None) or dag.fileloc
        serialized = serialized_objects.SerializedDAG.to_dict(dag)  # type: ignore[attr-defined]
        results: tuple[Any, ...] = ([LazyDeserializedDAG(data=serialized)], {}, set())
    else:
        results = ([LazyDeserializedDAG.from_dag(dag)], {}, None, set())
    with create_session() as session:
        DagBundlesManager().sync_bundles_to_db(session=session)  # type: ignore[no-untyped-call]
    with create_session() as session:
        update("dags-folder", None, *results, session=session)


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
