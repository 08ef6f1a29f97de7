"""docs/publishing.md's S3 Inventory configuration is one S3 takes (the request's shape checked
against botocore's model of PutBucketInventoryConfiguration) and asks for every field a report
must have to be published from (issue 28, item 9)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import boto3
from botocore.stub import Stubber

from airflow_provider_resourcesync.publish.inventory.manifest import REQUIRED

DOC = Path(__file__).resolve().parents[2] / "docs" / "publishing.md"


def configuration() -> dict[str, Any]:
    blocks = re.findall(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    found = [json.loads(block) for block in blocks if '"OptionalFields"' in block]
    assert len(found) == 1, "docs/publishing.md should hold one inventory configuration"
    return dict(found[0])


def test_the_documented_inventory_configuration_is_valid_and_has_the_fields_needed() -> None:
    documented = configuration()
    client = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x",
                          aws_secret_access_key="x")
    request = {"Bucket": "source", "Id": documented["Id"],
               "InventoryConfiguration": documented}
    with Stubber(client) as stubbed:  # validates the request against the API's model
        stubbed.add_response("put_bucket_inventory_configuration", {}, request)
        client.put_bucket_inventory_configuration(**request)
    fields = {"Key", *documented["OptionalFields"]}  # S3 always writes Bucket and Key
    assert set(REQUIRED) <= fields and "EncryptionStatus" in fields
    assert documented["Schedule"]["Frequency"] in ("Daily", "Weekly")
    assert documented["Destination"]["S3BucketDestination"]["Format"] in ("CSV", "ORC",
                                                                          "Parquet")
