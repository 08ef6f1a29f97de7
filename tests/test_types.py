"""The package type-checks under mypy, strict (``[tool.mypy]`` in pyproject.toml): ``py.typed``
promises users' type checkers types that hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_package_type_checks_strict(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
         "--config-file", str(ROOT / "pyproject.toml")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        pytest.fail(f"mypy found errors:\n{done.stdout}{done.stderr}", pytrace=False)
