"""The baseline operator on worker processes in a real ``dag.test()`` run (issue 17): ``processes``
templated, the workers started by the task and ended with it, the mirror complete."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from airflow_provider_resourcesync.operators.baseline import ResourceSyncBaselineOperator
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.testing import ResourceSyncSource

from ..sync.test_processes import workers_of
from .runs import assert_mirrors, run_dag, states, xcom


def test_a_baseline_task_runs_on_worker_processes(source: ResourceSyncSource,
                                                  tmp_path: Path) -> None:
    root = tmp_path / "mirror"
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:  # the task's workers, as the kernel lists this process's children
        while not done.wait(0.01):
            seen.update(workers_of(os.getpid()))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        run = run_dag("baseline_on_workers", lambda: [ResourceSyncBaselineOperator(
            task_id="baseline", destination=str(root), processes="{{ 1 + 1 }}")])
    finally:
        done.set()
        watcher.join()
    assert states(run) == {"baseline": "success"}
    checkpoint = Checkpoint.from_json(xcom(run, "baseline"))
    assert checkpoint.stats["fetched"] == len(source.state()) and checkpoint.shard is None
    assert_mirrors(source, root)
    assert len(seen) == 2 and workers_of(os.getpid()) == []
