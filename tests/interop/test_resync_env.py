"""The environment resync runs from: installed into the cache once, never left half-built, and a
failed install an error (the interop tests fail rather than skip)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .resync import VERSION, Resync, ResyncUnavailable, installed, uv_command


def test_a_failed_install_raises_and_leaves_nothing_in_the_cache(tmp_path: Path) -> None:
    missing_uv = str(tmp_path / "no-such-uv")
    with pytest.raises(ResyncUnavailable, match="no-such-uv"):
        installed(tmp_path / "cache", uv=[missing_uv])
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_broken_environment_in_place_is_not_trusted(tmp_path: Path) -> None:
    """One whose interpreter is gone (another machine's cache, say) is set aside; without uv
    it cannot be rebuilt, which is an error, not a skip."""
    root = tmp_path / "cache"
    broken = root / f"resync-{VERSION}-py{sys.version_info.major}{sys.version_info.minor}"
    (broken / "bin").mkdir(parents=True)
    (broken / "bin" / "python").symlink_to(tmp_path / "gone" / "python3")
    with pytest.raises(ResyncUnavailable):
        installed(root, uv=[str(tmp_path / "no-such-uv")])
    assert list(root.iterdir()) == []


def test_the_cached_environment_is_reused(resync: Resync) -> None:
    assert installed(resync.home.parent) == resync
    assert resync.run("resync-sync", "--help", cwd=resync.home).stdout.startswith("usage:")


def test_uv_is_the_one_uv_run_names(tmp_path: Path) -> None:
    uv = tmp_path / "uv"
    uv.write_text("")
    assert uv_command({"UV": str(uv)}) == [str(uv)]
