"""An event trigger for Airflow's event-driven scheduling: a DAG run when a Source's Change List
(12.1) or Change List Index (12.2) changes.

Used in an ``AssetWatcher`` of an Asset a DAG is scheduled on::

    Asset("resourcesync-source", watchers=[AssetWatcher(
        name="source_changes", trigger=ResourceSyncChangeEventTrigger())])

The event is a wake-up, not a description of the changes: the incremental run it starts reads
from its own checkpoint, so a missed or a duplicate event costs nothing but a delay or a run that
finds nothing new.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..client.navigate import capability_documents, choose_capability
from ..compat import BaseEventTrigger, TriggerEvent, in_thread, require
from ..errors import ResourceSyncError
from ..hooks.resourcesync import ResourceSyncHook
from ..protocol.model import Capability
from ..shell import capability_list_of
from .changelist import check_intervals
from .marks import ChangeListMarks

if TYPE_CHECKING:  # Airflow 3.3's (AIP-103); before it, triggers have no Asset state store
    from ..compat import AssetStateStoreAccessors

__all__ = ["MAX_NAMED", "STATE_KEY", "ResourceSyncChangeEventTrigger"]

#: How many changed documents an event names.
MAX_NAMED = 10
#: The key under which a watch keeps what it saw in its Asset's state store, followed by a
#: digest of the trigger's identity.
STATE_KEY = "resourcesync-change-watch"


class ResourceSyncChangeEventTrigger(BaseEventTrigger):
    """Fire each time the Source's Change List, or its index and the lists in it still open,
    says something else than at the poll before (a new entry, a new list, a list closed).

    What a poll saw (a digest per document, not the documents) is kept in the state store of the
    Asset watched (Airflow's asset state store, which the triggerer gives a watcher of one
    Asset), under :data:`STATE_KEY` and a digest of the trigger's identity. A watch started
    again (a triggerer restarted, the trigger moved to another triggerer) compares its first
    poll with it: a change made while no triggerer watched fires then. The first poll ever only
    records what the documents say. Without a store (the trigger run outside a triggerer, or
    watching several Assets at once) what it saw is kept in memory only, as is logged.

    Its arguments are its whole identity, the same at every parse of the DAG (Airflow matches
    watchers by their serialized triggers): nothing it sees is serialized.

    Each poll is bounded by the connection's ``request_timeout`` and a whole ``retry_budget``;
    a poll that fails is logged and the watch goes on, reading the connection again, so a Source
    that is down for a while ends nothing. An unchanged Change List costs one request answered
    304 per poll (one per open list more, in an index).

    The event's payload: ``change_list_url`` (the document watched) and ``changed`` (up to
    :data:`MAX_NAMED` documents whose content changed).

    :param change_list_url: the Change List or Change List Index to watch; None: the one the
        Capability List discovered from the connection's base URL points at.
    :param resourcesync_conn_id: the ``resourcesync`` connection to the Source.
    :param poll_interval: seconds between polls.
    """

    def __init__(self, *, change_list_url: str | None = None,
                 resourcesync_conn_id: str = "resourcesync_default",
                 poll_interval: float = 60.0) -> None:
        require("ResourceSyncChangeEventTrigger (an AssetWatcher's trigger)", "3.0")
        # BaseTrigger.__init__ is unannotated, and pyproject's untyped_calls_exclude misses a
        # call through super() (mypy issue 16653)
        super().__init__()  # type: ignore[no-untyped-call]
        check_intervals(poll_interval, poll_interval)
        self.change_list_url = change_list_url
        self.resourcesync_conn_id = resourcesync_conn_id
        self.poll_interval = float(poll_interval)  # 60 and 60.0: one identity
        self._store: AssetStateStoreAccessors | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{type(self).__module__}.{type(self).__qualname__}", {
            "change_list_url": self.change_list_url,
            "resourcesync_conn_id": self.resourcesync_conn_id,
            "poll_interval": self.poll_interval,
        }

    async def run(self) -> AsyncIterator[TriggerEvent]:
        hook = ResourceSyncHook(resourcesync_conn_id=self.resourcesync_conn_id, watch=True)
        marks: ChangeListMarks | None = None
        unkept = False  # what the last poll saw is not in the store yet
        while True:
            try:
                async with await hook.get_async_client() as client:
                    url = self.change_list_url
                    if not url:  # not ``or await``: mypy types that as str | None
                        url = await in_thread(self._discover)
                    if marks is None or marks.url != url:
                        marks = await self._restore(url)
                    while True:
                        client.budget.restart()  # a watch lasts for ever: each poll has its own
                        changed = await marks.poll(client)
                        if changed:
                            self.log.info("The watch of %s saw %d document(s) change since "
                                          "the last poll: %s", url, len(changed),
                                          " ".join(changed))
                            yield TriggerEvent({"change_list_url": url,
                                                "changed": changed[:MAX_NAMED]})
                        if changed is None or changed or unkept:  # kept once the event is
                            unkept = not await self._keep(marks)  # out: a restart fires it again
                        await asyncio.sleep(self.poll_interval)
            except ResourceSyncError as error:
                self.log.error(
                    "Polling again in %.2f s%s: the poll of %s failed. %s", self.poll_interval,
                    "" if error.rerun_helps else
                    ", which will fail alike until what is named below is changed",
                    self.change_list_url or f"the Change List of {self.resourcesync_conn_id}",
                    error)
            await asyncio.sleep(self.poll_interval)

    @property
    def state_key(self) -> str:
        """Where in its Asset's state store the watch keeps what it saw: :data:`STATE_KEY` and a
        digest of its identity (the same in every process, as ``hash`` is not)."""
        identity = json.dumps(self.serialize(), sort_keys=True).encode()
        return f"{STATE_KEY}:{hashlib.sha256(identity).hexdigest()}"

    async def _restore(self, url: str) -> ChangeListMarks:
        """The marks kept for ``url`` before the watch was started again, else none; the store
        is used from then on only where it could be read."""
        marks = ChangeListMarks(url)
        self._store = getattr(self, "asset_state_store", None)  # none before Airflow 3.3
        if self._store is None:
            self._not_kept(None)
        else:
            try:
                marks = ChangeListMarks.from_json(url, await self._store.aget(self.state_key))
            except Exception as error:  # whatever the store says, the watch goes on
                self._store = None
                self._not_kept(error)
        self.log.info("Watching the Change List %s every %.2f s, %s", url, self.poll_interval,
                      "from what the watch saw before it was started again"
                      if marks.to_json() is not None else
                      "its first poll recording what it says")
        return marks

    async def _keep(self, marks: ChangeListMarks) -> bool:
        """Keep what the last poll saw in the Asset's state store, where there is one; False
        where the store failed."""
        saved = marks.to_json()
        if self._store is None or saved is None:
            return True
        try:
            await self._store.aset(self.state_key, saved)
        except Exception as error:  # whatever the store says, the watch goes on
            self.log.warning("What the watch of %s saw could not be kept in the Asset state "
                             "store (tried again after the next poll): %s", marks.url, error)
            return False
        return True

    def _not_kept(self, error: Exception | None) -> None:
        self.log.warning(
            "What the watch of %s sees is kept in memory only: a change made while it is not "
            "running will wake nothing. %s", self.change_list_url or
            f"the Change List of {self.resourcesync_conn_id}",
            "No Asset state store (run outside a triggerer, or on Airflow before 3.3?)"
            if error is None else
            f"The Asset state store failed: {error}")

    def _discover(self) -> str:
        """The Change List the Capability List discovered from the connection points at (9)."""
        hook = ResourceSyncHook(resourcesync_conn_id=self.resourcesync_conn_id, watch=True)
        try:
            capability_list = capability_list_of(hook, None, self.log)
            capabilities = capability_documents(hook.get_conn(), capability_list)
            return capabilities[choose_capability(Capability.CHANGE_LIST, (), capabilities,
                                                  capability_list, "to watch")]
        finally:
            hook.close()
