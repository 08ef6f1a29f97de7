"""The README's second command: publish a directory as a ResourceSync Source and follow it, in
real Airflow runs.

    python -m airflow_provider_resourcesync.demo_publish [--directory DIR] [--verbose]

Writes a sample collection into a directory, serves it and its publication on 127.0.0.1, gives
Airflow a temporary home (as :mod:`.demo` does), and runs with ``dag.test()``: the
``publish_directory`` example DAG (a Resource List of every file); ``mirror_to_local`` from the
publication; then, after three changes to the directory, ``publish_directory`` again (a Change
Dump package and a Change List of the changes) and ``incremental_mirror`` reading the Change
Dump. It prints each run and whether the mirror equals the directory.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .demo import airflow_environment, load_example_dag, sample_resources, set_environment
from .demo_report import summarize
from .storage.keys import KeyMapper
from .testing import ServedDirectory, SourceServer

__all__ = ["main", "run_publish_demo"]


def run_publish_demo(work: Path, *, log: bool = True) -> bool:
    """Publish ``work/collection`` (written with sample files) to ``work/published``, follow it
    into ``work/mirror``, change the collection, publish and follow again; whether the mirror
    then equals the collection. Airflow must be configured and migrated (as :func:`main` does).
    """
    from .run_records import dag_test  # imports airflow: once the environment is set

    collection, published, mirror = work / "collection", work / "published", work / "mirror"
    for name, body in sample_resources(12).items():
        (collection / name).parent.mkdir(parents=True, exist_ok=True)
        (collection / name).write_bytes(body)
    today = datetime.now(UTC)
    with SourceServer(max_lifetime=600) as server:
        files = ServedDirectory(server, collection, "/collection/")
        publication = ServedDirectory(server, published, "/published/")
        connection = {"conn_type": "resourcesync", "host": publication.url,
                      "extra": {"allow_private": True}}
        with set_environment({"AIRFLOW_CONN_RESOURCESYNC_DEFAULT": json.dumps(connection),
                       "RESOURCESYNC_PUBLISH_DIR": str(collection),
                       "RESOURCESYNC_PUBLISHED_DIR": str(published),
                       "RESOURCESYNC_PUBLISH_BASE_URL": files.url,
                       "RESOURCESYNC_PUBLISH_URL": publication.url,
                       "RESOURCESYNC_PUBLISH_CHECK_CONN_ID": "resourcesync_default",
                       "RESOURCESYNC_MIRROR_DIR": str(mirror),
                       "RESOURCESYNC_CHANGES_FROM": "changedump"}):
            def run(dag_id: str, when: datetime | None = None) -> bool:
                files.refresh()  # served as they are when the run checks their URLs
                result = summarize(dag_test(load_example_dag(dag_id), logical_date=when))
                files.refresh()
                publication.refresh()
                server.put("/.well-known/resourcesync",  # where Destinations look (6.3.2)
                           (published / "description.xml").read_bytes(), "application/xml")
                if log:
                    print(result.line(), flush=True)
                return result.succeeded

            ok = run("publish_directory", today) and run("mirror_to_local")
            names = sorted(path for path in collection.rglob("*") if path.is_file())
            names[0].write_bytes(b'{"id": 0, "title": "Record 0, revised"}\n')
            (collection / "records" / "record-new.json").write_bytes(b'{"id": "new"}\n')
            names[1].unlink()
            if log:
                print("Changed the collection: one file updated, one created, one deleted",
                      flush=True)
            ok = ok and run("publish_directory", today + timedelta(days=1)) and run(
                "incremental_mirror", today + timedelta(days=1))
            mapper = KeyMapper()
            equal = all((mirror / mapper.key(url)).read_bytes() == body
                        for url, body in files.files().items()) and sum(
                1 for path in mirror.rglob("*") if path.is_file()
                and ".resourcesync" not in path.parts) == len(files.files())
    if log:
        print(f"Published {collection} to {published}; the mirror at {mirror} "
              f"{'equals' if equal else 'does NOT equal'} the collection.")
    return ok and equal


def main(argv: list[str] | None = None) -> int:
    """Configure a throw-away Airflow, migrate its database, run the demo; 0 if the mirror
    equals the collection published."""
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_resourcesync.demo_publish",
        description="Publish a directory as a ResourceSync Source and follow it, in real "
                    "Airflow runs.")
    parser.add_argument("--directory", type=Path,
                        help="where the collection, publication and mirror go (default: a new "
                             "temporary directory, kept)")
    parser.add_argument("--verbose", action="store_true",
                        help="show Airflow's own logs and warnings")
    args = parser.parse_args(argv)
    work = args.directory or Path(tempfile.mkdtemp(prefix="resourcesync-publish-demo-"))
    if not args.verbose:
        warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="airflow-home-") as home:
        os.environ.update(airflow_environment(Path(home), verbose=args.verbose))
        print(f"Airflow home {home} (temporary, SQLite): migrating the database...", flush=True)
        from airflow.utils.db import upgradedb  # the first airflow import: after the environment

        upgradedb()
        ok = run_publish_demo(work.resolve())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
