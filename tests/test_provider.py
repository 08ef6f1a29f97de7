"""The provider is registered with Airflow through its ``apache_airflow_provider`` entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import airflow
import jsonschema
from airflow.providers_manager import ProvidersManager

from airflow_provider_resourcesync import __version__
from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.get_provider_info import get_provider_info
from airflow_provider_resourcesync.hooks.resourcesync import EXTRA_FIELDS, ResourceSyncHook

DISTRIBUTION = "airflow-provider-resourcesync"


def test_providers_manager_lists_the_provider() -> None:
    info = ProvidersManager().providers[DISTRIBUTION]
    assert info.version == __version__
    assert info.data["package-name"] == DISTRIBUTION
    assert info.data["name"] == "ResourceSync"


def listed_providers(airflow: Path, home: Path,
                     environment: Mapping[str, str] = os.environ) -> dict[str, str]:
    """What the command ``airflow`` (a path) lists with ``providers list``, in an Airflow home
    ``home``: distribution -> version."""
    listed = subprocess.run(
        [str(airflow), "providers", "list", "--output", "json"],
        # Airflow 3.0 prints its INFO logs on stdout, before the JSON
        env={**environment, "AIRFLOW_HOME": str(home),
             "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING"},
        capture_output=True, text=True, check=True, timeout=120,
    )
    return {p["package_name"]: p["version"] for p in json.loads(listed.stdout)}


def test_airflow_providers_list_shows_it(tmp_path: Path) -> None:
    airflow = Path(sys.executable).with_name("airflow")
    assert listed_providers(airflow, tmp_path)[DISTRIBUTION] == __version__


# -- the connection type -------------------------------------------------------------------------

def registered_hooks() -> Mapping[str, Any]:
    """Connection type -> its hook's registration: the Task SDK's registry where the release has
    one, else the providers manager's (which on those releases warns it is deprecated)."""
    try:
        from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime
    except ImportError:
        return ProvidersManager().hooks
    return ProvidersManagerTaskRuntime().hooks


def test_the_connection_type_is_registered_with_its_hook() -> None:
    hook = registered_hooks()["resourcesync"]
    assert hook is not None
    assert hook.hook_class_name == f"{ResourceSyncHook.__module__}.ResourceSyncHook"
    assert hook.connection_id_attribute_name == "resourcesync_conn_id"
    assert hook.hook_name == "ResourceSync"
    assert hook.connection_testable


def test_the_connection_form_is_read_from_the_provider_info() -> None:
    manager = ProvidersManager()
    widgets = {info.field_name: info for key, info in manager.connection_form_widgets.items()
               if key.startswith("extra__resourcesync__")}
    assert set(widgets) == EXTRA_FIELDS
    assert {name for name, info in widgets.items() if info.is_sensitive} == {"token"}
    behaviour = manager.field_behaviours["resourcesync"]
    assert behaviour["hidden_fields"] == ["schema"]  # the port: see test_deployment
    assert behaviour["relabeling"]["host"] == "Base URL"
    assert "extra__resourcesync__allowed_hosts" in behaviour["placeholders"]


def test_the_connection_type_follows_the_provider_yaml_schema() -> None:
    schema = json.loads((Path(airflow.__file__).parent / "provider.yaml.schema.json").read_text())
    (connection_type,) = get_provider_info()["connection-types"]
    jsonschema.validate(connection_type, schema["properties"]["connection-types"]["items"])


def test_the_form_defaults_are_the_client_defaults() -> None:
    (connection_type,) = get_provider_info()["connection-types"]
    defaults = {name: field["schema"].get("default")
                for name, field in connection_type["conn-fields"].items()}
    policy = ClientPolicy()
    assert (defaults["connect_timeout"], defaults["read_timeout"], defaults["request_timeout"],
            defaults["retry_budget"], defaults["max_tries"], defaults["concurrency"],
            defaults["max_document_bytes"], defaults["allow_private"],
            defaults["verify_tls"]) == (
        policy.connect_timeout, policy.read_timeout, policy.request_timeout,
        policy.retry_budget, policy.max_tries, policy.concurrency_per_host,
        policy.max_document_bytes, policy.allow_private, policy.verify)


def test_the_package_says_it_is_typed() -> None:
    """PEP 561: type checkers read the package's own hints (issue 16)."""
    assert (resources.files("airflow_provider_resourcesync") / "py.typed").is_file()
