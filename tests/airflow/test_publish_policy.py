"""docs/publishing.md's IAM policy allows every S3 call publishing makes (issue 28, item 9).

Recorded: the S3 calls of the real operator in ``dag.test()`` runs against moto's S3 server
(a report, then changes with an object large enough for a multipart upload, then a listing),
each checked against the policy's statements for its bucket, action and resource. Static, as a
complement for calls a run on moto does not make (aborting a stale multipart upload): every S3
client method the publishing code path names, and those of smart-open's multipart writer."""

from __future__ import annotations

import ast
import json
import re
from datetime import timedelta
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import boto3
import pytest

from airflow_provider_resourcesync.hooks import destination as destination_module
from airflow_provider_resourcesync.operators.publish import ResourceSyncPublishOperator
from tests.publish.reports import CREATED, s3_put, write_report

from .conftest import AWS_CONN_ID
from .runs import run_dag, states
from .test_publish_dags import inventoried

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "airflow_provider_resourcesync"
#: The publishing code path: the engine, the S3 destination, and the hooks the operator uses.
CODE_PATH = [*sorted((PACKAGE / "publish").rglob("*.py")), PACKAGE / "storage" / "s3.py",
             PACKAGE / "hooks" / "inventory.py", PACKAGE / "hooks" / "destination.py"]
#: What smart-open's MultipartWriter calls on the client it is given (storage/s3.py).
SMART_OPEN = ("create_multipart_upload", "upload_part", "complete_multipart_upload",
              "abort_multipart_upload")
#: Each S3 operation: the IAM action it needs, on the bucket or on the object.
ACTIONS = {
    "ListObjectsV2": ("s3:ListBucket", "bucket"),
    "ListMultipartUploads": ("s3:ListBucketMultipartUploads", "bucket"),
    "GetObject": ("s3:GetObject", "object"),
    "HeadObject": ("s3:GetObject", "object"),
    "PutObject": ("s3:PutObject", "object"),
    "CreateMultipartUpload": ("s3:PutObject", "object"),
    "UploadPart": ("s3:PutObject", "object"),
    "CompleteMultipartUpload": ("s3:PutObject", "object"),
    "AbortMultipartUpload": ("s3:AbortMultipartUpload", "object"),
    "DeleteObject": ("s3:DeleteObject", "object"),
    "CopyObject": ("s3:PutObject", "object"),  # and s3:GetObject on the copied key
}
MIB = 1024 * 1024


def policy() -> dict[str, Any]:
    """The JSON policy of docs/publishing.md's "Permissions" section."""
    text = (ROOT / "docs" / "publishing.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)```", text, re.DOTALL)
    found = [json.loads(block) for block in blocks if '"2012-10-17"' in block]
    assert len(found) == 1, "docs/publishing.md should hold one IAM policy"
    return found[0]


def allowed(document: dict[str, Any], action: str, resource: str) -> bool:
    """Whether a statement of ``document`` allows ``action`` on ``resource`` (the policy is
    meant to need no condition: one it holds fails the test)."""
    for statement in document["Statement"]:
        assert "Condition" not in statement and statement["Effect"] == "Allow", statement
        actions, resources = statement["Action"], statement["Resource"]
        if any(fnmatchcase(action, pattern) for pattern in (
                [actions] if isinstance(actions, str) else actions)) and any(
                fnmatchcase(resource, pattern) for pattern in (
                [resources] if isinstance(resources, str) else resources)):
            return True
    return False


def resource_of(operation: str, params: dict[str, Any]) -> tuple[str, str]:
    action, kind = ACTIONS[operation]
    bucket = params["Bucket"]
    return action, (f"arn:aws:s3:::{bucket}" if kind == "bucket"
                    else f"arn:aws:s3:::{bucket}/{params['Key']}")


