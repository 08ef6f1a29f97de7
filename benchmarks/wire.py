"""Wire benchmark: the client CPU each HTTP/1.1 wire under httpx spends per small request, and
the rate at which it reads a large body, in one run.

The Source runs in a process of its own, so only the client's CPU (user and system, this process)
is counted. Contestants alternate over several rounds and each keeps its best, as in
``baseline.py``: a shared VM's speed drifts within a minute.

(a) 3,000 sequential GETs of a 4 KB resource over one kept-alive connection: CPU per request.
(b) GETs of a 50 MB resource, the body read as the wire hands it: MB/s (wall) and CPU per MB.
(c) The parsers alone on a canned 4 KB response, no socket: h11 and, where installed, httptools
    (llhttp): CPU per response.

Run: ``uv run python benchmarks/wire.py [--rounds N]``. ``docs/design.md`` ("The wire") holds the
numbers behind the choice of h11.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import h11
import httpx

from airflow_provider_resourcesync.client.transport import SocketTransport

SMALL = 4096
LARGE = 50 * 1024 * 1024
REQUESTS = 3_000
LARGE_GETS = 4

#: The wires measured: a name and how to make one.
Wires = dict[str, Callable[[], httpx.BaseTransport]]
WIRES: Wires = {
    "ours (h11)": SocketTransport,
    "httpx's own (httpcore)": httpx.HTTPTransport,
}


def cpu() -> float:
    times = os.times()
    return times.user + times.system


#: The Source, in a process of its own (no share of our CPU or GIL): it prints its URL and
#: serves until its standard input closes.
SOURCE = f"""
import sys
from airflow_provider_resourcesync.testing import SourceServer
with SourceServer(max_lifetime=1800) as server:
    server.put("/small", b"s" * {SMALL})
    server.put("/large", b"L" * {LARGE})
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


@contextmanager
def source_process() -> Iterator[str]:
    with subprocess.Popen([sys.executable, "-c", SOURCE], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            yield process.stdout.readline().strip()
        finally:
            process.stdin.close()
            process.wait(timeout=30)


def small_requests(base: str, wire: Callable[[], httpx.BaseTransport]) -> float:
    """Client CPU seconds per request of :data:`REQUESTS` GETs of 4 KB."""
    with httpx.Client(transport=wire()) as client:
        client.get(f"{base}/small").read()  # the connection opened outside the count
        started = cpu()
        for _ in range(REQUESTS):
            if len(client.get(f"{base}/small").content) != SMALL:
                raise RuntimeError("a 4 KB body came back short")
        return (cpu() - started) / REQUESTS


def large_bodies(base: str, wire: Callable[[], httpx.BaseTransport]) -> tuple[float, float]:
    """MB/s (wall) and client CPU seconds per MB reading :data:`LARGE_GETS` 50 MB bodies."""
    with httpx.Client(transport=wire()) as client:
        started, started_cpu = time.perf_counter(), cpu()
        for _ in range(LARGE_GETS):
            with client.stream("GET", f"{base}/large") as response:
                if sum(len(piece) for piece in response.iter_raw()) != LARGE:
                    raise RuntimeError("a 50 MB body came back short")
        megabytes = LARGE_GETS * LARGE / 1e6
        return megabytes / (time.perf_counter() - started), (cpu() - started_cpu) / megabytes


CANNED = (b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 4096"
          b"\r\nETag: \"abc\"\r\nLast-Modified: Mon, 24 Nov 2026 10:00:00 GMT\r\n"
          b"Date: Mon, 24 Nov 2026 10:00:00 GMT\r\nServer: bench\r\n\r\n" + b"s" * SMALL)


def parse_h11(count: int) -> float:
    """CPU seconds per canned response parsed by h11 (a request sent first, as on the wire)."""
    request = h11.Request(method="GET", target="/small", headers=[("Host", "bench")])
    started = cpu()
    for _ in range(count):
        connection = h11.Connection(h11.CLIENT)
        connection.send(request)
        connection.send(h11.EndOfMessage())
        connection.receive_data(CANNED)
        while not isinstance(connection.next_event(), h11.EndOfMessage):
            pass
    return (cpu() - started) / count


def parse_httptools(count: int) -> float | None:
    """The same with httptools (llhttp), where installed; None where not."""
    try:
        import httptools  # type: ignore[import-untyped]
    except ImportError:
        return None

    class Sink:
        def __init__(self) -> None:
            self.headers: list[tuple[bytes, bytes]] = []
            self.body: list[bytes] = []
            self.done = False

        def on_header(self, name: bytes, value: bytes) -> None:
            self.headers.append((name, value))

        def on_body(self, body: bytes) -> None:
            self.body.append(body)

        def on_message_complete(self) -> None:
            self.done = True

    started = cpu()
    for _ in range(count):
        sink = Sink()
        parser = httptools.HttpResponseParser(sink)
        parser.feed_data(CANNED)
        if not sink.done or parser.get_status_code() != 200:
            raise RuntimeError("httptools did not parse the canned response")
    return (cpu() - started) / count


def report(rounds: int, wires: Wires) -> None:
    """Run every measure, contestants alternating, and print each one's best."""
    small: dict[str, float] = {}
    large: dict[str, tuple[float, float]] = {}
    with source_process() as base:
        for _ in range(rounds):
            for name, wire in wires.items():
                small[name] = min(small.get(name, float("inf")), small_requests(base, wire))
                rate, per_mb = large_bodies(base, wire)
                if rate > large.get(name, (0.0, 0.0))[0]:
                    large[name] = (rate, per_mb)
    reference = small["httpx's own (httpcore)"]
    print(f"(a) {REQUESTS:,} sequential GETs of 4 KB, client CPU per request (best of {rounds}):")
    for name, seconds in small.items():
        print(f"    {name:28s} {seconds * 1e6:6.0f} us  ({seconds / reference:.2f} x httpx's own)")
    print(f"(b) {LARGE_GETS} GETs of 50 MB, body read as handed over (best of {rounds}):")
    for name, (rate, per_mb) in large.items():
        print(f"    {name:28s} {rate:6.0f} MB/s, {per_mb * 1e3:.2f} ms CPU per MB")
    count = 20_000
    parsers = {"h11": min(parse_h11(count) for _ in range(rounds)),
               "httptools": parse_httptools(count)}
    print(f"(c) a canned 4 KB response parsed {count:,} times, CPU per response:")
    for name, seconds in parsers.items():
        print(f"    {name:28s} " + ("not installed" if seconds is None
                                     else f"{seconds * 1e6:6.1f} us"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (best kept)")
    report(parser.parse_args().rounds, WIRES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
