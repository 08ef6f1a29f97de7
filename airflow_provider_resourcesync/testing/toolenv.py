"""A tool that is not a dependency of the package, run from a virtual environment of its own.

The interop tests run resync, the ResourceSync reference implementation, and the baseline
benchmark runs resync and aria2c (a wheel ships a static build) against our engine.
:func:`installed` makes the environment with uv, in a cache folder keyed by the distribution,
its version and this Python's, and reuses it on the next run. It is built in a temporary
folder beside its final place and renamed there, so runs side by side, or one killed half-way,
never leave a half-built environment in place. Every command run has a timeout.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["ToolUnavailable", "cache_root", "installed", "uv_command"]

#: The longest an install may take.
INSTALL_TIMEOUT = 300.0


class ToolUnavailable(Exception):
    """The tool could not be installed or does not run."""


def uv_command(environ: Mapping[str, str] | None = None) -> list[str]:
    """How to run uv from here: the ``UV`` that ``uv run`` sets to its own path; else ``uv`` on
    the PATH; else ``python3 -m uv`` (how CI installs it).

    :raises ToolUnavailable: none of them is there.
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
    raise ToolUnavailable("uv is not installed (no UV variable, no uv on the PATH, no "
                          "'python3 -m uv'): install it with 'python3 -m pip install uv'")


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME`` (else ``~/.cache``), our folder in it."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "airflow-provider-resourcesync"


def installed(distribution: str, version: str, root: Path | None = None,
              uv: Sequence[str] | None = None) -> Path:
    """The home of an environment holding ``distribution`` at ``version`` under ``root`` (the
    cache), installed first if it is not there or no longer runs; its interpreter is
    ``bin/python``.

    :raises ToolUnavailable: it could not be installed (uv's output is in the message).
    """
    root = root or cache_root()
    python = f"py{sys.version_info.major}{sys.version_info.minor}"
    final = root / f"{distribution}-{version}-{python}"
    if _runs(final, distribution, version):
        return final
    root.mkdir(parents=True, exist_ok=True)
    if final.exists():  # not ours to trust: its interpreter is gone, say; set it aside
        _discard(final, root)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:
        command = list(uv) if uv is not None else uv_command()
        _install(command, building, f"{distribution}=={version}")
        try:
            building.rename(final)
        except OSError:  # another run put one there first
            if not _runs(final, distribution, version):
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    if not _runs(final, distribution, version):
        raise ToolUnavailable(f"{distribution} {version} was installed at {final} but does "
                              "not run")
    return final


def _install(uv: list[str], home: Path, requirement: str) -> None:
    environment = {**os.environ, "VIRTUAL_ENV": ""}  # the project's, if any, is not the target
    for step in ([*uv, "venv", "--quiet", "--allow-existing", "--python", sys.executable,
                  str(home)],
                 [*uv, "pip", "install", "--quiet", "--python", str(home / "bin" / "python"),
                  requirement]):
        try:
            done = subprocess.run(step, capture_output=True, text=True, env=environment,
                                  timeout=INSTALL_TIMEOUT, check=False,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ToolUnavailable(f"{' '.join(step)}: {exc}") from exc
        if done.returncode != 0:
            raise ToolUnavailable(f"{' '.join(step)} exited {done.returncode}: "
                                  f"{(done.stderr or done.stdout)[-3000:]}")


def _runs(home: Path, distribution: str, version: str) -> bool:
    """Whether ``home`` is a complete environment holding ``distribution`` at ``version``."""
    python = home / "bin" / "python"
    if not python.exists():
        return False
    try:
        done = subprocess.run(
            [str(python), "-c", "import importlib.metadata as m, sys; "
             "print(m.version(sys.argv[1]))", distribution],
            capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == version


def _discard(home: Path, root: Path) -> None:
    """Move ``home`` out of the way (atomically) and remove it."""
    trash = Path(tempfile.mkdtemp(prefix=".discarded-", dir=root))
    with contextlib.suppress(FileNotFoundError):  # another run discarded it
        home.rename(trash / "env")
    shutil.rmtree(trash, ignore_errors=True)
