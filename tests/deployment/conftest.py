"""A running Airflow deployment (see ``deployment.py``) and a loopback Source it mirrors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from .deployment import Deployment


@pytest.fixture
def source() -> Iterator[ResourceSyncSource]:
    """A published loopback Source of 12 resources, reached by the deployment's processes over
    127.0.0.1."""
    resources = {f"item-{number:02d}.txt": f"item {number}\n".encode() for number in range(12)}
    with SourceServer(max_lifetime=900) as server:
        published = ResourceSyncSource(server, resources=resources)
        published.publish()
        yield published


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    """The example DAGs' destination (``RESOURCESYNC_MIRROR_DIR``)."""
    return tmp_path / "mirror"


@pytest.fixture
def deployment(tmp_path: Path, mirror: Path) -> Iterator[Deployment]:
    """Airflow's api-server, scheduler, dag-processor and triggerer running in a temporary
    AIRFLOW_HOME on SQLite, every component healthy; every process stopped on teardown. The
    Change List sensor of ``incremental_mirror`` is deferrable (Airflow's ``[operators]
    default_deferrable``) and looks every second; the watcher of ``incremental_on_change``
    polls every second."""
    home = tmp_path / "airflow-home"
    home.mkdir()
    running = Deployment(home, {
        "RESOURCESYNC_MIRROR_DIR": str(mirror),
        "RESOURCESYNC_POKE_INTERVAL": "1",
        "RESOURCESYNC_POLL_INTERVAL": "1",
        "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
        "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
    })
    try:
        running.migrate()
        running.start()
        running.wait_healthy()
        yield running
    finally:
        running.stop()
