"""The document cache: a killed run's bodies (up to 2 GiB) do not stay in the temp folder."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from airflow_provider_resourcesync.client.cache import DocumentCache
from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient

REPO = Path(__file__).parents[2]
HOURS_AGO = time.time() - 2 * 3600

_KILLED = """
import sys, time
from airflow_provider_resourcesync.client.cache import DocumentCache

cache = DocumentCache()
body = cache.new_file()
body.write_bytes(b"<urlset/>" * 1000)
cached = cache.store("https://h/resourcelist.xml", body, etag='"1"', last_modified=None)
print(cached.path, flush=True)
time.sleep(120)  # killed long before
"""


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temp folder of this test, for this process and the ones it starts."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    return tmp_path


def test_a_killed_runs_cache_is_removed_by_the_next_client(
        temp: Path, caplog: pytest.LogCaptureFixture) -> None:
    killed = subprocess.Popen([sys.executable, "-c", _KILLED], cwd=REPO, text=True,
                              stdout=subprocess.PIPE)
    watchdog = threading.Timer(60, killed.kill)  # the line comes at once, or never
    watchdog.start()
    try:
        body = Path(killed.stdout.readline().strip())  # type: ignore[union-attr]
        assert body.is_relative_to(temp) and body.stat().st_size == 9000
    finally:
        watchdog.cancel()
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=60)
        killed.stdout.close()  # type: ignore[union-attr]
    folder = body.parent
    assert folder.is_dir()
    with caplog.at_level(logging.INFO, "airflow_provider_resourcesync"), ResourceSyncClient(
            ClientPolicy()) as client:
        assert not folder.exists()
        assert client.cache._directory.is_dir()
    [line] = [record.getMessage() for record in caplog.records if "killed runs" in
              record.getMessage()]
    assert folder.name in line and "(9000 bytes)" in line
    assert [path.name for path in temp.rglob("*")] == [folder.parent.name]


def test_a_live_cache_is_kept_and_a_closed_one_removed(temp: Path) -> None:
    first = DocumentCache()
    body = first.new_file()
    body.write_bytes(b"x")
    stored = first.store("https://h/a", body, etag=None, last_modified=None)
    second = DocumentCache()
    assert stored.path.read_bytes() == b"x"
    first.close()
    assert not stored.path.exists() and not first._directory.exists()
    second.close()
    assert [path.name for path in temp.iterdir()] == [f"resourcesync-cache.{os.geteuid()}"]


def test_caches_of_earlier_versions_are_removed_once_old(temp: Path) -> None:
    old, fresh = temp / "resourcesync-cache-ab12cd34", temp / "resourcesync-cache-ef56gh78"
    for folder in (old, fresh):
        folder.mkdir()
        (folder / "body").write_bytes(b"body")
    for path in (old, old / "body"):
        os.utime(path, (HOURS_AGO, HOURS_AGO))
    DocumentCache().close()
    assert not old.exists() and fresh.exists()
