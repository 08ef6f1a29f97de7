"""Durations the operators take, checked when the DAG is parsed."""

from __future__ import annotations

from datetime import timedelta

from ..errors import ConfigurationError

__all__ = ["max_age"]


def max_age(value: object, name: str = "resource_list_max_age") -> timedelta | None:
    """``value``, a non-negative ``timedelta`` or None (no bound).

    :raises ConfigurationError: it is anything else (``name`` names the parameter).
    """
    if value is None or (isinstance(value, timedelta) and value >= timedelta(0)):
        return value
    raise ConfigurationError(f"{name}={value!r}: give a non-negative datetime.timedelta "
                             "(e.g. timedelta(days=1)), or None for no age bound")
