"""Checkpoints round-trip through JSON; shards partition stably; sharded checkpoints combine."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_resourcesync.errors import ConfigurationError
from airflow_provider_resourcesync.protocol.position import ChangePosition
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint, combine
from airflow_provider_resourcesync.sync.shard import Shard

AT = datetime(2026, 1, 1, 9, tzinfo=UTC)


def checkpoint(shard: Shard | None = None, **stats: int) -> Checkpoint:
    return Checkpoint("baseline", "http://s/cap.xml", "http://s/rl.xml", "file:///m", AT,
                      ChangePosition.at(AT), shard, stats)


def test_a_checkpoint_survives_json() -> None:
    original = checkpoint(Shard(1, 3), fetched=5, bytes=100)
    assert Checkpoint.from_json(json.loads(json.dumps(original.to_json()))) == original
    assert original.to_json()["version"] == 1


@pytest.mark.parametrize("data", [None, {}, {"version": 2}, {"version": 1, "kind": "baseline"},
                                  {**checkpoint().to_json(), "at": "yesterday"}])
def test_anything_else_is_refused_clearly(data: object) -> None:
    with pytest.raises(ConfigurationError, match="checkpoint"):
        Checkpoint.from_json(data)  # type: ignore[arg-type]


@given(st.lists(st.text(min_size=1), min_size=1, max_size=50, unique=True),
       st.integers(1, 8))
def test_every_resource_is_in_exactly_one_shard(uris: list[str], count: int) -> None:
    for uri in uris:
        assert sum(Shard(index, count).holds(uri) for index in range(count)) == 1


def test_shards_combine_into_one_checkpoint() -> None:
    combined = combine([checkpoint(Shard(i, 3), fetched=i + 1, bytes=10) for i in (2, 0, 1)])
    assert combined.shard is None
    assert combined.stats == {"fetched": 6, "bytes": 30}
    assert combined.at == AT


def test_incomplete_or_mixed_shards_do_not_combine() -> None:
    with pytest.raises(ConfigurationError, match="shards \\[0, 2\\]"):
        combine([checkpoint(Shard(0, 3)), checkpoint(Shard(2, 3))])
    other = Checkpoint("baseline", "http://s/cap.xml", "http://s/other.xml", "file:///m", AT,
                       ChangePosition.at(AT), Shard(1, 2))
    with pytest.raises(ConfigurationError, match="not the 2 shards of one baseline"):
        combine([checkpoint(Shard(0, 2)), other])
    with pytest.raises(ConfigurationError, match="does not exist"):
        Shard(3, 3)
