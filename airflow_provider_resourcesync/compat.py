"""Every Airflow name the package uses, imported here only: Airflow 3.3 keeps them in
``airflow.sdk``; older releases (3.0 and 3.1 for ``BaseHook`` and ``conf``, 2.11 for all of them)
elsewhere, which ``apache-airflow-providers-common-compat`` knows. What a release lacks fails
with the release it needs (:func:`require`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow import __version__ as _running
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
    "conf",
    "require",
]

#: The Airflow release running (its pre-release or local parts dropped).
AIRFLOW_VERSION = Version(Version(_running).base_version)

#: Airflow 3 or later (the Task SDK, Assets, event-driven scheduling); else Airflow 2.
AIRFLOW_3 = Version("3.0") <= AIRFLOW_VERSION

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
