"""The README's main command: mirror a sample ResourceSync Source in a real Airflow run.

    python -m airflow_provider_resourcesync.demo [--destination DIR] [--resources N] [--verbose]

Serves a generated Source on 127.0.0.1, gives Airflow a temporary home (SQLite; the checkout's
``dags_examples/`` as its DAGs folder), migrates the database, runs the ``mirror_to_local`` example
DAG with ``dag.test()`` (the baseline task, then the audit) and prints what was mirrored and where.

Airflow reads its configuration when first imported: nothing here imports it before :func:`main`
has set the environment.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .storage.keys import RESERVED_PREFIX
from .testing import ResourceSyncSource, SourceServer

__all__ = ["EXAMPLES", "DemoResult", "airflow_environment", "load_example_dag", "main",
           "run_demo", "sample_resources"]

#: The example DAGs, in a checkout of the repository.
EXAMPLES = Path(__file__).resolve().parents[1] / "dags_examples"
_DAG_ID = "mirror_to_local"
_SHOWN = 3


def airflow_environment(home: Path, *, verbose: bool = False) -> dict[str, str]:
    """The environment of an Airflow of its own in ``home``: SQLite, no example DAGs of
    Airflow's, the provider's example DAGs; Airflow's own logs only with ``verbose``."""
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLES),
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO" if verbose else "WARNING",
    }


def sample_resources(count: int) -> dict[str, bytes]:
    """``count`` small JSON records, name -> body."""
    return {
        f"records/record-{number:03d}.json": json.dumps({
            "id": number, "title": f"Record {number}",
            "text": f"Sample resource {number} of {count}, served by the demo's Source.",
        }, indent=1).encode() + b"\n"
        for number in range(count)
    }


def load_example_dag(name: str) -> Any:
    """The DAG ``name`` of :data:`EXAMPLES`, parsed now: the example DAGs read their destination
    from the environment when parsed."""
    path = EXAMPLES / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such example DAG (the demo runs from a checkout of "
                                "the repository)")
    spec = importlib.util.spec_from_file_location(f"resourcesync_example_{name}", path)
    assert spec is not None and spec.loader is not None  # a .py file always has both
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


@dataclass(frozen=True, slots=True)
class DemoResult:
    """What one demo run did.

    :param source: the Source's base URL.
    :param listed: how many resources the Source lists.
    :param destination: the mirror's directory.
    :param run_id: the DAG run.
    :param state: the DAG run's final state.
    :param tasks: task id -> final state.
    :param checkpoint: the baseline's XCom (None if it failed).
    :param audit: the audit's XCom (None if it failed).
    :param assets: the URIs of the asset events the run emitted.
    :param files: the mirrored files, path relative to the destination -> size; the mirror's own
        files (under ``.resourcesync/``) apart.
    :param own_files: the mirror's own files, path relative to the destination.
    """

    source: str
    listed: int
    destination: Path
    run_id: str
    state: str
    tasks: dict[str, str]
    checkpoint: dict[str, Any] | None
    audit: dict[str, Any] | None
    assets: list[str]
    files: dict[str, int]
    own_files: list[str]

    @property
    def mirrored(self) -> int:
        return len(self.files)

    @property
    def succeeded(self) -> bool:
        return self.state == "success"

    def render(self) -> str:
        """The report printed by :func:`main`."""
        tasks = ", ".join(f"{task} {state}" for task, state in self.tasks.items())
        folders = Counter(path.rpartition("/")[0] + "/" for path in self.files)
        own = Counter(_first_part(path.removeprefix(RESERVED_PREFIX)) for path in self.own_files)
        clean = self.audit is not None and self.audit["clean"]
        lines = [
            f"Source       {self.source} ({self.listed} resources, served on 127.0.0.1)",
            f"DAG run      {_DAG_ID} {self.run_id}: {self.state} ({tasks})",
            f"Destination  {self.destination}",
            f"  {self.mirrored} files mirrored, {sum(self.files.values())} bytes, in:",
            *(f"    {folder}  ({count} files)" for folder, count in sorted(folders.items())),
            *(f"  e.g. {path}" for path in sorted(self.files)[:_SHOWN]),
            f"  {RESERVED_PREFIX}  the mirror's own state: " + ", ".join(
                name if count == 1 else f"{name} ({count} files)"
                for name, count in sorted(own.items())),
            f"Asset events {', '.join(self.assets) or 'none'}",
            "Checkpoint   (XCom of task baseline)",
            _indented(self.checkpoint),
            "Audit        (XCom of task audit)",
            _indented(self.audit),
            f"Mirrored {self.mirrored} of {self.listed} resources into {self.destination}; the "
            f"audit {'found the mirror clean' if clean else 'did not find the mirror clean'}.",
        ]
        return "\n".join(lines)


