"""Memory benchmark of a watch of a long Change List Index (issue 29): a Source's index of N
closed lists and an open one, served over loopback as it is made (never held, here either),
polled once by each watch in a fresh interpreter.

Three watches, each the code a deployment runs: ``sensor`` (a sensor's poke: :func:`drive` of
``new_changes`` and of ``change_list_status``, over the sync client), ``trigger`` (the Change
List triggers: :func:`adrive` of ``new_changes``, over the async client) and ``event`` (the event
trigger: ``ChangeListMarks.poll``). Each is measured after a poll of a small index (what any
poll loads once), as the peak RSS growth over the RSS then, with the watch cap
(``WATCH_MAX_DOCUMENT_BYTES``) as the client's document cap.

Bars, at two sizes (``--entries``, default 1,500,000, and a quarter of it): every watch grows
less than 100 MiB at the larger size, and less than 8 MiB more at the larger size than at the
smaller (memory flat in the index's size). On the project's 2-core machine, at 1.5 M lists
(232 MiB of index): 0.0 to 1.3 MiB, a poll taking 20 s (trigger) to 40 s (sensor, two plans);
the code before issue 29 held the index whole: 366 to 379 MiB, and 81 to 95 MiB at a quarter.
The suite runs it at 80,000 entries (``tests/client/test_watch_memory.py``).

Run: ``make bench-watch`` or ``uv run python benchmarks/watch_index.py [--entries N]``; the last
line is the results as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

GROWTH_BAR_MB = 100.0
FLAT_BAR_MB = 8.0
WATCHES = ("sensor", "trigger", "event")
T0 = datetime(2020, 1, 1, tzinfo=UTC)
#: Entries of the index polled first, in each interpreter.
SMALL = 10
#: Entries per chunk of the index's body.
CHUNK = 5_000


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def index_body(base: str, count: int) -> Callable[[], Iterator[bytes]]:
    """The body of an index of ``count`` closed lists, a minute each from :data:`T0`, then the
    open list ``/open.xml``, made chunk by chunk."""
    from airflow_provider_resourcesync.protocol.model import RS_NS, SITEMAP_NS

    def chunks() -> Iterator[bytes]:
        yield (f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{SITEMAP_NS}" '
               f'xmlns:rs="{RS_NS}">\n<rs:md capability="changelist" from="{_stamp(T0)}"/>\n'
               ).encode()
        for start in range(0, count, CHUNK):
            yield "".join(
                f'<sitemap><loc>{base}/cl/{n}.xml</loc><rs:md capability="changelist" '
                f'from="{_stamp(T0 + timedelta(minutes=n))}" '
                f'until="{_stamp(T0 + timedelta(minutes=n + 1))}"/></sitemap>\n'
                for n in range(start, min(start + CHUNK, count))).encode()
        yield (f'<sitemap><loc>{base}/open.xml</loc><rs:md capability="changelist" '
               f'from="{_stamp(_open_from(count))}"/></sitemap>\n</sitemapindex>\n').encode()
    return chunks


def _open_from(count: int) -> datetime:
    return T0 + timedelta(minutes=count)


def open_list(base: str, count: int) -> bytes:
    """The open list after ``count`` closed ones: three changes, a second apart."""
    from airflow_provider_resourcesync.protocol.model import RS_NS, SITEMAP_NS

    since = _open_from(count)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}" '
            f'xmlns:rs="{RS_NS}">\n<rs:md capability="changelist" from="{_stamp(since)}"/>\n'
            + "".join(f'<url><loc>{base}/res/{n}</loc><rs:md change="updated" datetime="'
                      f'{_stamp(since + timedelta(seconds=n + 1))}"/></url>\n' for n in range(3))
            + "</urlset>\n").encode()


def status(field: str) -> int:
    """A ``VmRSS``/``VmHWM`` line of ``/proc/self/status``, in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise LookupError(field)


def reset_peak() -> int:
    """Start the peak RSS again from the RSS now (``clear_refs`` 5); that RSS, in KiB: the peak
    of the imports and of a first poll is not a poll's."""
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")
    return status("VmRSS")


