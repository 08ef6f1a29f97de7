"""The provider is registered with Airflow through its ``apache_airflow_provider`` entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from airflow.providers_manager import ProvidersManager

from airflow_provider_resourcesync import __version__

DISTRIBUTION = "airflow-provider-resourcesync"


def test_providers_manager_lists_the_provider() -> None:
    info = ProvidersManager().providers[DISTRIBUTION]
    assert info.version == __version__
    assert info.data["package-name"] == DISTRIBUTION
    assert info.data["name"] == "ResourceSync"


def test_airflow_providers_list_shows_it(tmp_path: Path) -> None:
    airflow = Path(sys.executable).with_name("airflow")
    listed = subprocess.run(
        [str(airflow), "providers", "list", "--output", "json"],
        env={**os.environ, "AIRFLOW_HOME": str(tmp_path)},
        capture_output=True, text=True, check=True, timeout=120,
    )
    providers = {p["package_name"]: p for p in json.loads(listed.stdout)}
    assert providers[DISTRIBUTION]["version"] == __version__
