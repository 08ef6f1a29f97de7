"""resync, the ResourceSync reference implementation, run from an environment of its own
(:mod:`airflow_provider_resourcesync.testing.toolenv`: built once with uv, cached, never left
half-built). Every command run has a timeout.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_resourcesync.testing import toolenv
from airflow_provider_resourcesync.testing.toolenv import ToolUnavailable as ResyncUnavailable
from airflow_provider_resourcesync.testing.toolenv import uv_command

__all__ = ["VERSION", "Resync", "ResyncUnavailable", "installed", "uv_command"]

#: The resync release the interop tests run.
VERSION = "2.0.1"
#: The longest one resync command may take.
RUN_TIMEOUT = 120.0


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


def installed(root: Path | None = None, uv: Sequence[str] | None = None) -> Resync:
    """resync :data:`VERSION` in its environment under ``root`` (the cache), installed first if
    it is not there or no longer runs.

    :raises ResyncUnavailable: it could not be installed (uv's output is in the message).
    """
    return Resync(toolenv.installed("resync", VERSION, root, uv))
