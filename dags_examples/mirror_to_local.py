"""Mirror a ResourceSync Source into a local directory, then audit the mirror.

Connections: ``resourcesync_default`` (type ``resourcesync``), whose base URL is the Source's; the
Capability List is discovered from there.

Destination: the absolute directory in the ``RESOURCESYNC_MIRROR_DIR`` environment variable, read
when the DAG is parsed (default ``~/resourcesync-mirror``). It is the baseline's outlet Asset
(``file:///...``): DAGs scheduled on it run after each successful baseline.

Each run makes the directory hold what the Source lists: resources held unchanged are not fetched
again, and what the Source no longer lists is removed. The audit then checks the mirror against
the Source's Resource List and fails the run if they differ.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_resourcesync.operators.audit import ResourceSyncAuditOperator
from airflow_provider_resourcesync.operators.baseline import ResourceSyncBaselineOperator

DESTINATION = os.environ.get("RESOURCESYNC_MIRROR_DIR", str(Path.home() / "resourcesync-mirror"))

with DAG(
    dag_id="mirror_to_local",
    schedule=None,
    catchup=False,
    # no task runs for ever, whatever a Source does: give a large Source more time
    default_args={"execution_timeout": timedelta(hours=6)},
    tags=["resourcesync", "example"],
    doc_md=__doc__,
) as dag:
    baseline = ResourceSyncBaselineOperator(
        task_id="baseline", destination=DESTINATION, remove_missing=True)
    audit = ResourceSyncAuditOperator(task_id="audit", destination=DESTINATION)
    baseline >> audit