def filled(document: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """The policy with its placeholders (``SOURCE_BUCKET``...) replaced."""
    text = json.dumps(document)
    for placeholder, value in names.items():
        text = text.replace(placeholder, value)
    return dict(json.loads(text))


def test_the_policy_allows_every_call_the_operator_makes_on_each_bucket(
        s3_client: Any, s3_endpoint: str, bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    source, inventory, target = f"{bucket}-src", f"{bucket}-inv", f"{bucket}-pub"
    for name in (source, inventory, target):
        s3_client.create_bucket(Bucket=name)
    calls: list[tuple[str, dict[str, Any]]] = []

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        calls.append((model.name, dict(params)))

    made = destination_module._s3_client

    def recording(hook: Any, aws_conn_id: str | None) -> Any:
        client = made(hook, aws_conn_id)
        client.meta.events.register("before-parameter-build.s3.*", record)
        return client

    monkeypatch.setattr(destination_module, "_s3_client", recording)

    def run(day: int, inventory_url: str) -> None:
        result = run_dag(f"publish_policy_{day}", lambda: ResourceSyncPublishOperator(
            task_id="publish", source=f"s3://{source}/data/", inventory=inventory_url,
            publish_to=f"s3://{target}/rs/", base_url="https://cdn.example.org/",
            publish_url="https://cdn.example.org/rs/", check_urls=0, resource_dump=True,
            aws_conn_id=AWS_CONN_ID))
        assert states(result) == {"publish": "success"}, day

    def report(day: int) -> str:
        key = f"{source}/daily/2026-11-2{day}T01-00Z/manifest.json"
        write_report(s3_put(s3_client, inventory), [inventoried(s3_client, source)],
                     manifest_key=key, created=CREATED + timedelta(days=day), bucket=source)
        return f"s3://{inventory}/{key}"

    for number in range(5):
        s3_client.put_object(Bucket=source, Key=f"data/{number}.txt", Body=b"%d" % number)
    run(0, report(0))
    s3_client.put_object(Bucket=source, Key="data/large.bin", Body=b"x" * (9 * MIB))
    s3_client.delete_object(Bucket=source, Key="data/0.txt")
    run(1, report(1))  # a package above the multipart threshold: a multipart upload
    s3_client.put_object(Bucket=source, Key="data/1.txt", Body=b"changed")
    run(2, "list")

    document = filled(policy(), {"SOURCE_BUCKET": source, "SOURCE_PREFIX": "data/",
                                 "INVENTORY_BUCKET": inventory, "INVENTORY_PREFIX": f"{source}/",
                                 "PUBLICATION_BUCKET": target, "PUBLICATION_PREFIX": "rs/"})
    operations = {operation for operation, _ in calls}
    assert {"ListObjectsV2", "ListMultipartUploads", "GetObject", "PutObject", "DeleteObject",
            "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"} <= operations
    refused = sorted({(operation, *resource_of(operation, params)) for operation, params in calls
                      if not allowed(document, *resource_of(operation, params))})
    assert not refused, refused
    assert not allowed(document, "s3:PutObject", f"arn:aws:s3:::{source}/data/x")
    assert not allowed(document, "s3:DeleteObject", f"arn:aws:s3:::{inventory}/{source}/x")


def called_methods(path: Path, methods: set[str]) -> set[str]:
    """The S3 client methods ``path`` calls (``<...>.client.<method>(``, ``client.<method>(``,
    ``get_paginator("<method>")``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name, owner = node.func.attr, node.func.value
        owner_name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        if owner_name != "client":
            continue
        if name == "get_paginator" and node.args and isinstance(node.args[0], ast.Constant):
            found.add(str(node.args[0].value))
        elif name in methods:
            found.add(name)
    return found


def test_the_policy_names_an_action_for_every_s3_method_the_code_path_calls() -> None:
    client = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x",
                          aws_secret_access_key="x")
    to_operation: dict[str, str] = client.meta.method_to_api_mapping
    called = set(SMART_OPEN).union(*(called_methods(path, set(to_operation))
                                     for path in CODE_PATH))
    assert {"get_object", "put_object", "list_objects_v2", "list_multipart_uploads",
            "abort_multipart_upload"} <= called
    document = policy()
    actions = {action for statement in document["Statement"] for action in (
        [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])}
    missing = sorted(method for method in called
                     if ACTIONS.get(to_operation[method], ("?",))[0] not in actions)
    assert not missing, f"S3 methods with no action in the policy: {missing}"
