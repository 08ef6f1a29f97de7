"""Airflow in tests runs on its own: a temporary AIRFLOW_HOME with SQLite and the example DAGs.

Airflow reads its configuration when first imported, and pytest loads this file before any test
module (which may import airflow), whatever the order of collection. ``tests/airflow`` migrates
the database once per session.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

_HOME = tempfile.mkdtemp(prefix="airflow-home-")
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
os.environ.update({
    "AIRFLOW_HOME": _HOME,
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_HOME}/airflow.db",
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAGS_FOLDER": str(Path(__file__).resolve().parents[1] / "dags_examples"),
})
