"""compat.py: Airflow's names on the release running, and what a release lacks refused by name."""

from __future__ import annotations

import airflow
import pytest
from packaging.version import Version

from airflow_provider_resourcesync import compat
from airflow_provider_resourcesync.errors import ConfigurationError


def test_the_release_running_is_known() -> None:
    assert Version(Version(airflow.__version__).base_version) == compat.AIRFLOW_VERSION
    assert (compat.AIRFLOW_VERSION.major >= 3) == compat.AIRFLOW_3


def test_a_feature_of_this_release_is_allowed() -> None:
    compat.require("anything", str(compat.AIRFLOW_VERSION))


def test_a_feature_of_a_later_release_fails_naming_both_releases() -> None:
    with pytest.raises(ConfigurationError) as failed:
        compat.require("Teleportation", "99.1")
    assert str(failed.value) == (f"Teleportation needs Airflow 99.1 or later; this is Airflow "
                                 f"{airflow.__version__}")


def test_the_event_trigger_is_made_where_airflow_has_event_driven_scheduling() -> None:
    """Airflow 3: made; Airflow 2 (no AssetWatcher): refused, naming 3.0."""
    from airflow_provider_resourcesync.triggers.event import ResourceSyncChangeEventTrigger

    if compat.AIRFLOW_3:
        assert ResourceSyncChangeEventTrigger(poll_interval=5).poll_interval == 5.0
    else:
        with pytest.raises(ConfigurationError, match=r"AssetWatcher.* needs Airflow 3\.0"):
            ResourceSyncChangeEventTrigger(poll_interval=5)
