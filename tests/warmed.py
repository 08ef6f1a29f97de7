"""What the fork server of :mod:`tests.killing` imports once, so that each child forked from it
starts warm: boto3 with S3's service model and paginators loaded, httpx, lxml, the package's
modules the children use, and the test modules that hold the child functions."""

from __future__ import annotations

import boto3
import httpx  # noqa: F401
import lxml.etree  # noqa: F401

import tests.publish.test_killed_publish
import tests.publish.test_retention
import tests.sync.test_killed_save
import tests.writer.test_costs
import tests.writer.test_killed_compaction
import tests.writer.test_killed_incremental
import tests.writer.test_shards  # noqa: F401

# The default session keeps the models it loaded: a child's client is made in milliseconds.
_s3 = boto3.client("s3", aws_access_key_id="test", aws_secret_access_key="test",
                   region_name="us-east-1")
for _operation in ("list_objects_v2", "list_multipart_uploads"):
    _s3.get_paginator(_operation)
