"""A real Airflow deployment for a test: Airflow's own processes, started as subprocesses in a
temporary AIRFLOW_HOME on SQLite, and spoken to over its REST API (/api/v2) on 127.0.0.1.

The api-server, scheduler (CeleryExecutor), dag-processor and triggerer each run in a process
group of their own, with their output in ``<home>/<component>.log``, and so do two Celery workers,
each with a HOME and a scratch folder (TMPDIR) of its own, as on two machines. Each works in
AIRFLOW_HOME, not in the test's folder (a checkout, whose package ``python -m`` would import
instead of the one installed). The broker and the result backend are SQLite files in
AIRFLOW_HOME (kombu's SQLAlchemy transport): no service to install or start.
:meth:`Deployment.stop` ends each group (SIGTERM, then SIGKILL after a timeout). Every wait is
bounded, and a wait that runs out fails the test with the tail of each process's log and of the
task logs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
import kombu
import pytest

from airflow_provider_resourcesync.demo import airflow_environment

__all__ = ["COMPONENTS", "QUEUE", "WORKERS", "Deployment", "free_port"]

#: Airflow's processes, as ``airflow <component>`` starts them.
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
#: The Celery workers (``airflow celery worker``), by the hostname each gives its task instances.
WORKERS = ("worker-1", "worker-2")
#: The queue they take tasks from: Airflow's ``[operators] default_queue``.
QUEUE = "default"
#: How many lines of each log a failure shows.
TAIL_LINES = 40
#: How many task logs a failure shows (the newest).
TASK_LOGS = 6
#: Their arguments: one api-server worker; no log servers (they listen on every address, on
#: fixed ports, and the api-server reads the task logs from AIRFLOW_HOME).
_ARGUMENTS = {"api-server": ("--workers", "1"), "scheduler": ("--skip-serve-logs",),
              "triggerer": ("--skip-serve-logs",)}
#: A worker's: one task at a time (each takes one of the queued tasks, not all), and no waiting
#: on other workers at start.
_WORKER_ARGUMENTS = ("--concurrency", "1", "--skip-serve-logs", "--without-mingle",
                     "--without-gossip")
#: This folder, on the workers' path for :mod:`.hostname` (alone: the package the deployment
#: runs is the one installed beside Airflow, not the checkout's).
_HERE = Path(__file__).resolve().parent
_T = TypeVar("_T")


def free_port() -> int:
    """A port of 127.0.0.1 free now (the api-server binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Deployment:
    """Airflow in ``home``: its environment, its processes and a client of its REST API.

    :param home: an empty directory, the AIRFLOW_HOME.
    :param environment: variables for every process besides Airflow's own configuration (the
        example DAGs' destination, say).
    """

    def __init__(self, home: Path, environment: Mapping[str, str]) -> None:
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        outside = {name: value for name, value in os.environ.items()
                   if not name.startswith("AIRFLOW")}  # not the test session's own Airflow
        self.env = outside | airflow_environment(home, verbose=True) | {
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__CELERY__BROKER_URL": f"sqla+sqlite:///{home}/celery-broker.db",
            "AIRFLOW__CELERY__RESULT_BACKEND": f"db+sqlite:///{home}/celery-results.db",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__API__SECRET_KEY": secrets.token_hex(32),
        } | dict(environment)
        #: each worker's own folder, holding its HOME (``home``) and TMPDIR (``tmp``)
        self.workers = {name: home / "workers" / name for name in WORKERS}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.client = httpx.Client(base_url=f"{self.url}/api/v2", timeout=30.0)

    # -- processes -------------------------------------------------------------------------------

    def migrate(self, timeout: float = 240.0) -> None:
        """``airflow db migrate``, bounded."""
        log = self.home / "db-migrate.log"
        with log.open("wb") as out:
            try:
                done = subprocess.run(self._command("db", "migrate"), env=self.env, stdout=out,
                                      stderr=subprocess.STDOUT, timeout=timeout, check=False,
                                      cwd=self.home)
            except subprocess.TimeoutExpired:
                pytest.fail(f"airflow db migrate did not finish in {timeout:.0f} s:\n"
                            + _tail(log))
        if done.returncode != 0:
            pytest.fail(f"airflow db migrate exited with {done.returncode}:\n" + _tail(log))

    def start(self) -> None:
        """Start every component and worker, each in its own process group."""
        for component in COMPONENTS:
            self._start(component)
        self._start_workers()

    def restart(self, component: str, between: Callable[[], object], timeout: float = 30.0
                ) -> None:
        """End ``component``'s process group as :meth:`stop` does, call ``between`` while it is
        down, and start it again, its output appended to its log."""
        process = self.processes[component]
        _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _exit_status(process) is None:
            time.sleep(0.2)
        _signal_group(process, signal.SIGKILL)
        process.wait(10)
        between()
        self._start(component, "ab")

    def _start(self, component: str, mode: str = "wb") -> None:
        arguments = _ARGUMENTS.get(component, ())
        if component == "api-server":
            arguments = ("--host", "127.0.0.1", "--port", str(self.port), *arguments)
        self._spawn(component, (component, *arguments), self.env, mode)

    def _start_workers(self) -> None:
        """Each worker with its own HOME and TMPDIR, and its name as its hostname."""
        # the workers' queue made first: two workers creating it at once in SQLite collide (a
        # UNIQUE constraint fails, and the worker exits); kombu's use of SQLAlchemy's deprecated
        # noload is not ours to report
        with warnings.catch_warnings(), kombu.Connection(
                self.env["AIRFLOW__CELERY__BROKER_URL"]) as broker:
            warnings.simplefilter("ignore", DeprecationWarning)
            broker.SimpleQueue(QUEUE).close()
        for name, folder in self.workers.items():
            (folder / "home").mkdir(parents=True)
            (folder / "tmp").mkdir()
            own = {"HOME": str(folder / "home"), "TMPDIR": str(folder / "tmp"),
                   "DEPLOYMENT_WORKER": name, "PYTHONPATH": str(_HERE),
                   "AIRFLOW__CORE__HOSTNAME_CALLABLE": "hostname.worker_name"}
            self._spawn(name, ("celery", "worker", "--queues", QUEUE, "--celery-hostname",
                               f"{name}@%h", *_WORKER_ARGUMENTS), self.env | own)

    def _spawn(self, name: str, arguments: tuple[str, ...], env: Mapping[str, str],
               mode: str = "wb") -> None:
        with (self.home / f"{name}.log").open(mode) as out:
            self.processes[name] = subprocess.Popen(
                self._command(*arguments), env=env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.home)

    def stop(self, timeout: float = 30.0) -> None:
        """End every process group started: SIGTERM, then SIGKILL for what outlives
        ``timeout``. A leader is reaped only after its group was killed, so that its id, and
        the group's, cannot have been reused by then."""
        self.client.close()
        for process in self.processes.values():
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(_exit_status(process) is None
                                                  for process in self.processes.values()):
            time.sleep(0.2)
        for process in self.processes.values():
            _signal_group(process, signal.SIGKILL)  # a task or worker may outlive its parent
            process.wait(10)

    def _command(self, *arguments: str) -> list[str]:
        return [sys.executable, "-m", "airflow", *arguments]

    # -- waiting ---------------------------------------------------------------------------------

    def wait_for(self, what: str, check: Callable[[], _T | None], timeout: float,
                 interval: float = 1.0) -> _T:
        """Poll ``check`` until it returns something other than None, and return it; after
        ``timeout`` seconds, or if a component exited, fail with the logs."""
        deadline = time.monotonic() + timeout
        while True:
            exited = {name: status for name, process in self.processes.items()
                      if (status := _exit_status(process)) is not None}
            if exited:
                pytest.fail(f"waiting for {what}: Airflow's processes exited {exited}\n"
                            + self.logs())
            try:
                result = check()
            except httpx.TransportError:  # the api-server is not listening yet
                result = None
            if result is not None:
                return result
            if time.monotonic() > deadline:
                pytest.fail(f"{what}: not within {timeout:.0f} s\n" + self.logs())
            time.sleep(interval)

    def logs(self) -> str:
        """The tail of each process's log, and of the newest task logs."""
        tasks = sorted((self.home / "logs").glob("dag_id=*/**/*.log"),
                       key=lambda path: path.stat().st_mtime)[-TASK_LOGS:]
        files = [self.home / "db-migrate.log",
                 *(self.home / f"{name}.log" for name in (*COMPONENTS, *WORKERS)), *tasks]
        return "\n".join(_tail(path) for path in files if path.is_file())

    # -- the REST API ----------------------------------------------------------------------------

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        """A call of the REST API; its JSON answer (fails the test on an error status)."""
        response = self.client.request(method, path, **kwargs)
        if response.is_error:
            pytest.fail(f"{method} /api/v2{path}: {response.status_code} {response.text[:2000]}")
        return response.json() if response.content else None

    def wait_healthy(self, timeout: float = 180.0) -> None:
        """Until the health endpoint says every component is healthy."""
        parts = ("metadatabase", "scheduler", "triggerer", "dag_processor")

        def healthy() -> bool | None:
            response = self.client.get("/monitor/health")
            report = response.json() if response.status_code == 200 else {}
            return True if all((report.get(part) or {}).get("status") == "healthy"
                               for part in parts) else None

        self.wait_for("every component healthy (/api/v2/monitor/health)", healthy, timeout)

    def log_in(self) -> None:
        """Call the REST API with a token from now on: the one the simple auth manager gives
        anyone with ``[core] simple_auth_manager_all_admins`` (``GET /auth/token``). Airflow 3.1
        answers a call without a token 401; 3.0 and 3.3 let it through."""
        response = self.client.get(f"{self.url}/auth/token")
        if response.is_error:
            pytest.fail(f"GET /auth/token: {response.status_code} {response.text[:2000]}")
        self.client.headers["Authorization"] = f"Bearer {response.json()['access_token']}"

    def wait_workers(self, timeout: float = 120.0) -> None:
        """Until every Celery worker says it is ready (the health endpoint does not know them)."""
        for name in WORKERS:
            log = self.home / f"{name}.log"
            self.wait_for(f"the Celery worker {name} ready",
                          lambda log=log: True if " ready." in log.read_text(errors="replace")
                          else None, timeout)

    def wait_dag(self, dag_id: str, timeout: float = 120.0) -> None:
        """Until the dag-processor has parsed ``dag_id`` (it has no import error)."""
        self.wait_for(f"the DAG {dag_id} parsed",
                      lambda: True if self.client.get(f"/dags/{dag_id}").status_code == 200
                      else None, timeout)

    def unpause(self, dag_id: str) -> None:
        self.api("PATCH", f"/dags/{dag_id}", json={"is_paused": False})

    def pause(self, dag_id: str) -> None:
        self.api("PATCH", f"/dags/{dag_id}", json={"is_paused": True})

    def reparse(self, dag_id: str) -> None:
        """Ask the dag-processor to parse the file of ``dag_id`` again now (it records the
        triggers of an unpaused DAG's asset watchers when it parses the DAG)."""
        token = self.api("GET", f"/dags/{dag_id}")["file_token"]
        self.api("PUT", f"/parseDagFile/{token}")

    def trigger(self, dag_id: str) -> str:
        """A manual run of ``dag_id`` now; its run id."""
        run = self.api("POST", f"/dags/{dag_id}/dagRuns",
                       json={"logical_date": datetime.now(UTC).isoformat()})
        return str(run["dag_run_id"])

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        return list(self.api("GET", f"/dags/{dag_id}/dagRuns")["dag_runs"])

    def wait_run(self, dag_id: str, run_id: str, timeout: float = 180.0) -> None:
        """Until the run ends; fails unless it succeeded."""
        def ended() -> str | None:
            state = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")["state"]
            return str(state) if state in ("success", "failed") else None

        state = self.wait_for(f"the run {run_id} of {dag_id} finished", ended, timeout)
        if state != "success":
            pytest.fail(f"the run {run_id} of {dag_id} ended {state}\n" + self.logs())

    def task(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        return dict(self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"))

    def wait_deferred(self, dag_id: str, run_id: str, task_id: str,
                      timeout: float = 180.0) -> None:
        """Until the task is deferred and the scheduler has seen its deferring process exit.

        Airflow 3.3.2 fails a deferred task whose trigger fires, and whose resumed attempt
        starts, before the scheduler has taken in that exit (apache/airflow#71580): a trigger
        woken at once by a change made as soon as the task is deferred can lose that race on a
        loaded machine, so the wait includes the scheduler's log line for the exit.
        """
        self.wait_for(
            f"the task {task_id} of {dag_id} {run_id} deferred",
            lambda: True if self.task(dag_id, run_id, task_id)["state"] == "deferred" else None,
            timeout)
        finished = f"TaskInstance Finished: dag_id={dag_id}, task_id={task_id}, run_id={run_id},"
        log = self.home / "scheduler.log"
        self.wait_for(
            f"the scheduler taking in the exit of {task_id} of {dag_id} {run_id} on deferring",
            lambda: True if any(finished in line and "state=deferred" in line
                                for line in log.read_text(errors="replace").splitlines())
            else None, timeout)

    def mapped(self, dag_id: str, run_id: str, task_id: str) -> list[dict[str, Any]]:
        """The instances of a mapped task, by map index."""
        listed = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"
                          "/listMapped", params={"order_by": "map_index"})
        return list(listed["task_instances"])

    def xcom(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> Any:
        """The task's ``return_value`` (of one instance of a mapped task, by its index)."""
        return self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"
                        "/xcomEntries/return_value", params={"map_index": map_index})["value"]

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> str:
        """The text of a task's log, as the REST API serves it."""
        response = self.client.get(
            f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}",
            params={"full_content": True}, headers={"Accept": "application/json"})
        if response.is_error:
            pytest.fail(f"the log of {task_id} in {run_id}: {response.status_code} "
                        f"{response.text[:2000]}")
        return "\n".join(str(line.get("event", "")) for line in response.json()["content"])


def _exit_status(process: subprocess.Popen[bytes]) -> int | None:
    """The process's exit status if it exited, else None; it stays unreaped (a zombie holds
    its id)."""
    if process.returncode is not None:
        return process.returncode
    exited = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return None if exited is None else exited.si_status


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    """Signal the process group this process leads (started with ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError):  # the group is gone
        os.killpg(process.pid, signum)


def _tail(path: Path) -> str:
    lines = path.read_text(errors="replace").splitlines()[-TAIL_LINES:]
    return f"--- {path} (last {len(lines)} lines)\n" + "\n".join(lines)
