"""A run killed at any step of the mirror's save, then run again, costs a Destination of the
mirror (spec 14.8) none of its changes: the journal is written before the Resource List, and
``checkpoint.json`` last. Each run is killed for real (SIGKILL in a child process) just before
one of the save's writes, in turn, on local disk and on S3 (moto's server over HTTP)."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer

from ..killing import run_child
from ..writer.records import kill_before_write, named, opened
from .conftest import client_for, held
from .test_republish import as_published, publish

RESOURCES = {f"r{n}.txt": f"resource {n}\n".encode() for n in range(1, 7)}


def killed_run(capability_list: str, where: str, checkpoint: str, kill_at: int,
               endpoint: str) -> None:
    """In a child: runs one incremental sync from ``checkpoint`` (in JSON, as XCom holds it) into
    the destination ``where`` names (:func:`~tests.writer.records.opened`, on the S3
    server at ``endpoint``), and kills itself just before the ``kill_at``-th write of the
    mirror's own documents (its save)."""
    destination = opened(where, endpoint)
    kill_before_write(destination, kill_at)
    policy = ClientPolicy(allow_private=True, backoff=0.01, max_backoff=1)
    with ResourceSyncClient(policy, source_urls=[capability_list]) as client:
        run_incremental(client, destination, capability_list_url=capability_list,
                        checkpoint=Checkpoint.from_json(json.loads(checkpoint)))


@pytest.fixture(params=["local", "s3"])
def mirrors(request: pytest.FixtureRequest, tmp_path: Path
            ) -> tuple[Callable[[int], Destination], str]:
    """Fresh destinations, one per trial, and the S3 endpoint (unused on local disk)."""
    if request.param == "local":
        return (lambda n: LocalDestination(tmp_path / f"mirror-{n}")), ""
    client, bucket = request.getfixturevalue("s3_client"), request.getfixturevalue("bucket")
    return ((lambda n: S3Destination(client, bucket, f"mirror-{n}/")),
            request.getfixturevalue("s3_endpoint"))


@pytest.mark.parametrize("runs_before", [0, 1], ids=["first-incremental", "later-incremental"])
def test_a_run_killed_at_any_step_of_its_save_costs_a_destination_of_the_mirror_nothing(
        mirrors: tuple[Callable[[int], Destination], str],
        runs_before: int, tmp_path: Path) -> None:
    """The first incremental run writes the mirror's first Change List and its index; a later
    one adds to them."""
    make, endpoint = mirrors
    killed_at: list[str] = []
    for trial in range(1, 20):  # one kill per write of the save, until a run is not killed
        upstream = make(trial)
        downstream = LocalDestination(tmp_path / f"downstream-{trial}")
        with (SourceServer(max_lifetime=120) as server, SourceServer(max_lifetime=120) as web,
              client_for(server) as client, client_for(web) as reader):
            source = ResourceSyncSource(server, resources=RESOURCES)
            source.publish()
            base = web.url("/mirror/")
            mirror_capabilities = base + quote(RESERVED_PREFIX) + "capabilitylist.xml"
            start = run_baseline(client, upstream, capability_list_url=source.capability_list_url,
                                 public_url=base)
            served = publish(upstream, web, "/mirror/", set())  # type: ignore[arg-type]
            standing = run_baseline(reader, downstream, capability_list_url=mirror_capabilities)
            for _ in range(runs_before):
                source.update("r3.txt", b"three, changed\n")
                source.publish()
                start = run_incremental(client, upstream, checkpoint=start,
                                        capability_list_url=source.capability_list_url)
            served = publish(upstream, web, "/mirror/", served)  # type: ignore[arg-type]
            source.update("r1.txt", b"one, changed\n")
            source.create("new.txt", b"new\n")
            source.delete("r2.txt")
            source.publish()

            run = run_child(killed_run, source.capability_list_url, named(upstream),
                            json.dumps(start.to_json()), trial, endpoint)
            if run.exitcode == 0:
                break
            assert run.exitcode == -signal.SIGKILL, run.traceback
            killed_at.append(run.said)
            # run again from the checkpoint the killed run started from (its XCom never came)
            run_incremental(client, upstream, checkpoint=start,
                            capability_list_url=source.capability_list_url)
            publish(upstream, web, "/mirror/", served)  # type: ignore[arg-type]
            standing = run_incremental(reader, downstream, checkpoint=standing,
                                       capability_list_url=mirror_capabilities)

            assert held(upstream) == source.state(), killed_at[-1]
            assert held(downstream) == as_published(source.state(), base), killed_at[-1]
    else:
        pytest.fail("every run was killed: the save writes more than 19 documents?")
    assert [key.rpartition("/")[2] for key in killed_at[-3:]] == [
        "capabilitylist.xml", "description.xml", "checkpoint.json"]
    assert any("/changes/" in key for key in killed_at), killed_at
