"""What a finished DAG run left in the metadata database: its task instances' states, its
XComs and its Asset events, read the same way on every Airflow release the package supports
(Airflow 2 calls the models ``XCom`` and ``DatasetEvent``; Airflow 3 ``XComModel`` and
``AssetEvent``). For the demos and the tests, which run DAGs in-process with ``dag.test()``."""

from __future__ import annotations

from datetime import datetime
from inspect import signature
from pathlib import Path
from typing import Any, Final, Literal

from .compat import AIRFLOW_3

__all__ = ["NOW", "asset_events", "dag_test", "register", "states", "xcoms"]


#: ``dag_test``'s default: the run at the time it starts, as ``dag.test()`` picks it.
NOW: Final = "now"


def dag_test(dag: Any, *, logical_date: datetime | Literal["now"] | None = NOW,
             run_conf: dict[str, Any] | None = None) -> Any:
    """``dag.test()`` of ``dag``, written to the metadata database first (:func:`register`),
    with ``run_conf``, at ``logical_date``: a time (Airflow 2 calls it ``execution_date``),
    :data:`NOW`, or None for a run with none, as a manual trigger makes on Airflow 3 (Airflow 2
    needs one: now). The finished DAG run."""
    register(dag)
    if logical_date == NOW or (logical_date is None and not AIRFLOW_3):
        return dag.test(run_conf=run_conf)
    return dag.test(run_conf=run_conf, **{
        "logical_date" if AIRFLOW_3 else "execution_date": logical_date})


def register(dag: Any) -> None:
    """Write ``dag`` and its Assets to the metadata database as the DAG processor does, in the
    DAGs folder's bundle: ``dag.test()`` leaves that to the processor on some releases (3.0 then
    fails on "inactive assets"; Airflow 2 records no Dataset event), and refuses an unparsed DAG
    outside the DAGs folder on others."""
    if not AIRFLOW_3:
        dag.sync_to_db()
        return
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.collection import update_dag_parsing_results_in_db
    from airflow.serialization.serialized_objects import LazyDeserializedDAG
    from airflow.utils.session import create_session

    # its lazy serialized form; since 3.1, the time its parse took too
    parsed = LazyDeserializedDAG.from_dag(dag) if hasattr(LazyDeserializedDAG, "from_dag") \
        else _serialized_30(dag)
    since_31: dict[str, Any] = {"parse_duration": None} \
        if "parse_duration" in signature(update_dag_parsing_results_in_db).parameters else {}
    with create_session() as session:
        DagBundlesManager().sync_bundles_to_db(session=session)  # type: ignore[no-untyped-call]
    with create_session() as session:
        update_dag_parsing_results_in_db(bundle_name="dags-folder", bundle_version=None,
                                         dags=[parsed], import_errors={}, warnings=set(),
                                         session=session, **since_31)


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


def _serialized_30(dag: Any) -> Any:
    """What Airflow 3.0's DAG processor makes of a DAG its DagBag parsed: the path relative to
    the DAGs folder set (as the DagBag sets it), then serialized."""
    from airflow.serialization.serialized_objects import (  # type: ignore[attr-defined]
        LazyDeserializedDAG,
        SerializedDAG,
    )
    from airflow.settings import DAGS_FOLDER

    if getattr(dag, "relative_fileloc", None) is None:
        path = Path(dag.fileloc)
        dag.relative_fileloc = str(path.relative_to(DAGS_FOLDER)
                                   if path.is_relative_to(DAGS_FOLDER) else path)
    return LazyDeserializedDAG(data=SerializedDAG.to_dict(dag))  # type: ignore[attr-defined]