def _poll(watch: str, url: str, position: Any) -> Any:
    """One poll of the index at ``url`` by ``watch``: what it found."""
    from airflow_provider_resourcesync.client.async_client import AsyncResourceSyncClient
    from airflow_provider_resourcesync.client.policy import ClientPolicy
    from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
    from airflow_provider_resourcesync.client.watch import (
        adrive,
        change_list_status,
        drive,
        new_changes,
    )
    from airflow_provider_resourcesync.hooks.resourcesync import WATCH_MAX_DOCUMENT_BYTES
    from airflow_provider_resourcesync.triggers.marks import ChangeListMarks

    policy = ClientPolicy(allow_private=True, max_document_bytes=WATCH_MAX_DOCUMENT_BYTES)
    if watch == "sensor":
        with ResourceSyncClient(policy, source_urls=[url]) as client:
            found = drive(client, new_changes(url, position))
            current = drive(client, change_list_status(url, position))
            return [found.count, current.list_url]

    async def polled() -> Any:
        async with AsyncResourceSyncClient(policy, source_urls=[url]) as client:
            if watch == "trigger":
                return (await adrive(client, new_changes(url, position))).result.count
            marks = ChangeListMarks(url)
            await marks.poll(client)
            return sorted((marks.to_json() or {})["marks"])
    return asyncio.run(polled())


def child(small_url: str, url: str, count: int) -> None:
    """Each watch polls the small index, then the one at ``url``: a JSON line of each one's
    growth (MiB), seconds and result."""
    from airflow_provider_resourcesync.protocol.position import ChangePosition

    def position(size: int) -> ChangePosition:  # past every closed list, in the open one
        return ChangePosition.at(_open_from(size) + timedelta(milliseconds=500))

    results = {}
    for watch in WATCHES:
        _poll(watch, small_url, position(SMALL))
        before = reset_peak()
        started = time.perf_counter()
        found = _poll(watch, url, position(count))
        results[watch] = {"growth_mb": (status("VmHWM") - before) / 1024,
                          "seconds": time.perf_counter() - started, "result": found}
    print(json.dumps(results))


def measure(count: int) -> dict[str, dict[str, Any]]:
    """The watches' polls of an index of ``count`` closed lists, in a fresh interpreter."""
    from airflow_provider_resourcesync.testing import SourceServer

    with SourceServer(max_lifetime=3600) as server:
        for size, path in ((SMALL, "/small"), (count, "/large")):
            base = server.url(path)
            server.stream(f"{path}/index.xml", index_body(base, size), "application/xml")
            server.put(f"{path}/open.xml", open_list(base, size), "application/xml")
        done = subprocess.run(
            [sys.executable, __file__, "--child", server.url("/small/index.xml"),
             server.url("/large/index.xml"), str(count)],
            capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the child failed:\n{done.stderr[-3000:]}")
    results: dict[str, dict[str, Any]] = json.loads(done.stdout.splitlines()[-1])
    large = server.url("/large")
    expected = {"sensor": [3, f"{large}/open.xml"], "trigger": 3,
                "event": [f"{large}/index.xml", f"{large}/open.xml"]}
    for watch, found in results.items():
        if found["result"] != expected[watch]:
            raise RuntimeError(f"{watch} found {found['result']}, not {expected[watch]}")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_500_000, help="the larger size")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        small_url, url, count = args.child
        child(small_url, url, int(count))
        return 0
    sizes = (args.entries // 4, args.entries)
    runs = {count: measure(count) for count in sizes}
    ok = True
    for watch in WATCHES:
        for count in sizes:
            run = runs[count][watch]
            print(f"{watch:<8} {count:>9,} lists: {run['growth_mb']:6.1f} MiB, "
                  f"{run['seconds']:6.1f} s ({count / run['seconds']:,.0f} lists/s)")
        small, large = (runs[count][watch]["growth_mb"] for count in sizes)
        met = large < GROWTH_BAR_MB and large - small < FLAT_BAR_MB
        ok &= met
        print(f"{watch:<8} {large:.1f} MiB (bar {GROWTH_BAR_MB:.0f}), {large - small:+.1f} MiB "
              f"from a quarter of the lists (bar {FLAT_BAR_MB:.0f}): "
              f"{'met' if met else 'NOT met'}")
    print("bars met" if ok else "bars NOT met")
    print(json.dumps({"bars_met": ok, "runs": {str(count): run for count, run in runs.items()}}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
