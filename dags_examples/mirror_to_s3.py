"""Mirror a ResourceSync Source into an S3 prefix, then audit the mirror.

Connections: ``resourcesync_default`` (type ``resourcesync``), whose base URL is the Source's; and
the AWS connection named by ``RESOURCESYNC_AWS_CONN_ID`` (default ``aws_default``), whose
credentials and region are used. For an S3-compatible store (MinIO, Ceph...), put its address in
the connection's extra as ``endpoint_url``.

Destination: the ``s3://bucket/prefix/`` URL in the ``RESOURCESYNC_MIRROR_S3_URL`` environment
variable, read when the DAG is parsed (default ``s3://resourcesync-mirror/mirror/``); the bucket
must exist. The prefix is the baseline's outlet Asset (``s3://bucket/prefix``).

Each run makes the prefix hold what the Source lists: objects held unchanged are not uploaded
again, and what the Source no longer lists is removed. The audit then fails the run if the mirror
and the Source differ.
"""

from __future__ import annotations

import os
from datetime import timedelta

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_resourcesync.operators.audit import ResourceSyncAuditOperator
from airflow_provider_resourcesync.operators.baseline import ResourceSyncBaselineOperator

DESTINATION = os.environ.get("RESOURCESYNC_MIRROR_S3_URL", "s3://resourcesync-mirror/mirror/")
AWS_CONN_ID = os.environ.get("RESOURCESYNC_AWS_CONN_ID", "aws_default")

with DAG(
    dag_id="mirror_to_s3",
    schedule=None,
    catchup=False,
    # no task runs for ever, whatever a Source does: give a large Source more time
    default_args={"execution_timeout": timedelta(hours=6)},
    tags=["resourcesync", "example", "s3"],
    doc_md=__doc__,
) as dag:
    baseline = ResourceSyncBaselineOperator(
        task_id="baseline", destination=DESTINATION, remove_missing=True,
        aws_conn_id=AWS_CONN_ID)
    audit = ResourceSyncAuditOperator(
        task_id="audit", destination=DESTINATION, aws_conn_id=AWS_CONN_ID)
    baseline >> audit
