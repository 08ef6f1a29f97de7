"""A baseline spread over shards with dynamic task mapping, combined into one mirror and audited.

Each mapped ``baseline`` task mirrors its own part of the Source's resources (a stable hash of each
URI decides which), and removes what of its part the Source no longer lists; ``combine`` makes one
mirror of the parts once every shard succeeded, and ``audit`` checks the result against the Source.
A shard that fails can be re-run alone.

Connections: ``resourcesync_default`` (type ``resourcesync``), whose base URL is the Source's; for
an ``s3://`` destination, the AWS connection named by ``RESOURCESYNC_AWS_CONN_ID`` (default
``aws_default``).

Destination: ``RESOURCESYNC_SHARDED_DESTINATION``, read when the DAG is parsed: an absolute path,
``file:///...`` or ``s3://bucket/prefix/`` (default ``~/resourcesync-mirror-sharded``). It is the
outlet Asset of ``combine``: DAGs scheduled on it run once the whole mirror is there.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_resourcesync.operators.audit import ResourceSyncAuditOperator
from airflow_provider_resourcesync.operators.baseline import (
    ResourceSyncBaselineOperator,
    ResourceSyncCombineShardsOperator,
)

DESTINATION = os.environ.get("RESOURCESYNC_SHARDED_DESTINATION",
                             str(Path.home() / "resourcesync-mirror-sharded"))
AWS_CONN_ID = os.environ.get("RESOURCESYNC_AWS_CONN_ID", "aws_default")
SHARDS = 3

with DAG(
    dag_id="sharded_baseline",
    schedule=None,
    catchup=False,
    # no task runs for ever, whatever a Source does: give a large Source more time
    default_args={"execution_timeout": timedelta(hours=6)},
    tags=["resourcesync", "example"],
    doc_md=__doc__,
) as dag:
    shards = ResourceSyncBaselineOperator.partial(
        task_id="baseline", destination=DESTINATION, shard_count=SHARDS, remove_missing=True,
        aws_conn_id=AWS_CONN_ID,
    ).expand(shard_index=list(range(SHARDS)))
    combine = ResourceSyncCombineShardsOperator(
        task_id="combine", destination=DESTINATION, checkpoints=shards.output,
        aws_conn_id=AWS_CONN_ID)
    audit = ResourceSyncAuditOperator(
        task_id="audit", destination=DESTINATION, aws_conn_id=AWS_CONN_ID)
    combine >> audit
