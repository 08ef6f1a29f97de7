"""A killed run leaves nothing that makes the next run fail or pay (DESIGN.md, "Safety rules"):
its staging files, on local disk, even when the next run has the same PID (a container's task is
PID 1 on every run); its incomplete multipart uploads, in S3."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.storage.base import ObjectInfo
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination

REPO = Path(__file__).parents[2]
HOURS_AGO = time.time() - 2 * 3600
INFO = ObjectInfo("https://h/a", 1, Hashes(()))

_RUN = """
import logging, sys, time
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.storage.base import ObjectInfo
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.storage.base import ObjectInfo
from airflow_provider_resourcesync.storage.local import LocalDestination

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(message)s")
root, mode = sys.argv[1:]
print("pid", __import__("os").getpid(), flush=True)
destination = LocalDestination(root)
if mode == "stage":  # stage three objects, say so, and wait to be killed or told to commit
    staged = [destination.stage(f"https/h/{n}") for n in range(3)]
    for item in staged:
        item.file.write(b"partial")
        item.file.flush()
    print("staged", destination._tmp, flush=True)
    if sys.stdin.readline() != "commit\\n":
        time.sleep(120)
    for n, item in enumerate(staged):
        item.commit(ObjectInfo(f"https://h/{n}", 7, Hashes(())))
        item.close()
else:  # a whole run: write five objects
    for n in range(5):
        with destination.stage(f"https/h/{n}") as item:
            item.file.write(b"whole")
            item.commit(ObjectInfo(f"https://h/{n}", 5, Hashes(())))
