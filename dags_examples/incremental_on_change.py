"""Keep a local mirror in step with a ResourceSync Source, run when the Source changes.

Airflow 3.0 or later: event-driven scheduling (``AssetWatcher``) is Airflow 3's, so on Airflow 2
this file fails to import, saying so; use ``incremental_mirror`` (a schedule and a sensor).

Connections: ``resourcesync_default`` (type ``resourcesync``), whose base URL is the Source's; the
Capability List, and the Change List in it, are discovered from there.

Destination: the absolute directory in the ``RESOURCESYNC_MIRROR_DIR`` environment variable, read
when the DAG is parsed (default ``~/resourcesync-mirror``): a mirror made by a baseline (the
``mirror_to_local`` DAG). It is the incremental task's outlet Asset.

The DAG is scheduled on an Asset standing for the Source's changes, watched by Airflow's
triggerer: ``ResourceSyncChangeEventTrigger`` polls the Change List every
``RESOURCESYNC_POLL_INTERVAL`` seconds (default 60; one request answered 304 while it is
unchanged) and fires when it changes, which queues a run. The event only wakes the
DAG: the sync applies the changes after its checkpoint (the one saved with the mirror, else
this task's previous XCom), so a missed or a duplicate event costs nothing but a delay or
a run that finds nothing new. ``RESOURCESYNC_CHANGES_FROM`` may say ``changelist`` or
``changedump`` (default: ``auto``, the Change List if the Source offers one).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

from airflow_provider_resourcesync.compat import require
from airflow_provider_resourcesync.operators.incremental import ResourceSyncIncrementalOperator
from airflow_provider_resourcesync.triggers.event import ResourceSyncChangeEventTrigger

require("The example DAG incremental_on_change (an AssetWatcher)", "3.0")

from airflow.sdk import DAG, Asset, AssetWatcher  # noqa: E402  (Airflow 3's: required above)

DESTINATION = os.environ.get("RESOURCESYNC_MIRROR_DIR", str(Path.home() / "resourcesync-mirror"))
POLL_INTERVAL = float(os.environ.get("RESOURCESYNC_POLL_INTERVAL", "60"))

#: The Source's changes, as the triggerer sees them; the trigger's arguments are its identity.
SOURCE_CHANGES = Asset("resourcesync_default_changes", watchers=[AssetWatcher(
    name="resourcesync_default_change_list",
    trigger=ResourceSyncChangeEventTrigger(resourcesync_conn_id="resourcesync_default",
                                           poll_interval=POLL_INTERVAL))])

with DAG(
    dag_id="incremental_on_change",
    schedule=[SOURCE_CHANGES],
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,  # events during a run queue the next one, which starts from its checkpoint
    default_args={"execution_timeout": timedelta(minutes=50)},
    tags=["resourcesync", "example"],
    doc_md=__doc__,
) as dag:
    ResourceSyncIncrementalOperator(
        task_id="sync", destination=DESTINATION,
        method=os.environ.get("RESOURCESYNC_CHANGES_FROM", "auto"))
