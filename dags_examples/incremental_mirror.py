"""Keep a local mirror in step with a ResourceSync Source, hour by hour.

Connections: ``resourcesync_default`` (type ``resourcesync``), whose base URL is the Source's; the
Capability List is discovered from there.

Destination: the absolute directory in the ``RESOURCESYNC_MIRROR_DIR`` environment variable, read
when the DAG is parsed (default ``~/resourcesync-mirror``): a mirror made by a baseline (the
``mirror_to_local`` DAG). It is the incremental task's outlet Asset.

Until the mirror has a baseline (no checkpoint saved with it), each run makes the baseline instead
(``baselined`` branches to ``baseline``): an hourly DAG unpaused first neither fails every hour nor
skips in silence. Then, each hour the sensor waits (rescheduling itself, holding no worker slot)
until the Source's Change List has entries after the sync's checkpoint; if none come within the hour
it is skipped, and the sync with it. The sync then applies those changes and returns the new
checkpoint, also saved with the mirror, where the next run starts. ``RESOURCESYNC_CHANGES_FROM`` may
say ``changelist`` or ``changedump`` (default: ``auto``, the Change List if the Source offers one).

With Airflow's ``[operators] default_deferrable = True`` the sensor waits in the triggerer
instead, holding no worker at all. ``RESOURCESYNC_POKE_INTERVAL`` sets the seconds between its
looks at the Change List (default 60; when deferred, the trigger backs off to ten times that
while nothing changes).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_resourcesync.hooks.destination import destination_from_url
from airflow_provider_resourcesync.operators.baseline import ResourceSyncBaselineOperator
from airflow_provider_resourcesync.operators.incremental import ResourceSyncIncrementalOperator
from airflow_provider_resourcesync.sensors.changelist import ResourceSyncChangeListSensor
from airflow_provider_resourcesync.writer import saved_checkpoint

DESTINATION = os.environ.get("RESOURCESYNC_MIRROR_DIR", str(Path.home() / "resourcesync-mirror"))
POKE_INTERVAL = float(os.environ.get("RESOURCESYNC_POKE_INTERVAL", "60"))

with DAG(
    dag_id="incremental_mirror",
    schedule=timedelta(hours=1),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    # no task runs for ever, whatever a Source does; the sync ends before the next hour's run
    default_args={"execution_timeout": timedelta(minutes=50)},
    tags=["resourcesync", "example"],
    doc_md=__doc__,
) as dag:
    @task.branch(task_id="baselined")
    def baselined() -> str:
        """The sensor once the mirror has a baseline (a checkpoint saved with it); the baseline
        before, or again if its checkpoint was lost."""
        saved = saved_checkpoint(destination_from_url(DESTINATION))
        return "changes" if saved is not None else "baseline"

    baseline = ResourceSyncBaselineOperator(
        task_id="baseline", destination=DESTINATION, remove_missing=True)
    changes = ResourceSyncChangeListSensor(
        task_id="changes", mode="reschedule", poke_interval=POKE_INTERVAL,
        timeout=timedelta(minutes=55).total_seconds(), soft_fail=True,
        destination=DESTINATION)  # where the sync stands: the checkpoint saved with the mirror
    sync = ResourceSyncIncrementalOperator(
        task_id="sync", destination=DESTINATION,
        method=os.environ.get("RESOURCESYNC_CHANGES_FROM", "auto"))
    baselined() >> [baseline, changes]
    changes >> sync
