"""Source writer benchmark (issue 26): what a run costs as its changes grow, and what bounding
the Resource List's age costs.

(a) O(changes), on S3 (moto's server, over HTTP): collections of 100,000 and 1,000,000 records
    (``--quick``: 10,000 and 100,000), saved once (the set-up, not measured), then a run with 0.1%
    of them changed and one with 1% (updates, deletes, creates in equal parts), each as the
    publisher drives the writer: load, a put or a remove per change, save. Printed per run: the S3
    requests by operation, the bytes read and written, the Resource List PUTs; and the bytes of
    the set-up's Resource List, what a run that rewrites the collection pays (as the writer did
    past 1,000 lookups before issue 26: at 300,000 objects, 13 Resource List PUTs and ~82 MB a
    run). Bars: no Resource List PUT in either run; the 1% run's bytes (read and written) at most
    10x the 0.1% run's, so they grow at most in proportion to the changes; and under a quarter of
    the Resource List's bytes.
(b) The age bound's cost, on local disk: 30 days of hourly runs of 10 changes each to a
    collection of 100,000 (``--quick``: 10,000, 7 days), with the bound at its default and off
    (the size rule alone, which so few changes never trip), the two taking turns run by run.
    Printed: Resource List rewrites, mean bytes written per run, and the oldest change a follower
    reading the Resource List alone lacked after a run (its staleness). Bar: the staleness with
    the bound stays within the bound and one run.

Run: ``make bench-writer`` or ``uv run python benchmarks/writer.py [a] [b] [--quick]``.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto.server import ThreadedMotoServer
from scale_mirror import MeteredDestination

from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.storage.s3 import S3Destination
from airflow_provider_resourcesync.writer import RESOURCE_LIST_MAX_AGE, ObjectRecord, SourceWriter

SIZES = (100_000, 1_000_000)
QUICK_SIZES = (10_000, 100_000)
SHARES = (0.001, 0.01)
PROPORTION_BAR = 10.0  # (a): the 1% run's bytes over the 0.1% run's
COLLECTION_BAR = 0.25  # (a): the 1% run's bytes over the Resource List's
T0 = datetime(2026, 1, 1, tzinfo=UTC)
RUN_CHANGES = 10  # (b)
DAYS, QUICK_DAYS = 30, 7
AGED, QUICK_AGED = 100_000, 10_000


def record(number: int, version: int = 0) -> ObjectRecord:
    key = f"objects/{number // 1_000:04d}/o{number:07d}.bin"
    return ObjectRecord(f"https://bucket.example.org/{key}", key, 1_000 + version,
                Hashes.of(md5=f"{number:016x}{version:016x}"), T0, "application/octet-stream")


@dataclass
class Meter:
    """The S3 requests boto sends, by operation, and the bytes they carry each way."""

    sent: Counter[str] = field(default_factory=Counter)
    read: int = 0
    written: int = 0
    resource_list_puts: int = 0

    def clear(self) -> None:
        self.sent.clear()
        self.read = self.written = self.resource_list_puts = 0

    def before_send(self, event_name: str, request: Any, **_: Any) -> None:
        operation = event_name.rpartition(".")[2]
        self.sent[operation] += 1
        if operation in ("PutObject", "UploadPart"):
            body = request.body
            self.written += len(body) if isinstance(body, bytes) else int(
                request.headers.get("Content-Length", 0))
            self.resource_list_puts += "/resourcelist" in request.url and operation == "PutObject"
        if operation == "CreateMultipartUpload" and "/resourcelist" in request.url:
            self.resource_list_puts += 1

    def after_get(self, parsed: dict[str, Any], **_: Any) -> None:
        self.read += int(parsed.get("ContentLength") or 0)

    @property
    def bytes(self) -> int:
        return self.read + self.written


def changed(size: int, count: int, run: int) -> Iterator[tuple[str, ObjectRecord | None]]:
    """``count`` changes to a collection of ``size``, spread over it: updates, deletes and
    creates in equal parts; run ``run``'s own (no record changed by two runs)."""
    step = size // count
    for n in range(count):
        number = n * step + run
        kind = n % 3
        if kind == 0:
            yield record(number).uri, record(number, run + 1)
        elif kind == 1:
            yield record(number).uri, None
        else:
            new = size + run * count + n
            yield record(new).uri, record(new)


def writer_run(destination: Destination, changes: Iterator[tuple[str, ObjectRecord | None]],
               when: datetime, **options: Any) -> None:
    with SourceWriter.load(destination, clock=lambda: when, **options) as writer:
        for uri, held in changes:
            if held is None:
                writer.remove(uri, when=when)
            else:
                writer.put(held, when=when)
        writer.save(checkpoint={})


