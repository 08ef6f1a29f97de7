"""Real ``dag.test()`` runs against a Source that rotates its old Change Lists out of its index
(12.2): the incremental operator and the sensors fail with the error that names the checkpoint,
the first change still offered and the remedy; ``on_gap="baseline"`` baselines instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import ConfigurationError
from airflow_provider_resourcesync.operators.incremental import ResourceSyncIncrementalOperator
from airflow_provider_resourcesync.sensors.changelist import ResourceSyncChangeListSensor
from airflow_provider_resourcesync.storage.keys import KeyMapper
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.testing import ResourceSyncSource

from .runs import assert_mirrors, run_dag, states, xcom
from .test_sensors import Later, later, once_read

__all__ = ["later"]

GAP = "The Source no longer offers every change after the checkpoint"
NEXT = "Next: run a baseline into the mirror (ResourceSyncBaselineOperator), or give"


@pytest.fixture
def mirror(source: ResourceSyncSource, tmp_path: Path) -> Path:
    """A local mirror of ``source``, baselined (its checkpoint saved with it); from now on the
    Source offers only its last Change List."""
    source.keep_change_lists = 1
    root = tmp_path / "mirror"
    policy = ClientPolicy(allow_private=True)
    with ResourceSyncClient(policy, source_urls=[source.server.base_url]) as client:
        run_baseline(client, LocalDestination(root),
                     capability_list_url=source.capability_list_url)
    return root


def rotate_past(source: ResourceSyncSource) -> None:
    """Changes in two lists that are then rotated away, one in the list still offered."""
    source.create("lost.txt", b"in a list rotated away\n")
    source.delete("item-01.txt")
    source.close_changelist()
    source.update("item-02.txt", b"in another list rotated away\n")
    source.close_changelist()
    source.update("item-03.txt", b"in the list offered\n")
    source.publish()


def offered(source: ResourceSyncSource) -> str:
    return f"still offers is in {source.server.url(f'{source.prefix}/changelist-3.xml')} , from "


def test_the_incremental_operator_fails_saying_to_run_a_baseline(
        source: ResourceSyncSource, mirror: Path, capfd: pytest.CaptureFixture[str]) -> None:
    rotate_past(source)
    capfd.readouterr()
    run = run_dag("gap_incremental", lambda: ResourceSyncIncrementalOperator(
        task_id="sync", destination=str(mirror)))
    assert states(run) == {"sync": "failed"}
    out = capfd.readouterr().out
    assert NEXT in out and GAP in out and offered(source) in out
    key = KeyMapper().key
    assert (mirror / key(source.uri("item-01.txt"))).exists()  # nothing applied
    assert not (mirror / key(source.uri("lost.txt"))).exists()


def test_on_gap_baseline_succeeds_and_the_mirror_equals_the_source(
        source: ResourceSyncSource, mirror: Path) -> None:
    rotate_past(source)
    run = run_dag("gap_baseline", lambda: ResourceSyncIncrementalOperator(
        task_id="sync", destination=str(mirror), on_gap="baseline"))
    assert states(run) == {"sync": "success"}
    checkpoint = Checkpoint.from_json(xcom(run, "sync"))
    assert (checkpoint.kind, checkpoint.document) == ("baseline", source.resource_list_url)
    assert_mirrors(source, mirror)
    held = [path for path in mirror.rglob("*") if path.is_file()
            and ".resourcesync" not in path.parts]
    assert len(held) == len(source.state())  # item-01.txt, deleted in the gap, is gone


def test_a_poking_sensor_fails_with_the_error(
        source: ResourceSyncSource, mirror: Path, capfd: pytest.CaptureFixture[str]) -> None:
    rotate_past(source)
    capfd.readouterr()
    run = run_dag("gap_poke", lambda: ResourceSyncChangeListSensor(
        task_id="wait", destination=str(mirror), poke_interval=0.1, timeout=30))
    assert states(run) == {"wait": "failed"}
    out = capfd.readouterr().out
    assert NEXT in out and GAP in out and offered(source) in out


def test_a_deferred_sensor_fails_with_the_error_once_its_trigger_meets_the_gap(
        source: ResourceSyncSource, mirror: Path, later: Later,
        capfd: pytest.CaptureFixture[str]) -> None:
    # the sensor's own look, then its trigger's
    later(0, once_read(source, 2, lambda: rotate_past(source)))
    capfd.readouterr()
    run = run_dag("gap_deferred", lambda: ResourceSyncChangeListSensor(
        task_id="wait", destination=str(mirror), deferrable=True, poll_interval=0.2,
        max_poll_interval=0.5, timeout=30))
    assert states(run) == {"wait": "failed"}
    out = capfd.readouterr().out
    assert f"Watching the Change List failed: {GAP}" in out
    assert NEXT in out and offered(source) in out


def test_a_wrong_on_gap_fails_when_the_dag_is_parsed() -> None:
    with pytest.raises(ConfigurationError, match="on_gap 'skip' is not one of fail, baseline"):
        ResourceSyncIncrementalOperator(task_id="sync", destination="/mirror", on_gap="skip")
