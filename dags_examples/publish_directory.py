"""Publish a local directory as a ResourceSync Source, day by day.

Source: the absolute directory in ``RESOURCESYNC_PUBLISH_DIR`` (default
``~/resourcesync-collection``), listed when the task runs. Publication: the directory in
``RESOURCESYNC_PUBLISHED_DIR`` (default ``~/resourcesync-published``), the task's outlet Asset.
Serve both with any web server: the objects under ``RESOURCESYNC_PUBLISH_BASE_URL`` (default
``http://localhost:8000/collection/``), the publication under ``RESOURCESYNC_PUBLISH_URL``
(default ``http://localhost:8000/published/``).

Each run first fetches a few files' URLs (``RESOURCESYNC_PUBLISH_CHECK_URLS``, default 3; 0:
none) and fails if they do not serve the files; a server on a private address, as the default
``localhost``, is checked only with a ``resourcesync`` connection allowing it
(``allow_private``), named in ``RESOURCESYNC_PUBLISH_CHECK_CONN_ID``.

The first run publishes a Resource List of every file; each later run the files created,
changed and deleted since, in Change Dump packages and in a Change List. A Destination follows
it with the ``mirror_to_local`` DAG once, then ``incremental_mirror`` (``RESOURCESYNC_CHANGES_FROM``
``changedump`` or ``changelist``), its ``resourcesync_default`` connection's base URL at the
publication's ``capabilitylist.xml``.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_resourcesync.operators.publish import ResourceSyncPublishOperator

SOURCE = os.environ.get("RESOURCESYNC_PUBLISH_DIR", str(Path.home() / "resourcesync-collection"))
PUBLISHED = os.environ.get("RESOURCESYNC_PUBLISHED_DIR",
                           str(Path.home() / "resourcesync-published"))

with DAG(
    dag_id="publish_directory",
    schedule=timedelta(days=1),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"execution_timeout": timedelta(hours=6)},
    tags=["resourcesync", "example"],
    doc_md=__doc__,
) as dag:
    ResourceSyncPublishOperator(
        task_id="publish", source=SOURCE, publish_to=PUBLISHED,
        base_url=os.environ.get("RESOURCESYNC_PUBLISH_BASE_URL",
                                "http://localhost:8000/collection/"),
        publish_url=os.environ.get("RESOURCESYNC_PUBLISH_URL",
                                   "http://localhost:8000/published/"),
        check_urls=int(os.environ.get("RESOURCESYNC_PUBLISH_CHECK_URLS", "3")),
        resourcesync_conn_id=os.environ.get("RESOURCESYNC_PUBLISH_CHECK_CONN_ID"))
