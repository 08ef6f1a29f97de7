"""Publish an S3 bucket as a ResourceSync Source, day by day, from its S3 Inventory reports.

Variables (read when the DAG is parsed):

- ``RESOURCESYNC_PUBLISH_S3_SOURCE``: what to publish (default ``s3://my-collection/``);
- ``RESOURCESYNC_INVENTORY_S3_URL``: the folder of the bucket's S3 Inventory configuration, where
  S3 delivers ``<YYYY-MM-DDTHH-MMZ>/manifest.json`` (default
  ``s3://my-inventory/my-collection/daily/``);
- ``RESOURCESYNC_PUBLISH_S3_URL``: where the publication goes, its outlet Asset (default
  ``s3://my-collection-resourcesync/``);
- ``RESOURCESYNC_PUBLISH_BASE_URL`` and ``RESOURCESYNC_PUBLISH_URL``: where the objects and the
  publication are served (a website endpoint, a CDN);
- ``RESOURCESYNC_PUBLISH_RESOURCE_DUMP``: ``true`` to publish a Resource Dump beside each
  Resource List too (default ``false``; docs/publishing.md says what it costs);
- ``RESOURCESYNC_AWS_CONN_ID``: the AWS connection (default ``aws_default``).
- ``RESOURCESYNC_PUBLISH_CHECK_URLS``: objects whose URLs each run checks before it writes
  (default 3; 0: none), with the settings of the ``resourcesync`` connection named in
  ``RESOURCESYNC_PUBLISH_CHECK_CONN_ID`` (default none: public addresses only).

Each day the sensor waits (rescheduling itself) for that day's report (the day the run's data
interval ends; for a run triggered without a logical date, the day it runs), a task finds its
``manifest.json``, and the publisher publishes the changes since the day before: Change Dump
packages and a Change List (the first run: a Resource List of every object). A Destination
follows the publication with the ``mirror_to_s3`` (or ``mirror_to_local``) DAG once, then
``incremental_mirror``, its ``resourcesync_default`` connection's base URL at the publication.
See docs/publishing.md for the inventory configuration and the permissions needed.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.providers.amazon.aws.hooks.s3 import S3Hook
from airflow.providers.amazon.aws.sensors.s3 import S3KeySensor
from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_resourcesync.operators.publish import ResourceSyncPublishOperator

SOURCE = os.environ.get("RESOURCESYNC_PUBLISH_S3_SOURCE", "s3://my-collection/")
INVENTORY = os.environ.get("RESOURCESYNC_INVENTORY_S3_URL",
                           "s3://my-inventory/my-collection/daily/").rstrip("/") + "/"
PUBLISH_TO = os.environ.get("RESOURCESYNC_PUBLISH_S3_URL", "s3://my-collection-resourcesync/")
AWS_CONN_ID = os.environ.get("RESOURCESYNC_AWS_CONN_ID", "aws_default")
#: The report's day, ``YYYY-MM-DD``: a run triggered with no logical date (Airflow 3's default
#: for ``airflow dags trigger`` and the REST API) has no ``ds`` nor data interval.
DAY = ("{{ (data_interval_end if data_interval_end is defined and data_interval_end "
       "else dag_run.run_after) | ds }}")

with DAG(
    dag_id="publish_bucket",
    schedule=timedelta(days=1),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"execution_timeout": timedelta(hours=20)},
    tags=["resourcesync", "example"],
    doc_md=__doc__,
) as dag:
    report = S3KeySensor(
        task_id="report", bucket_key=INVENTORY + DAY + "T*Z/manifest.json",
        wildcard_match=True, aws_conn_id=AWS_CONN_ID, mode="reschedule", poke_interval=600,
        timeout=timedelta(hours=18).total_seconds())

    @task(execution_timeout=timedelta(minutes=10))
    def manifest(day: str) -> str:
        """The URL of the ``day``'s latest ``manifest.json``."""
        bucket, _, prefix = INVENTORY.removeprefix("s3://").partition("/")
        keys = S3Hook(aws_conn_id=AWS_CONN_ID).list_keys(bucket, prefix=f"{prefix}{day}T")
        return f"s3://{bucket}/" + max(key for key in keys if key.endswith("/manifest.json"))

    found = manifest(DAY)
    report >> found
    ResourceSyncPublishOperator(
        task_id="publish", source=SOURCE, inventory=found, publish_to=PUBLISH_TO,
        base_url=os.environ.get("RESOURCESYNC_PUBLISH_BASE_URL",
                                "https://my-collection.example.org/"),
        publish_url=os.environ.get("RESOURCESYNC_PUBLISH_URL",
                                   "https://my-collection.example.org/resourcesync/"),
        resource_dump=os.environ.get("RESOURCESYNC_PUBLISH_RESOURCE_DUMP", "false"),
        check_urls=int(os.environ.get("RESOURCESYNC_PUBLISH_CHECK_URLS", "3")),
        resourcesync_conn_id=os.environ.get("RESOURCESYNC_PUBLISH_CHECK_CONN_ID"),
        aws_conn_id=AWS_CONN_ID)
