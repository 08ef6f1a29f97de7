"""The README's main command: mirror a sample ResourceSync Source in a real Airflow run.

    python -m airflow_provider_resourcesync.demo [--destination DIR] [--resources N] [--verbose]

Serves a generated Source on 127.0.0.1, gives Airflow a temporary home (SQLite; the example
DAGs, which ship in the package, as its DAGs folder), migrates the database, runs the
``mirror_to_local`` example DAG with ``dag.test()`` (the baseline task, then the audit) and prints
what was mirrored and where; then changes three resources at the Source and runs the
``incremental_mirror`` example DAG (its sensor, then the incremental sync), and shows each change
arriving in the mirror.

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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .demo_report import Arrival, DemoResult, held_files, summarize
from .example_dags import example_dags_folder
from .storage.keys import KeyMapper
from .testing import ResourceSyncSource, SourceServer

__all__ = ["airflow_environment", "load_example_dag", "main", "run_demo", "sample_resources",
           "set_environment"]


def airflow_environment(home: Path, *, verbose: bool = False) -> dict[str, str]:
    """The environment of an Airflow of its own in ``home``: SQLite, no example DAGs of
    Airflow's, the provider's example DAGs; Airflow's own logs only with ``verbose``."""
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(example_dags_folder()),
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
    """The example DAG ``name`` (of :func:`.example_dags_folder`), parsed now: the example DAGs
    read their destination from the environment when parsed."""
    path = example_dags_folder() / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such example DAG")
    spec = importlib.util.spec_from_file_location(f"resourcesync_example_{name}", path)
    assert spec is not None and spec.loader is not None  # a .py file always has both
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def run_demo(destination: Path, *, resources: int = 36) -> DemoResult:
    """Serve a Source of ``resources`` sample resources (at least 3) and run the
    ``mirror_to_local`` example DAG into ``destination`` with ``dag.test()``; then create, update
    and delete a resource at the Source and run the ``incremental_mirror`` example DAG, which
    brings those changes into the mirror.

    Airflow must be configured and its database migrated already (as :func:`main` does, or a
    test session); the DAGs folder must be :func:`.example_dags_folder`, which ``dag.test()``
    syncs to the database. The connection and the destination are set in the environment for the
    run only.
    """
    if resources < 3:
        raise ValueError(f"resources={resources}: the demo changes three resources")
    from .run_records import dag_test  # imports airflow: once the environment is set

    destination = destination.resolve()
    sample = sample_resources(resources)
    names = sorted(sample)
    with SourceServer(max_lifetime=600) as server:
        source = ResourceSyncSource(server, resources=sample, content_type="application/json")
        source.publish()
        connection = {"conn_type": "resourcesync", "host": server.url("/"),
                      "extra": {"allow_private": True}}
        with set_environment({"AIRFLOW_CONN_RESOURCESYNC_DEFAULT": json.dumps(connection),
                       "RESOURCESYNC_MIRROR_DIR": str(destination)}):
            baseline = summarize(dag_test(load_example_dag("mirror_to_local")))
            files, own = held_files(destination)
            if not baseline.succeeded:
                return DemoResult(server.url("/"), resources, destination, baseline, files, own,
                                  None, [])
            changes = [source.update(names[0], b'{"id": 0, "title": "Record 0, revised"}\n'),
                       source.create("records/record-new.json", b'{"id": "new"}\n'),
                       source.delete(names[1])]
            source.publish()
            incremental = summarize(dag_test(load_example_dag("incremental_mirror"),
                                             logical_date=datetime.now(UTC)))
    mapper = KeyMapper()
    arrivals = [Arrival(str(record.change), mapper.key(record.uri),
                        _holds(destination / mapper.key(record.uri), record.body))
                for record in changes]
    return DemoResult(server.url("/"), resources, destination, baseline, files, own,
                      incremental, arrivals)


def _holds(path: Path, body: bytes | None) -> bool:
    """Whether ``path`` holds ``body`` (None: there is no file)."""
    if body is None:
        return not path.exists()
    return path.is_file() and path.read_bytes() == body


@contextmanager
def set_environment(values: Mapping[str, str]) -> Iterator[None]:
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


def main(argv: list[str] | None = None) -> int:
    """Configure a throw-away Airflow, migrate its database, run the demo and print the result.

    :returns: 0 if both DAG runs succeeded (the audit found the mirror clean, and every change
        arrived), else 1.
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
        print("Running the example DAGs mirror_to_local, then incremental_mirror, with "
              "dag.test()...", flush=True)
        result = run_demo(destination, resources=args.resources)
    print(result.render())
    return 0 if result.succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
