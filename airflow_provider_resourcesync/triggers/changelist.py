"""Triggers that poll a Change List (12.1) or a Change List Index (12.2) from the triggerer.

One async client serves a trigger's whole life, so an unchanged document costs one request
answered 304. The wait between polls grows while nothing changes and starts again from
``poll_interval`` once a document changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar

from ..client.watch import Plan, Sighting, adrive, change_list_status, new_changes
from ..compat import BaseTrigger, TriggerEvent
from ..errors import ConfigurationError, ResourceSyncError
from ..hooks.resourcesync import ResourceSyncHook
from ..protocol.position import ChangePosition
from ..shell.next_step import next_step

__all__ = ["BACKOFF", "ResourceSyncChangeListTrigger", "ResourceSyncClosedChangeListTrigger",
           "check_intervals"]

#: The factor by which the wait grows after each poll where nothing changed.
BACKOFF = 1.5


def check_intervals(poll_interval: float, max_poll_interval: float) -> None:
    """:raises ConfigurationError: ``poll_interval`` is not positive, or above
    ``max_poll_interval``."""
    if not poll_interval > 0:
        raise ConfigurationError(
            f"poll_interval {poll_interval!r}: must be a positive number of seconds")
    if max_poll_interval < poll_interval:
        raise ConfigurationError(f"max_poll_interval {max_poll_interval!r}: must not be less "
                                 f"than poll_interval {poll_interval!r}")


class _ChangeListWatchTrigger(BaseTrigger):
    """Poll a Change List (or its index) until the class's :attr:`plan` sees what it waits for.

    :param change_list_url: the Change List, or the Change List Index.
    :param position: where the mirror stands (a :class:`ChangePosition` or its ``to_json()``).
    :param resourcesync_conn_id: the ``resourcesync`` connection to the Source.
    :param poll_interval: seconds between polls, after a document changed.
    :param max_poll_interval: the longest wait, reached while nothing changes.
    """

    #: What the trigger waits for, for logs.
    waiting_for: ClassVar[str]
    #: The plan run at each poll: ``plan(change_list_url, position)`` (a subclass's static
    #: method: a ``ClassVar`` of a callable would be bound as a method).
    plan: Callable[[str, ChangePosition], Plan[Sighting]]

    def __init__(self, *, change_list_url: str, position: ChangePosition | dict[str, Any],
                 resourcesync_conn_id: str = "resourcesync_default",
                 poll_interval: float = 60.0, max_poll_interval: float = 900.0) -> None:
        # BaseTrigger.__init__ is unannotated, and pyproject's untyped_calls_exclude misses a
        # call through super() (mypy issue 16653)
        super().__init__()  # type: ignore[no-untyped-call]
        check_intervals(poll_interval, max_poll_interval)
        self.change_list_url = change_list_url
        self.position = (position if isinstance(position, ChangePosition)
                         else ChangePosition.from_json(position))
        self.resourcesync_conn_id = resourcesync_conn_id
        self.poll_interval = poll_interval
        self.max_poll_interval = max_poll_interval

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{type(self).__module__}.{type(self).__qualname__}", {
            "change_list_url": self.change_list_url,
            "position": self.position.to_json(),
            "resourcesync_conn_id": self.resourcesync_conn_id,
            "poll_interval": self.poll_interval,
            "max_poll_interval": self.max_poll_interval,
        }

    async def run(self) -> AsyncIterator[TriggerEvent]:
        hook = ResourceSyncHook(resourcesync_conn_id=self.resourcesync_conn_id, watch=True)
        wait = self.poll_interval
        try:
            async with await hook.get_async_client() as client:
                while True:
                    client.budget.restart()  # a watch may last days: each poll has its own
                    polled = await adrive(client, self.plan(self.change_list_url, self.position))
                    if polled.result.is_done:
                        break
                    wait = (self.poll_interval if polled.changed
                            else min(wait * BACKOFF, self.max_poll_interval))
                    self.log.info("Waiting for %s in %s (%s); polling again in %.2f s",
                                  self.waiting_for, self.change_list_url,
                                  "changed" if polled.changed else "unchanged", wait)
                    await asyncio.sleep(wait)
        except ResourceSyncError as error:
            self.log.error("Watching %s failed: %s", self.change_list_url, error)
            yield TriggerEvent({"status": "error", "message": str(error),
                                "error": type(error).__name__, "next": next_step(error)})
            return
        self.log.info("Saw %s in %s : %s", self.waiting_for, self.change_list_url,
                      polled.result.to_json())
        yield TriggerEvent({"status": "success", **polled.result.to_json()})


class ResourceSyncChangeListTrigger(_ChangeListWatchTrigger):
    """Fire once a Change List, or a list of a Change List Index, has changes after a position
    (12.1, 12.2). The event carries ``status`` and
    :meth:`~..client.watch.NewChanges.to_json`, or ``status: "error"``, ``message`` and
    ``error`` (the error's class name: ``ChangeGapError`` for changes no longer offered)."""

    waiting_for = "changes after the position"
    plan = staticmethod(new_changes)


class ResourceSyncClosedChangeListTrigger(_ChangeListWatchTrigger):
    """Fire once the Change List a position is in is closed: it has ``until`` (12.1), or the
    index lists a newer list after it (12.2). The event carries ``status`` and
    :meth:`~..client.watch.ChangeListStatus.to_json`, or ``status: "error"``, ``message`` and
    ``error`` (the error's class name)."""

    waiting_for = "the Change List of the position to close"
    plan = staticmethod(change_list_status)
