"""Shared by every test: Airflow on its own (a temporary AIRFLOW_HOME with SQLite and the example
DAGs), moto's S3 server, and a loopback server for Sources.

Airflow reads its configuration when first imported, and pytest loads this file before any test
module (which may import airflow), whatever the order of collection. ``tests/airflow`` migrates
the database once per session.
"""

from __future__ import annotations

import atexit
import math
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer

from airflow_provider_resourcesync.cores import usable_cores
from airflow_provider_resourcesync.example_dags import example_dags_folder
from airflow_provider_resourcesync.testing import SourceServer

_HOME = tempfile.mkdtemp(prefix="airflow-home-")
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
os.environ.update({
    "AIRFLOW_HOME": _HOME,
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_HOME}/airflow.db",
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAGS_FOLDER": str(example_dags_folder()),
})


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject.toml): a worker per usable core (a CPU quota rounded up) and one
    more, since a good part of the suite waits on sockets and child processes (on 2 cores, 3
    workers ended the suite in 223 s, 2 in 247 s and 4 in 240 s)."""
    return math.ceil(usable_cores()) + 1


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on a free port of 127.0.0.1, spoken to over HTTP (one per session; tests
    keep apart by bucket)."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def server() -> Iterator[SourceServer]:
    """A started loopback server (a Source's HTTP side), stopped on teardown."""
    with SourceServer(max_lifetime=120) as running:
        yield running
