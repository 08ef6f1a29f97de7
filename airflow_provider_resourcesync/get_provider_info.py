"""Provider metadata that Airflow reads through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

from airflow_provider_resourcesync import __version__


def get_provider_info() -> dict[str, Any]:
    """Describe this provider to Airflow's ProvidersManager."""
    return {
        "package-name": "airflow-provider-resourcesync",
        "name": "ResourceSync",
        "description": "Mirror and publish web collections with ResourceSync "
        "(ANSI/NISO Z39.99-2017): discovery, baseline and incremental sync, audit, Change Dumps.",
        "versions": [__version__],
    }
