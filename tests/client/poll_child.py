"""Run in a child process by ``test_watch_memory``: one poll of a Change List, then a JSON line
with the poll's result and how far it raised the process's peak RSS above its RSS before (KiB).

``python poll_child.py HOW SMALL_URL URL POSITION_JSON``, where HOW is ``sync`` (:func:`drive`,
as a sensor's poke), ``trigger`` (the trigger's first event, over ``resourcesync_default``), or
``whole`` (the list read whole with ``read_document``: what holding it costs). A poll of the
small list at SMALL_URL comes first, so that what any poll loads once is not counted, and the
peak is reset after it (the imports' own peak may be higher than the poll's).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.client.watch import drive, new_changes
from airflow_provider_resourcesync.protocol.position import ChangePosition
from airflow_provider_resourcesync.triggers.changelist import ResourceSyncChangeListTrigger

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))  # the benchmarks' measure
from watch_index import reset_peak, status


def poll(how: str, url: str, position: ChangePosition) -> Any:
    if how == "trigger":
        trigger = ResourceSyncChangeListTrigger(change_list_url=url, position=position,
                                                poll_interval=0.05, max_poll_interval=0.1)
        event = asyncio.run(asyncio.wait_for(anext(trigger.run()), timeout=300))
        return event.payload
    with ResourceSyncClient(ClientPolicy(allow_private=True), source_urls=[url]) as client:
        if how == "sync":
            return {"status": "success", **drive(client, new_changes(url, position)).to_json()}
        return {"entries": len(client.read_document(url).entries)}


def main() -> None:
    how, small_url, url = sys.argv[1:4]
    position = ChangePosition.from_json(json.loads(sys.argv[4]))
    poll(how, small_url, position)
    before = reset_peak()
    result = poll(how, url, position)
    print(json.dumps({"growth": status("VmHWM") - before, "result": result}))


if __name__ == "__main__":
    main()
