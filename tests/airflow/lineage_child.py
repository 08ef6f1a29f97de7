"""Run in a fresh interpreter by test_lineage.py: an Airflow of its own (OpenLineage's listener
is registered when Airflow loads its plugins, so the transport must be set before), with a file
transport; runs ``publish_directory``, serves the publication and runs ``mirror_to_local`` from
it. argv[1]: the work folder (the events go to ``events.jsonl`` there)."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from airflow_provider_resourcesync.demo import airflow_environment, load_example_dag
from airflow_provider_resourcesync.testing import ServedDirectory, SourceServer

work = Path(sys.argv[1])
os.environ.update(airflow_environment(work / "home"))
os.environ["AIRFLOW__OPENLINEAGE__TRANSPORT"] = json.dumps(
    {"type": "file", "log_file_path": str(work / "events.jsonl"), "append": True})
(work / "collection").mkdir(parents=True)
(work / "collection" / "a.txt").write_bytes(b"a\n")
with SourceServer(max_lifetime=300) as server:
    collection = ServedDirectory(server, work / "collection", "/collection/")
    published = ServedDirectory(server, work / "published", "/published/")
    os.environ.update({
        "RESOURCESYNC_PUBLISH_DIR": str(work / "collection"),
        "RESOURCESYNC_PUBLISHED_DIR": str(work / "published"),
        "RESOURCESYNC_PUBLISH_BASE_URL": collection.url,
        "RESOURCESYNC_PUBLISH_URL": published.url,
        "RESOURCESYNC_MIRROR_DIR": str(work / "mirror"),
        "RESOURCESYNC_PUBLISH_CHECK_CONN_ID": "resourcesync_default",
        "AIRFLOW_CONN_RESOURCESYNC_DEFAULT": json.dumps({
            "conn_type": "resourcesync", "host": published.url + "capabilitylist.xml",
            "extra": {"allow_private": True}})})
    from airflow.utils.db import upgradedb  # the first airflow import: after the environment

    upgradedb()
    collection.refresh()  # served when the run checks its URLs
    states = [load_example_dag("publish_directory").test(logical_date=datetime.now(UTC)).state]
    collection.refresh()
    published.refresh()
    states.append(load_example_dag("mirror_to_local").test().state)
print(json.dumps(states))