print("done", flush=True)
"""


def in_a_pid_namespace(*args: str) -> list[str]:
    """A command run as PID 1 of a new PID namespace, as a container's task is (in a user
    namespace of its own too where the tests do not run as root)."""
    user = ["--user", "--map-root-user"] if os.geteuid() else []
    return ["unshare", *user, "--pid", "--fork", "--mount-proc", sys.executable, "-c", _RUN,
            *args]


def read_until(process: subprocess.Popen[str], marker: str) -> list[str]:
    """The lines ``process`` printed up to the one starting with ``marker`` (bounded: the
    process prints a few lines then waits, and is killed if it has not within a minute)."""
    lines = []
    watchdog = threading.Timer(60, process.kill)
    watchdog.start()
    try:
        for _ in range(50):
            line = process.stdout.readline()  # type: ignore[union-attr]
            lines.append(line)
            if not line or line.startswith(marker):
                break
    finally:
        watchdog.cancel()
    assert lines[-1].startswith(marker), lines
    return lines


def working_area(root: Path) -> list[str]:
    tmp = root / ".resourcesync" / "tmp"
    return sorted(path.relative_to(tmp).as_posix() for path in tmp.rglob("*"))


def test_a_run_killed_mid_staging_does_not_jam_a_rerun_with_the_same_pid(tmp_path: Path) -> None:
    root = tmp_path / "mirror"
    killed = subprocess.Popen(in_a_pid_namespace(str(root), "stage"), cwd=REPO, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert read_until(killed, "staged")[0] == "pid 1\n"
        task = Path(f"/proc/{killed.pid}/task/{killed.pid}/children").read_text().split()
        os.kill(int(task[0]), signal.SIGKILL)  # PID 1 of its namespace: killed from outside
        killed.wait(timeout=60)
    finally:
        killed.kill()
        killed.wait(timeout=60)
        killed.stdout.close()  # type: ignore[union-attr]
        killed.stdin.close()  # type: ignore[union-attr]
    left = working_area(root)
    assert left  # the killed run's staging files

    rerun = subprocess.run(in_a_pid_namespace(str(root), "run"), cwd=REPO, text=True,
                           capture_output=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.startswith("pid 1\n")  # the killed run's PID, and its first names
    swept = [line for line in rerun.stdout.splitlines() if "killed runs" in line]
    assert len(swept) == 1 and left[0] in swept[0], rerun.stdout
    assert working_area(root) == []  # nor does the rerun leave anything
    assert LocalDestination(root).read_bytes("https/h/0") == b"whole"


def test_a_live_runs_staging_is_not_swept_by_a_concurrent_run(tmp_path: Path) -> None:
    root = tmp_path / "mirror"
    live = subprocess.Popen([sys.executable, "-c", _RUN, str(root), "stage"], cwd=REPO,
                            text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        folder = Path(read_until(live, "staged")[-1].split()[1])
        for path in [folder, *folder.iterdir()]:  # old enough to count as abandoned by age
            os.utime(path, (HOURS_AGO, HOURS_AGO))
        LocalDestination(root)  # sweeps, in this process
        assert sorted(path.name for path in folder.iterdir()) == [".lock", "0", "1", "2"]
        live.stdin.write("commit\n")  # type: ignore[union-attr]
        live.stdin.flush()  # type: ignore[union-attr]
        assert live.stdout.read().endswith("done\n")  # type: ignore[union-attr]
        assert live.wait(timeout=60) == 0
    finally:
        live.kill()
        live.wait(timeout=60)
        live.stdout.close()  # type: ignore[union-attr]
        live.stdin.close()  # type: ignore[union-attr]
    assert LocalDestination(root).read_bytes("https/h/2") == b"partial"
    assert not folder.exists()


def test_destinations_of_one_process_keep_their_own_folders(tmp_path: Path) -> None:
    first = LocalDestination(tmp_path)
    with first.stage("https/h/a") as staged:
        second = LocalDestination(tmp_path)  # sweeps, and leaves the first one's folder
        staged.file.write(b"a")
        staged.commit(INFO)
    assert first.info("https/h/a") == INFO
    assert second._tmp.is_dir() and first._tmp.is_dir() and first._tmp != second._tmp


def test_files_of_earlier_versions_are_removed_once_old(tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    tmp = tmp_path / ".resourcesync" / "tmp"
    tmp.mkdir(parents=True)
    for name in ("stage-1-0", "stage-1-1", "probe-x1y2"):
        (tmp / name).write_bytes(b"12345")
        os.utime(tmp / name, (HOURS_AGO, HOURS_AGO))
    (tmp / "stage-7-0").write_bytes(b"fresh")  # perhaps an earlier version's live run
    making = tmp / ".making-abc"  # a run killed while making its folder
    making.mkdir()
    os.utime(making, (HOURS_AGO, HOURS_AGO))
    with caplog.at_level(logging.INFO, "airflow_provider_resourcesync"):
        LocalDestination(tmp_path)
    assert [name for name in os.listdir(tmp) if not name.startswith("process-")] == [
        "stage-7-0"]
    [line] = [record.getMessage() for record in caplog.records if "killed runs" in
              record.getMessage()]
    assert "Removed 4 leftover(s)" in line and "(15 bytes)" in line and str(tmp) in line
    assert all(name in line for name in ("stage-1-0", "stage-1-1", "probe-x1y2", ".making-abc"))


# -- S3: incomplete multipart uploads --------------------------------------------------------------


def uploads(s3_client: Any, bucket: str) -> list[str]:
    answer = s3_client.list_multipart_uploads(Bucket=bucket)
    return sorted(upload["Key"] for upload in answer.get("Uploads", ()))


def age_of_uploads(s3_client: Any, bucket: str) -> timedelta:
    """How old the server says the oldest upload is, by its own clock (moto reports a fixed
    start in the past; S3 the real one)."""
    answer = s3_client.list_multipart_uploads(Bucket=bucket)
    now = parsedate_to_datetime(answer["ResponseMetadata"]["HTTPHeaders"]["date"])
    return now - min(upload["Initiated"] for upload in answer["Uploads"])


def test_stale_multipart_uploads_under_the_prefix_are_aborted_on_the_first_write(
        s3_client: Any, bucket: str, caplog: pytest.LogCaptureFixture) -> None:
    for key in ("mirror/https/h/big", "mirror/.resourcesync/x", "mirror-2/https/h/big",
                "other/big"):
        s3_client.create_multipart_upload(Bucket=bucket, Key=key)
    age = age_of_uploads(s3_client, bucket)

    live = S3Destination(s3_client, bucket, "mirror/", stale_upload_after=age + timedelta(days=1))
    live.write_bytes("a", b"a", "text/plain")  # younger than the limit: a live run's, kept
    assert len(uploads(s3_client, bucket)) == 4

    destination = S3Destination(s3_client, bucket, "mirror/",
                                stale_upload_after=age - timedelta(minutes=1))
    assert len(uploads(s3_client, bucket)) == 4  # nothing before the first write
    with caplog.at_level(logging.INFO, "airflow_provider_resourcesync"):
        with destination.stage("b") as staged:
            staged.file.write(b"b")
            staged.commit(INFO)
        destination.write_bytes("c", b"c", "text/plain")  # once per destination
    assert uploads(s3_client, bucket) == ["mirror-2/https/h/big", "other/big"]
    [line] = [record.getMessage() for record in caplog.records if "multipart" in
              record.getMessage()]
    assert line.startswith("Aborted 2 incomplete multipart upload(s)") and destination.url in line


def test_a_listing_refused_only_warns(s3_endpoint: str, bucket: str, s3_client: Any,
                                      caplog: pytest.LogCaptureFixture) -> None:
    s3_client.create_multipart_upload(Bucket=bucket, Key="mirror/big")
    client = boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")

    def refuse(**_: Any) -> None:  # as S3 answers a role without s3:ListBucketMultipartUploads
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied"}},
                          "ListMultipartUploads")

    client.meta.events.register("before-call.s3.ListMultipartUploads", refuse)
    destination = S3Destination(client, bucket, "mirror/", stale_upload_after=timedelta(0))
    with caplog.at_level(logging.INFO, "airflow_provider_resourcesync"):
        destination.write_bytes("a", b"a", "text/plain")
    assert destination.read_bytes("a") == b"a"
    assert uploads(s3_client, bucket) == ["mirror/big"]
    [record] = [record for record in caplog.records if "multipart" in record.getMessage()]
    assert record.levelno == logging.WARNING and "AccessDenied" in record.getMessage()
