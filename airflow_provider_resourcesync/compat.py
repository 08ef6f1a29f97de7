"""Every Airflow name the package uses, imported here only: Airflow 3.3 keeps them in
``airflow.sdk``; older releases (3.0 for ``BaseHook``, 3.0 and 3.1 for ``conf``, 2.11 for all of
them) elsewhere, which ``apache-airflow-providers-common-compat`` knows. What a release lacks fails
with the release it needs (:func:`require`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from airflow import __version__ as _running
from airflow.providers.common.compat.connection import get_async_connection
from airflow.providers.common.compat.sdk import (
    Asset,
    BaseHook,
    BaseOperator,
    BaseSensorOperator,
    Context,
    PokeReturnValue,
    conf,
)
from airflow.triggers.base import BaseTrigger, TriggerEvent
from asgiref.sync import sync_to_async
from packaging.version import Version

from .errors import ConfigurationError

__all__ = [
    "AIRFLOW_3",
    "AIRFLOW_VERSION",
    "Asset",
    "BaseEventTrigger",
    "BaseHook",
    "BaseOperator",
    "BaseSensorOperator",
    "BaseTrigger",
    "Context",
    "PokeReturnValue",
    "TriggerEvent",
    "aextra_dejson",
    "conf",
    "get_async_connection",
    "in_thread",
    "require",
]

#: The Airflow release running (its pre-release or local parts dropped).
AIRFLOW_VERSION = Version(Version(_running).base_version)

#: Airflow 3 or later (the Task SDK, Assets, event-driven scheduling); else Airflow 2.
AIRFLOW_3 = Version("3.0") <= AIRFLOW_VERSION

_T = TypeVar("_T")

if TYPE_CHECKING:  # Airflow 3.3's (AIP-103): for the type checker only, looked up as an attribute
    from airflow.sdk.execution_time.context import (
        AssetStateStoreAccessors as AssetStateStoreAccessors,
    )

if TYPE_CHECKING or AIRFLOW_3:
    from airflow.triggers.base import BaseEventTrigger
else:  # Airflow 2: no event-driven scheduling; the event trigger refuses to be made (require)
    BaseEventTrigger = BaseTrigger


def require(feature: str, release: str) -> None:
    """Fail unless the Airflow running is ``release`` or later, naming ``feature`` and both
    releases.

    :raises ConfigurationError: an older Airflow.
    """
    if Version(release) > AIRFLOW_VERSION:
        raise ConfigurationError(f"{feature} needs Airflow {release} or later; this is Airflow "
                                 f"{_running}")


async def in_thread(function: Callable[[], _T]) -> _T:
    """``function()`` in a thread, for a trigger: what it asks Airflow's supervisor (a
    connection, a secret to mask) is asked on the triggerer's event loop (asgiref's threads);
    from a thread of asyncio's own, a triggerer of Airflow 3.0 gets the answers out of order and
    exits."""
    return await sync_to_async(function, thread_sensitive=False)()


async def aextra_dejson(connection: Any) -> dict[str, Any]:
    """The connection's extra as a dict, read without blocking the event loop: its
    ``aextra_dejson`` (Airflow 3.3); before, ``extra_dejson`` (which masks the secrets in it by
    a blocking call to the supervisor) :func:`in_thread`."""
    if hasattr(connection, "aextra_dejson"):
        return dict(await connection.aextra_dejson())
    return dict(await in_thread(lambda: connection.extra_dejson))
