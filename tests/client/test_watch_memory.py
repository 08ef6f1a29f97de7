"""A poll that finds a large open Change List changed streams it, holding no list whole (issue
14): a sensor's poke (:func:`drive`) and a trigger's poll (:func:`adrive`) each raise a child
process's peak RSS far less than reading the same list whole does, and find the changes a
whole read finds. A poll of a long Change List Index holds none of it either (issue 29): the
benchmark ``benchmarks/watch_index.py``, run here at a smaller size."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.protocol.model import RS_NS, SITEMAP_NS
from airflow_provider_resourcesync.protocol.position import ChangePosition
from airflow_provider_resourcesync.testing import SourceServer

CHILD = Path(__file__).with_name("poll_child.py")
WATCH_INDEX = Path(__file__).parents[2] / "benchmarks" / "watch_index.py"
#: Entries of the large list; the position stands at its middle, so that it is read by time,
#: in two passes (its order checked, then its changes after the position).
COUNT = 100_000
MIDDLE = COUNT // 2
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def stamp(seconds: int) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def open_change_list(server: SourceServer, seconds: range) -> bytes:
    """An open Change List (12.1) from ``T0``: an update at each of ``seconds`` after it."""
    head = (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}" '
            f'xmlns:rs="{RS_NS}">\n<rs:ln rel="up" href="{server.url("/capabilitylist.xml")}"/>\n'
            f'<rs:md capability="changelist" from="{stamp(0)}"/>\n')
    base = server.url("/res/")
    entries = "".join(f'<url><loc>{base}{n:06d}.txt</loc><rs:md change="updated" '
                      f'datetime="{stamp(n)}"/></url>\n' for n in seconds)
    return (head + entries + "</urlset>\n").encode()


def poll(how: str, server: SourceServer, position: ChangePosition) -> dict[str, Any]:
    """One child of ``poll_child.py`` polling ``server``'s lists ``how``: its JSON line."""
    env = {**os.environ, "AIRFLOW_CONN_RESOURCESYNC_DEFAULT": json.dumps({
        "conn_type": "resourcesync", "host": server.url("/"), "extra": {"allow_private": True}})}
    done = subprocess.run(
        [sys.executable, str(CHILD), how, server.url("/small.xml"), server.url("/large.xml"),
         json.dumps(position.to_json())],
        capture_output=True, text=True, timeout=300, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture
def server() -> Iterator[SourceServer]:
    """A Source serving the large list and a small one (each child's first poll); it lives long
    enough for three children, each a while on a busy host."""
    with SourceServer(max_lifetime=900) as running:
        running.put("/small.xml", open_change_list(running, range(MIDDLE, MIDDLE + 3)),
                    "application/xml")
        running.put("/large.xml", open_change_list(running, range(COUNT)), "application/xml")
        yield running


def test_a_poll_of_a_large_open_change_list_holds_no_list_whole(server: SourceServer) -> None:
    position = ChangePosition.at(T0 + timedelta(seconds=MIDDLE))
    whole = poll("whole", server, position)
    assert whole["result"] == {"entries": COUNT}
    expected = {
        "status": "success", "count": COUNT - MIDDLE, "first_time": stamp(MIDDLE),
        "last_time": stamp(COUNT - 1), "list_urls": [server.url("/large.xml")],
        "samples": [[server.url(f"/res/{n:06d}.txt"), "updated"]
                    for n in range(MIDDLE, MIDDLE + 10)]}
    for how in ("sync", "trigger"):
        polled = poll(how, server, position)
        assert polled["result"] == expected, how
        assert polled["growth"] < whole["growth"] / 3, (how, polled["growth"], whole["growth"])



def test_a_poll_of_a_long_change_list_index_is_flat_in_its_size() -> None:
    """Issue 29: an index of 1.5 M lists held whole took 428 MiB a poll. Each watch (a sensor's
    poke, a Change List trigger's poll, the event trigger's marks) polls an index of 20,000 and
    of 80,000 closed lists in a child process, served as it is made: each grows its peak RSS
    less than 100 MiB, and by less than 4 MiB from the smaller index to the larger (held whole,
    as before, 60,000 more lists took 10.5 MiB). ``make bench-watch`` runs it at 1.5 M (232 MiB
    of index: 0 to 1.3 MiB, where holding it took 366 to 379 MiB)."""
    done = subprocess.run([sys.executable, str(WATCH_INDEX), "--entries", "80000"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = json.loads(done.stdout.splitlines()[-1])["runs"]
    for watch in ("sensor", "trigger", "event"):
        small, large = (runs[size][watch]["growth_mb"] for size in ("20000", "80000"))
        assert large < 100 and large - small < 4, (watch, small, large)
