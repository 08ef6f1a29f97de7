"""resync, the ResourceSync reference implementation, run from an environment of its own.

resync is not a dependency of the package: :func:`installed` makes a virtual environment with
it, with uv, in a cache folder keyed by its version and by this Python's, and reuses it on the
next run. It is built in a temporary folder beside its final place and renamed there, so runs
side by side, or one killed half-way, never leave a half-built environment in place. Every
command run has a timeout.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["VERSION", "Resync", "ResyncUnavailable", "installed", "uv_command"]

#: The resync release the interop tests run.
VERSION = "2.0.1"
#: The longest an install may take, and one resync command.
INSTALL_TIMEOUT = 300.0
RUN_TIMEOUT = 120.0


class ResyncUnavailable(Exception):
    """resync could not be installed or does not run."""


@dataclass(frozen=True, slots=True)
class Resync:
    """resync's environment: run its scripts with its own interpreter (its scripts' first line
    names the folder they were installed in, not the one they were renamed to)."""

    home: Path

    @property
    def python(self) -> Path:
        return self.home / "bin" / "python"

    def run(self, script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """``script`` (``resync-build``, ``resync-sync``...) with ``args`` in ``cwd``, which it
        may write its status file to; its output on success.

        :raises AssertionError: it failed, by its exit status or by what it says (its output is
            in the message).
        """
        return self._checked([str(self.python), str(self.home / "bin" / script), *args], cwd)

    def python_code(self, code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """``code`` run by resync's interpreter (to use its library directly)."""
        return self._checked([str(self.python), "-c", code, *args], cwd)

    @staticmethod
    def _checked(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                              timeout=RUN_TIMEOUT, check=False, stdin=subprocess.DEVNULL)
        # resync reports a failure on standard error and exits 0 all the same
        assert done.returncode == 0 and "FatalError" not in done.stderr, (
            f"{' '.join(command[1:3])} ... exited {done.returncode}\n"
            f"stdout: {done.stdout[-3000:]}\nstderr: {done.stderr[-3000:]}")
        return done


def uv_command(environ: dict[str, str] | None = None) -> list[str]:
    """How to run uv from here: the ``UV`` that ``uv run`` sets to its own path; else ``uv`` on
    the PATH; else ``python3 -m uv`` (how CI installs it).

    :raises ResyncUnavailable: none of them is there.
    """
    environ = os.environ if environ is None else environ
    named = environ.get("UV")
    if named and Path(named).is_file():
        return [named]
    found = shutil.which("uv")
    if found:
        return [found]
    for python in (shutil.which("python3"), sys.executable):
        if python and subprocess.run([python, "-m", "uv", "--version"], capture_output=True,
                                     timeout=60, check=False).returncode == 0:
            return [python, "-m", "uv"]
    raise ResyncUnavailable("uv is not installed (no UV variable, no uv on the PATH, no "
                            "'python3 -m uv'): install it with 'python3 -m pip install uv'")


def cache_root(environ: dict[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME`` (else ``~/.cache``), our folder in it."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "airflow-provider-resourcesync"


def installed(root: Path | None = None, uv: Sequence[str] | None = None) -> Resync:
    """resync :data:`VERSION` in its environment under ``root`` (the cache), installed first if
    it is not there or no longer runs.

    :raises ResyncUnavailable: it could not be installed (uv's output is in the message).
    """
    root = root or cache_root()
    version = f"py{sys.version_info.major}{sys.version_info.minor}"
    final = Resync(root / f"resync-{VERSION}-{version}")
    if _runs(final):
        return final
    root.mkdir(parents=True, exist_ok=True)
    if final.home.exists():  # not ours to trust: its interpreter is gone, say; set it aside
        _discard(final.home, root)
    building = Resync(Path(tempfile.mkdtemp(prefix=".building-", dir=root)))
    try:
        command = list(uv) if uv is not None else uv_command()
        _install(command, building.home)
        try:
            building.home.rename(final.home)
        except OSError:  # another run put one there first
            if not _runs(final):
                raise
    finally:
        shutil.rmtree(building.home, ignore_errors=True)
    if not _runs(final):
        raise ResyncUnavailable(f"resync {VERSION} was installed at {final.home} but does not run")
    return final


def _install(uv: list[str], home: Path) -> None:
    environment = {**os.environ, "VIRTUAL_ENV": ""}  # the project's, if any, is not the target
    for step in ([*uv, "venv", "--quiet", "--allow-existing", "--python", sys.executable,
                  str(home)],
                 [*uv, "pip", "install", "--quiet", "--python", str(home / "bin" / "python"),
                  f"resync=={VERSION}"]):
        try:
            done = subprocess.run(step, capture_output=True, text=True, env=environment,
                                  timeout=INSTALL_TIMEOUT, check=False,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ResyncUnavailable(f"{' '.join(step)}: {exc}") from exc
        if done.returncode != 0:
            raise ResyncUnavailable(f"{' '.join(step)} exited {done.returncode}: "
                                    f"{(done.stderr or done.stdout)[-3000:]}")


def _runs(resync: Resync) -> bool:
    """Whether ``resync`` is a complete environment of :data:`VERSION` that runs."""
    if not resync.python.exists():
        return False
    try:
        done = subprocess.run(
            [str(resync.python), "-c", "import resync; print(resync.__version__)"],
            capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == VERSION


def _discard(home: Path, root: Path) -> None:
    """Move ``home`` out of the way (atomically) and remove it."""
    trash = Path(tempfile.mkdtemp(prefix=".discarded-", dir=root))
    with contextlib.suppress(FileNotFoundError):  # another run discarded it
        home.rename(trash / "env")
    shutil.rmtree(trash, ignore_errors=True)
