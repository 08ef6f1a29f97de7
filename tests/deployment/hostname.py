"""The hostname a Celery worker of the test deployment gives its task instances (Airflow's
``[core] hostname_callable``): its name, from ``DEPLOYMENT_WORKER``, so that two workers on one
machine are told apart as two machines would be."""

from __future__ import annotations

import os


def worker_name() -> str:
    return os.environ["DEPLOYMENT_WORKER"]