def proportional(sizes: tuple[int, int]) -> bool:
    """(a): whether its bars are met."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    met = True
    try:
        host, port = moto.get_host_and_port()
        s3 = boto3.client("s3", endpoint_url=f"http://{host}:{port}", aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
        meter = Meter()
        s3.meta.events.register("before-send.s3", meter.before_send)
        s3.meta.events.register("after-call.s3.GetObject", meter.after_get)
        for size in sizes:
            bucket = f"published-{size}"
            s3.create_bucket(Bucket=bucket)
            started = time.perf_counter()
            meter.clear()
            writer_run(S3Destination(s3, bucket), ((record(n).uri, record(n))
                                                   for n in range(size)), T0)
            listing = meter.written
            print(f"(a) set-up: {size:,} records saved in {time.perf_counter() - started:.0f} s "
                  f"({listing:,} bytes written, Resource List and lookup index; Resource List "
                  f"PUTs {meter.resource_list_puts})", flush=True)
            resource_list = sum(
                item["Size"] for page in s3.get_paginator("list_objects_v2").paginate(
                    Bucket=bucket, Prefix=RESERVED_PREFIX + "resourcelist")
                for item in page.get("Contents", []))
            measured = {}
            for run, share in enumerate(SHARES):
                count = int(size * share)
                meter.clear()
                started = time.perf_counter()
                writer_run(S3Destination(s3, bucket), changed(size, count, run),
                           T0 + timedelta(hours=run + 1))
                seconds = time.perf_counter() - started
                measured[share] = meter.bytes
                print(f"(a) {count:,} changes ({share:.1%}) to {size:,} records on S3: "
                      f"{seconds:.1f} s, {sum(meter.sent.values()):,} requests ("
                      + ", ".join(f"{op} {n:,}" for op, n in sorted(meter.sent.items()))
                      + f"), {meter.read:,} bytes read, {meter.written:,} written, Resource "
                      f"List PUTs {meter.resource_list_puts}; {meter.bytes / resource_list:.3f}x "
                      f"the Resource List's {resource_list:,} bytes", flush=True)
                met = met and meter.resource_list_puts == 0
            ratio = measured[SHARES[1]] / measured[SHARES[0]]
            below = measured[SHARES[1]] / resource_list
            print(f"(a) {size:,}: the 1% run's bytes over the 0.1% run's {ratio:.2f}x (bar: "
                  f"<= {PROPORTION_BAR:.0f}x), over the Resource List's {below:.3f}x (bar: < "
                  f"{COLLECTION_BAR}); no Resource List PUT: {met}", flush=True)
            met = met and ratio <= PROPORTION_BAR and below < COLLECTION_BAR
    finally:
        moto.stop()
    return met


@dataclass
class Aged:
    """One contestant of (b): a collection under an age bound, and what its runs cost."""

    bound: timedelta | None
    destination: MeteredDestination
    rewrites: int = 0
    written: list[int] = field(default_factory=list)
    staleness: timedelta = timedelta(0)
    lacked: list[datetime] = field(default_factory=list)  # saves the Resource List lacks

    def run(self, changes: Iterator[tuple[str, ObjectRecord | None]], when: datetime) -> None:
        before = self.destination.written
        at = _resource_list_at(self.destination)
        writer_run(self.destination, changes, when, resource_list_max_age=self.bound)
        self.written.append(self.destination.written - before)
        if _resource_list_at(self.destination) != at:
            self.rewrites += 1
            self.lacked.clear()
        else:
            self.lacked.append(when)
            self.staleness = max(self.staleness, when - self.lacked[0])


def _resource_list_at(destination: Destination) -> bytes | None:
    """The Resource List's head, which changes when it is rewritten."""
    data = destination.read_bytes(RESERVED_PREFIX + "resourcelist.xml")
    return None if data is None else data[:600]


def age_bound(size: int, days: int) -> bool:
    """(b): whether its bar is met."""
    with tempfile.TemporaryDirectory() as bounded_root, \
            tempfile.TemporaryDirectory() as unbounded_root:
        contestants = [Aged(RESOURCE_LIST_MAX_AGE, MeteredDestination(bounded_root)),
                       Aged(None, MeteredDestination(unbounded_root))]
        for contestant in contestants:
            writer_run(contestant.destination,
                       ((record(n).uri, record(n)) for n in range(size)), T0)
        started = time.perf_counter()
        runs = days * 24
        for run in range(runs):
            when = T0 + timedelta(hours=run + 1)
            for contestant in contestants:  # taking turns
                contestant.run(changed(size, RUN_CHANGES, run), when)
        seconds = time.perf_counter() - started
    for contestant in contestants:
        mean = sum(contestant.written) / len(contestant.written)
        print(f"(b) {runs} hourly runs of {RUN_CHANGES} changes to {size:,} records, age bound "
              f"{contestant.bound}: {contestant.rewrites} Resource List rewrites, "
              f"{mean:,.0f} bytes written per run on average, staleness at most "
              f"{contestant.staleness}", flush=True)
    bounded, unbounded = contestants
    ratio = sum(bounded.written) / sum(unbounded.written)
    print(f"(b) bounded over unbounded, bytes written: {ratio:.2f}x ({seconds:.0f} s)")
    assert bounded.bound is not None
    return bounded.staleness <= bounded.bound + timedelta(hours=1)


def main(arguments: list[str]) -> int:
    quick = "--quick" in arguments
    parts = [part for part in arguments if part in ("a", "b")] or ["a", "b"]
    met = True
    if "a" in parts:
        met = proportional(QUICK_SIZES if quick else SIZES) and met
    if "b" in parts:
        met = age_bound(*((QUICK_AGED, QUICK_DAYS) if quick else (AGED, DAYS))) and met
    print("bars met" if met else "A BAR IS NOT MET")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
