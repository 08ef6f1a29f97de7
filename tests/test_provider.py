"""The provider is registered with Airflow through its entry point."""

from __future__ import annotations

from airflow.providers_manager import ProvidersManager

from airflow_provider_resourcesync import __version__


def test_providers_manager_lists_the_provider() -> None:
    providers = ProvidersManager().providers
    assert "airflow-provider-resourcesync" in providers
    info = providers["airflow-provider-resourcesync"]
    assert info.version == __version__
    assert info.data["name"] == "ResourceSync"
