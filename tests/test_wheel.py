"""The wheel is a working provider: built, installed with the locked versions of its dependencies
in a clean virtual environment, and used from a folder outside the checkout, as a user who
installs it from a package index does. Everything it writes is under the test's own folder."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from airflow_provider_resourcesync import __version__
from tests.test_provider import DISTRIBUTION, listed_providers

ROOT = Path(__file__).resolve().parents[1]
UV = os.environ.get("UV", "uv")  # `uv run` names itself in UV
TIMEOUT = 600


def test_the_installed_wheel_lists_the_provider_ships_the_example_dags_and_runs_both_demos(
        tmp_path: Path) -> None:
    venv = install_wheel(tmp_path)
    work = tmp_path / "work"  # the user's folder, outside the checkout
    (work / "tmp").mkdir(parents=True)
    environment = user_environment(venv, work)
    python = venv / "bin" / "python"
    with (running([python, "-m", "airflow_provider_resourcesync.demo", "--destination", "mirror"],
                  work, environment) as demo,
          running([python, "-m", "airflow_provider_resourcesync.demo_publish",
                   "--directory", "publish"], work, environment) as publish):
        assert listed_providers(venv / "bin" / "airflow", work / "home",
                                environment)[DISTRIBUTION] == __version__
        folder = Path(subprocess.run(
            [python, "-c", "from airflow_provider_resourcesync.example_dags import "
                           "example_dags_folder; print(example_dags_folder())"],
            cwd=work, env=environment, capture_output=True, text=True, check=True).stdout.strip())
        assert folder.is_relative_to(venv)
        assert shipped(folder) == shipped(ROOT / "dags_examples")

        report = demo()
        assert (f"Mirrored 36 of 36 resources into {work / 'mirror'}; the audit found the mirror "
                "clean.") in report
        assert "3 of 3 changes arrived in the mirror." in report
        held = [path for path in (work / "mirror").rglob("*")
                if path.is_file() and ".resourcesync" not in path.parts]
        assert len(held) == 36  # one created, one deleted

        report = publish()
        assert report.count(": success (") == 4  # publish, mirror, publish again, incremental
        assert f"the mirror at {work / 'publish' / 'mirror'} equals the collection." in report


def install_wheel(tmp_path: Path) -> Path:
    """Build the wheel, and install it in a new virtual environment with the locked versions of
    its dependencies; the environment's folder."""
    dist, venv, requirements = tmp_path / "dist", tmp_path / "venv", tmp_path / "requirements.txt"
    uv(["build", "--wheel", "--out-dir", dist, ROOT], tmp_path)
    uv(["export", "--project", ROOT, "--frozen", "--no-dev", "--no-hashes", "--no-emit-project",
        "--output-file", requirements], tmp_path)
    uv(["venv", "--python", sys.executable, venv], tmp_path)
    (wheel,) = dist.glob("*.whl")
    # compiled now, Airflow starts faster in each of the processes below
    uv(["pip", "install", "--python", venv / "bin" / "python", "-r", requirements, wheel],
       tmp_path, UV_COMPILE_BYTECODE="1")
    return venv


def uv(arguments: Sequence[str | Path], cwd: Path, **environment: str) -> None:
    subprocess.run([UV, "--quiet", *map(str, arguments)], cwd=cwd, check=True, timeout=TIMEOUT,
                   env={**os.environ, **environment})


def user_environment(venv: Path, work: Path) -> dict[str, str]:
    """This process's environment without its Airflow settings, ``venv`` activated, temporary
    files in ``work/tmp``."""
    return {**{name: value for name, value in os.environ.items()
               if not name.startswith("AIRFLOW") and name != "PYTHONPATH"},
            "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "TMPDIR": str(work / "tmp")}


def shipped(folder: Path) -> dict[str, bytes]:
    """The files of ``folder`` (but Python's caches), relative path -> content."""
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts}


@contextmanager
def running(command: Sequence[str | Path], cwd: Path,
            environment: dict[str, str]) -> Iterator[Callable[[], str]]:
    """``command`` started in ``cwd``; yields a function that waits for it and returns its output,
    once it has succeeded. Killed on leaving if still running."""
    with tempfile.TemporaryFile(dir=cwd) as output:
        process = subprocess.Popen([str(part) for part in command], cwd=cwd, env=environment,
                                   stdout=output, stderr=subprocess.STDOUT)

        def finish() -> str:
            code = process.wait(timeout=TIMEOUT)
            output.seek(0)
            text = output.read().decode()
            assert code == 0, text
            return text

        try:
            yield finish
        finally:
            process.kill()
            process.wait()
