"""The incremental engine against a Source that rotates old Change Lists out of its index (12.2):
changes after the checkpoint no longer offered fail the run with a clear error and touch nothing,
``on_gap="baseline"`` baselines instead, and a closed list read whole, then rotated away, is no
gap."""

from __future__ import annotations

import pytest

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.errors import ChangeGapError, ConfigurationError
from airflow_provider_resourcesync.protocol.datetimes import format_datetime
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.testing import ResourceSyncSource, SourceServer
from airflow_provider_resourcesync.writer import saved_checkpoint

from .conftest import INITIAL, held, path_of, resource_gets
from .test_baseline import baseline
from .test_incremental import in_step, incremental


def rotating(server: SourceServer, keep: int) -> ResourceSyncSource:
    """A published Source of :data:`INITIAL` that offers only its last ``keep`` Change Lists."""
    source = ResourceSyncSource(server, resources=INITIAL, keep_change_lists=keep)
    source.publish()
    return source


def first_run(client: ResourceSyncClient, destination: Destination, server: SourceServer, *,
              close: bool) -> tuple[ResourceSyncSource, Checkpoint]:
    """A rotating Source offering two lists, baselined, then ``first.txt`` created (in a list
    then closed if ``close``), and the incremental run that read it."""
    source = rotating(server, keep=2)
    start = baseline(client, destination, source)
    source.create("first.txt", b"in the first list\n")
    if close:
        source.close_changelist()
    source.publish()
    return source, incremental(client, destination, source, start)


def list_url(source: ResourceSyncSource, number: int) -> str:
    return source.server.url(f"{source.prefix}/changelist-{number}.xml")


def test_a_baseline_older_than_every_list_offered_fails_naming_it_and_touches_nothing(
        client: ResourceSyncClient, destination: Destination, server: SourceServer) -> None:
    source = rotating(server, keep=1)
    start = baseline(client, destination, source)
    before = held(destination)
    source.create("lost.txt", b"in a list rotated away\n")
    source.close_changelist()
    source.update("r01.txt", b"in another list rotated away\n")
    opened = source.close_changelist()
    source.delete("r02.txt")
    source.publish()
    server.reset_log()

    with pytest.raises(ChangeGapError) as raised:
        incremental(client, destination, source, start)

    message = str(raised.value)
    assert f"the checkpoint is a snapshot at {format_datetime(start.position.time)}" in message
    assert (f"still offers is in {list_url(source, 3)} , from {format_datetime(opened)}"
            in message)
    assert "run a baseline into the mirror (or give on_gap='baseline'" in message
    assert not raised.value.rerun_helps
    assert resource_gets(server) == [] and held(destination) == before
    assert saved_checkpoint(destination) == start.to_json()


def test_on_gap_baseline_baselines_instead_and_the_mirror_equals_the_source(
        client: ResourceSyncClient, destination: Destination, server: SourceServer) -> None:
    source = rotating(server, keep=1)
    start = baseline(client, destination, source)
    source.create("lost.txt", b"in a list rotated away\n")
    source.delete("r03.txt")
    source.close_changelist()
    source.update("r04.txt", b"in the list offered\n")
    source.publish()

    after = incremental(client, destination, source, start, on_gap="baseline")

    assert after.kind == "baseline" and after.document == source.resource_list_url
    assert in_step(client, destination, source)  # r03.txt, deleted in the gap, is gone too
    assert saved_checkpoint(destination) == after.to_json()
    source.update("r05.txt", b"after the new baseline\n")
    source.publish()
    assert incremental(client, destination, source, after).stats["changes"] == 1
    assert in_step(client, destination, source)


def test_a_list_not_read_to_its_end_then_rotated_away_is_a_gap(
        client: ResourceSyncClient, destination: Destination, server: SourceServer) -> None:
    source, first = first_run(client, destination, server, close=False)
    source.create("unseen.txt", b"added to that list after it was read\n")
    source.close_changelist()
    source.update("r05.txt", b"in the second list\n")
    source.close_changelist()
    source.publish()  # lists 2 and 3 offered; list 1, which the checkpoint is in, is gone

    with pytest.raises(ChangeGapError) as raised:
        incremental(client, destination, source, first)
    assert (f"stands 1 entries into {source.change_list_url}" in str(raised.value)
            and "a list no longer offered and not read to its end" in str(raised.value))
    assert f"is in {list_url(source, 2)} , from " in str(raised.value)


def test_a_closed_list_read_whole_then_rotated_away_is_no_gap(
        client: ResourceSyncClient, destination: Destination, server: SourceServer) -> None:
    source, first = first_run(client, destination, server, close=True)
    assert first.position.list_url == list_url(source, 1) and first.position.read_whole
    source.update("r06.txt", b"in the second list\n")
    source.close_changelist()
    source.create("third.txt", b"in the third list\n")
    source.publish()  # list 1 rotated away, read whole: lists 2 and 3 follow it
    server.reset_log()

    second = incremental(client, destination, source, first)

    assert sorted(resource_gets(server)) == [path_of(source.uri("r06.txt")),
                                             path_of(source.uri("third.txt"))]
    assert second.stats["changes"] == 2 and in_step(client, destination, source)


def test_an_open_list_read_whole_is_known_whole_once_a_run_sees_it_closed(
        client: ResourceSyncClient, destination: Destination, server: SourceServer) -> None:
    """A run that finds no new change in the checkpoint's list, now closed, keeps its window:
    its rotation later is no gap."""
    source, first = first_run(client, destination, server, close=False)
    assert first.position.at_end and not first.position.read_whole
    source.close_changelist()
    source.publish()
    second = incremental(client, destination, source, first)
    assert second.stats["changes"] == 0 and second.position.read_whole
    source.update("r07.txt", b"in the second list\n")
    source.close_changelist()
    source.publish()  # list 1 rotated away

    third = incremental(client, destination, source, second)
    assert third.stats["changes"] == 1 and in_step(client, destination, source)


def test_a_wrong_on_gap_is_refused(client: ResourceSyncClient, destination: Destination,
                                   server: SourceServer) -> None:
    source = rotating(server, keep=1)
    with pytest.raises(ConfigurationError, match="on_gap 'skip' is not one of fail, baseline"):
        incremental(client, destination, source, baseline(client, destination, source),
                    on_gap="skip")