def run_demo(destination: Path, *, resources: int = 36) -> DemoResult:
    """Serve a Source of ``resources`` sample resources and run the ``mirror_to_local`` example
    DAG into ``destination`` with ``dag.test()``.

    Airflow must be configured and its database migrated already (as :func:`main` does, or a
    test session); the DAGs folder must be :data:`EXAMPLES`, which ``dag.test()`` syncs to the
    database. The connection and the destination are set in the environment for the run only.
    """
    destination = destination.resolve()
    with SourceServer(max_lifetime=600) as server:
        source = ResourceSyncSource(server, resources=sample_resources(resources),
                                    content_type="application/json")
        source.publish()
        connection = {"conn_type": "resourcesync", "host": server.url("/"),
                      "extra": {"allow_private": True}}
        with _environ({"AIRFLOW_CONN_RESOURCESYNC_DEFAULT": json.dumps(connection),
                       "RESOURCESYNC_MIRROR_DIR": str(destination)}):
            run = load_example_dag(_DAG_ID).test()
        return _result(run, server.url("/"), resources, destination)


def _result(run: Any, source: str, listed: int, destination: Path) -> DemoResult:
    from airflow.models.asset import AssetEvent
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        instances = sorted(run.get_task_instances(session=session),
                           key=lambda ti: (ti.start_date is None, ti.start_date))
        tasks = {ti.task_id: str(ti.state) for ti in instances}
        xcoms = {row.task_id: XComModel.deserialize_value(row) for row in session.scalars(
            XComModel.get_many(run_id=run.run_id, dag_ids=_DAG_ID, key="return_value"))}
        assets = [event.asset.uri for event in session.scalars(
            select(AssetEvent).where(AssetEvent.source_run_id == run.run_id))]
    files, own = {}, []
    for path in sorted(destination.rglob("*")):
        if path.is_file():
            relative = path.relative_to(destination).as_posix()
            if relative.startswith(RESERVED_PREFIX):
                own.append(relative)
            else:
                files[relative] = path.stat().st_size
    return DemoResult(source, listed, destination, run.run_id, str(run.state), tasks,
                      xcoms.get("baseline"), xcoms.get("audit"), assets, files, own)


@contextmanager
def _environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for a block, then put back what was there."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _first_part(path: str) -> str:
    """``a`` of ``a``; ``a/`` of ``a/b/c``."""
    first, slash, _ = path.partition("/")
    return first + slash


def _indented(data: dict[str, Any] | None) -> str:
    text = json.dumps(data, indent=2) if data is not None else "(none: the task failed)"
    return "\n".join(f"  {line}" for line in text.splitlines())


def main(argv: list[str] | None = None) -> int:
    """Configure a throw-away Airflow, migrate its database, run the demo and print the result.

    :returns: 0 if the DAG run succeeded (the audit found the mirror clean), else 1.
    """
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_resourcesync.demo",
        description="Mirror a sample ResourceSync Source into a directory in a real Airflow run.")
    parser.add_argument("--destination", type=Path,
                        help="the mirror's directory (default: a new temporary directory, kept)")
    parser.add_argument("--resources", type=int, default=36,
                        help="how many resources the sample Source holds (default 36)")
    parser.add_argument("--verbose", action="store_true",
                        help="show Airflow's own logs and warnings")
    args = parser.parse_args(argv)
    destination = args.destination or Path(tempfile.mkdtemp(prefix="resourcesync-demo-"))
    if not args.verbose:  # warnings from Airflow's dependencies are not the demo's news
        warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="airflow-home-") as home:
        os.environ.update(airflow_environment(Path(home), verbose=args.verbose))
        print(f"Airflow home {home} (temporary, SQLite): migrating the database...", flush=True)
        from airflow.utils.db import upgradedb  # the first airflow import: after the environment

        upgradedb()
        print(f"Running the example DAG {_DAG_ID} with dag.test()...", flush=True)
        result = run_demo(destination, resources=args.resources)
    print(result.render())
    return 0 if result.succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
