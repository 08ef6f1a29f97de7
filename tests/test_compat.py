"""compat.py: Airflow's names on the release running, and what a release lacks refused by name."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

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


class _Connection:
    """A connection as Airflow before 3.3 gives it: ``extra_dejson`` only, read in a thread."""

    def __init__(self) -> None:
        self.read_in: list[str] = []

    @property
    def extra_dejson(self) -> dict[str, Any]:
        self.read_in.append(threading.current_thread().name)
        return {"allow_private": True}


class _Connection33(_Connection):
    async def aextra_dejson(self) -> dict[str, Any]:
        return {"token": "t"}


def test_the_extra_is_read_off_the_event_loop_where_airflow_has_no_async_reader() -> None:
    connection = _Connection()
    assert asyncio.run(compat.aextra_dejson(connection)) == {"allow_private": True}
    assert connection.read_in != [threading.main_thread().name]  # not on the loop's thread


def test_the_extra_is_read_by_airflows_async_reader_where_it_has_one() -> None:
    connection = _Connection33()
    assert asyncio.run(compat.aextra_dejson(connection)) == {"token": "t"}
    assert connection.read_in == []


def test_in_thread_gives_the_result_and_the_error() -> None:
    assert asyncio.run(compat.in_thread(lambda: threading.current_thread().name)) != \
        threading.main_thread().name
    with pytest.raises(ZeroDivisionError):
        asyncio.run(compat.in_thread(lambda: 1 // 0))
