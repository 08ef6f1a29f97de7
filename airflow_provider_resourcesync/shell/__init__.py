"""What the operators, sensors and triggers share: the Capability List a task works from, the
Asset a destination is, the mirror's Source Description where Destinations discover it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ..compat import Asset, Context
from ..errors import ConfigurationError
from ..hooks.destination import destination_asset_uri
from ..hooks.resourcesync import ResourceSyncHook
from ..storage.base import Destination
from ..sync.log import Log
from ..writer import DESCRIPTION, DOCUMENTS_MAX_AGE, WELL_KNOWN, publish_well_known

__all__ = [
    "capability_list_of",
    "describe_at_well_known",
    "describe_outlet_events",
    "destination_outlets",
]


def destination_outlets(destination: Any) -> list[Asset]:
    """The Asset of a destination known when the DAG is parsed; none for a templated one (its
    URL is only known when the task runs: declare ``outlets`` yourself)."""
    if isinstance(destination, str) and "{{" not in destination:
        return [Asset(destination_asset_uri(destination))]
    return []


def capability_list_of(hook: ResourceSyncHook, url: str | None, log: Log) -> str:
    """``url`` if given; else the first Capability List discovered from the connection's base
    URL (spec 6.3), logged with the others found.

    :raises ConfigurationError: discovery found no Capability List.
    """
    if url:
        return url
    found = hook.discover()
    if not found.capability_lists:
        raise ConfigurationError(
            f"no Capability List found from {hook.base_url} (route {found.route}): set "
            "capability_list_url, or point the connection's base URL at the Source")
    chosen = found.capability_lists[0].url
    others = [info.url for info in found.capability_lists[1:]]
    log.info("Using the Capability List %s , discovered from %s by %s%s", chosen, hook.base_url,
             found.route, f" (also found: {', '.join(others)})" if others else "")
    return chosen


def describe_at_well_known(destination: Destination, log: Log, *,
                           description: str = DESCRIPTION,
                           max_age: timedelta = DOCUMENTS_MAX_AGE) -> None:
    """Copy the mirror's Source Description (a publication's: at ``description``) to
    ``.well-known/resourcesync`` (after the run that saved it), for caches to keep ``max_age``,
    logged.

    :raises ConfigurationError: a resource of the mirror is stored there.
    """
    if publish_well_known(destination, description=description, max_age=max_age):
        log.info("Wrote the Source Description at %s , for Destinations that discover it "
                 "(spec 6.3.2)", destination.object_url(WELL_KNOWN))


def describe_outlet_events(context: Context, outlets: list[Any], checkpoint: dict[str, Any], *,
                           names: tuple[str, ...] = ("kind", "at", "position", "stats")
                           ) -> dict[str, Any]:
    """Put what the run did on its Asset events, for downstream DAGs: the checkpoint's
    ``names`` (a mirror's kind, ``at``, position and counts; not the whole checkpoint: it is the
    task's XCom). Returns ``checkpoint``."""
    events = context.get("outlet_events")  # none where execute() is called by hand
    extra = {name: checkpoint.get(name) for name in names}
    if events is not None:
        for asset in outlets:
            if isinstance(asset, Asset):
                events[asset].extra.update(extra)
    return checkpoint
