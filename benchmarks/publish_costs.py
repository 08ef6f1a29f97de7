"""Publishing costs: the S3 requests and bytes of a publisher's runs, by bucket and operation.

(e) On moto's S3 server over HTTP, a publication of N objects (10,000, 100,000 and 1,000,000)
    is made by a first run, then changed twice, by 0.1% and by 1% of the objects (a third
    created, a third updated, a third deleted), each change published by a run, and once more
    by 0.1% in a run that also rewrites the Resource List (a compaction: with the default
    ``resource_list_max_age`` of a day, a daily publication does this about once a day).
    Each run's requests are counted by bucket (source, inventory, publication) and
    operation, with the bytes sent (request bodies) and received (response bodies), from
    botocore's own events on the run's client. Two inventories: ``list`` (ListObjectsV2 when
    the run starts) and ``report`` (an S3 Inventory report, CSV gzip, in an inventory bucket).
    No URL checks (``check_urls=0``: each check is one GetObject of the source and two HTTP
    GETs of the website) and no Resource Dump.

Objects are ``BODY`` bytes under keys of 33 characters (``collection/NNN/item-NNNNNNNNN.json``).
The listing's objects are put into moto's backend directly (fast set-up); at 1,000,000 the
listing is not run (moto scans the whole bucket for each page: hours), and its cost is the
report's but for the inventory part, which is ceil(N / 1,000) ListObjectsV2 exactly.

Run: ``make bench-publish-costs`` or ``uv run python benchmarks/publish_costs.py
[--sizes 10000,100000,1000000] [--inventories list,report] [--out costs.jsonl]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any

from airflow_provider_resourcesync.publish.bucket import S3Bucket
from airflow_provider_resourcesync.publish.inventory import (
    S3ReportReader,
    list_bucket,
    read_report,
)
from airflow_provider_resourcesync.publish.run import Publication, Published, publish
from airflow_provider_resourcesync.storage.s3 import S3Destination
from airflow_provider_resourcesync.testing.reports import csv_gzip, form_encoded, put_report

SIZES = (10_000, 100_000, 1_000_000)
SHARES = (0.001, 0.01)
BODY = 4096
FILE_ROWS = 250_000
LISTED_AT_MOST = 100_000
COLUMNS = "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag, " \
          "StorageClass"
ROLES = {"source": "source", "inventory": "inventory", "published": "publication"}


def key_of(number: int) -> str:
    return f"collection/{number % 1000:03d}/item-{number:09d}.json"


def body_of(number: int, version: int) -> bytes:
    return (f"{number:09d}.{version:05d}|".encode() * (BODY // 16 + 1))[:BODY]


@dataclass
class Collection:
    """The source bucket's objects: each alive one's number and version."""

    size: int
    versions: dict[int, int] = field(default_factory=dict)
    modified: dict[int, datetime] = field(default_factory=dict)
    next_number: int = 0

    def __post_init__(self) -> None:
        self.versions = dict.fromkeys(range(self.size), 0)
        self.next_number = self.size

    def change(self, share: float, when: datetime) -> tuple[list[int], list[int]]:
        """Change ``share`` of the objects: a third deleted, a third updated, the rest created;
        the numbers written (created or updated) and deleted."""
        count = max(3, round(len(self.versions) * share))
        alive = list(islice(self.versions, 0, None, max(1, len(self.versions) // count)))
        deleted, updated = alive[: count // 3], alive[count // 3: 2 * (count // 3)]
        created = list(range(self.next_number, self.next_number + count - len(deleted)
                             - len(updated)))
        self.next_number += len(created)
        for number in deleted:
            del self.versions[number]
            self.modified.pop(number, None)
        for number in updated:
            self.versions[number] += 1
        for number in (*updated, *created):
            self.versions.setdefault(number, 0)
            self.modified[number] = when
        return [*updated, *created], deleted

    def rows(self, first: datetime) -> Iterator[list[str]]:
        for number, version in self.versions.items():
            when = self.modified.get(number, first)
            yield ["source", form_encoded(key_of(number)), "", "true", "false", str(BODY),
                   f"{when:%Y-%m-%dT%H:%M:%S.}{when.microsecond // 1000:03d}Z",
                   hashlib.md5(body_of(number, version)).hexdigest(), "STANDARD"]


@dataclass
class Meter:
    """Requests and bytes by (bucket role, operation), from a client's events."""

    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    sent: Counter[tuple[str, str]] = field(default_factory=Counter)
    received: Counter[tuple[str, str]] = field(default_factory=Counter)

    def attach(self, client: Any) -> None:
        client.meta.events.register("before-parameter-build.s3.*", self._call)
        client.meta.events.register("before-send.s3.*", self._send)
        client.meta.events.register("after-call.s3.*", self._answer)
        self._bucket = ""

    def clear(self) -> None:
        for counter in (self.requests, self.sent, self.received):
            counter.clear()

    def _call(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self._bucket = ROLES.get(params.get("Bucket", ""), "other")

    def _send(self, request: Any, event_name: str, **_: Any) -> None:
        where = (self._bucket, event_name.rpartition(".")[2])
        self.requests[where] += 1
        self.sent[where] += int(request.headers.get("Content-Length", 0) or 0)

    def _answer(self, http_response: Any, model: Any, **_: Any) -> None:
        if model.name == "HeadObject":  # no body: its Content-Length is the object's
            return
        where = (self._bucket, model.name)
        self.received[where] += int(http_response.headers.get("content-length", 0) or 0)

    def summary(self) -> dict[str, Any]:
        return {
            "requests": {f"{role}:{operation}": count
                         for (role, operation), count in sorted(self.requests.items())},
            "sent": sum(self.sent.values()), "received": sum(self.received.values()),
            "sent_by": {f"{role}:{op}": n for (role, op), n in sorted(self.sent.items()) if n},
            "received_by": {f"{role}:{op}": n
                            for (role, op), n in sorted(self.received.items()) if n}}


class Stand:
    """A moto S3 server over HTTP with the buckets, a metered client, and the objects."""

    def __init__(self, kind: str, collection: Collection) -> None:
        import boto3
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.client = boto3.client("s3", endpoint_url=f"http://{host}:{port}",
                                   aws_access_key_id="test", aws_secret_access_key="test",
                                   region_name="us-east-1")
        for bucket in ROLES:
            self.client.create_bucket(Bucket=bucket)
        self.backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
        self.meter = Meter()
        self.meter.attach(self.client)
        self.kind = kind
        self.collection = collection
        self.first = datetime.now(UTC)
        self.reports = 0
        if kind == "list":
            self.put(list(collection.versions))

    def put(self, numbers: list[int]) -> None:
        for number in numbers:
            self.backend.put_object("source", key_of(number),
                                    body_of(number, self.collection.versions[number]))

    def delete(self, numbers: list[int]) -> None:
        for number in numbers:
            self.backend.delete_object("source", key_of(number))

    def inventory(self) -> tuple[Any, datetime]:
        """The inventory a run is given now, and its time."""
        if self.kind == "list":
            self.meter.clear()
            return list_bucket(self.client, "source"), datetime.now(UTC)
        self.reports += 1
        created = datetime.now(UTC)
        manifest = f"inventory/source/daily/{self.reports:04d}/manifest.json"
        rows = self.collection.rows(self.first)
        parts = ((f"part-{number}.csv.gz", csv_gzip(part)) for number, part in enumerate(
            iter(lambda: list(islice(rows, FILE_ROWS)), [])))
        put_report(lambda key, data: self.client.put_object(Bucket="inventory", Key=key,
                                                            Body=data),
                   manifest, parts, file_format="CSV", file_schema=COLUMNS, created=created)
        self.meter.clear()
        report = read_report(S3ReportReader(self.client, "inventory"), manifest, bucket="source")
        return report.ordered(), report.created

    def run(self, *, compact: bool = False) -> tuple[Published, dict[str, Any]]:
        publication = Publication(
            S3Destination(self.client, "published", "rs/"), base_url="https://example.org/",
            publish_url="https://example.org/rs/",
            resource_list_max_age=timedelta(0) if compact else timedelta(days=1))
        objects, when = self.inventory()  # the meter starts once a report is written
        started = time.perf_counter()
        done = publish(publication, objects, when, S3Bucket(self.client, "source"))
        cost = self.meter.summary()
        cost["seconds"] = round(time.perf_counter() - started, 1)
        return done, cost

    def stop(self) -> None:
        self.server.stop()
        self.backend.reset()


def scenario(size: int, kind: str) -> Iterator[dict[str, Any]]:
    collection = Collection(size)
    stand = Stand(kind, collection)
    try:
        done, cost = stand.run()
        yield {"objects": size, "inventory": kind, "run": "first", "changes": size, **cost}
        for share, compact in ((SHARES[0], False), (SHARES[1], False), (SHARES[0], True)):
            written, deleted = collection.change(share, datetime.now(UTC))
            stand.put(written)
            stand.delete(deleted)
            done, cost = stand.run(compact=compact)
            yield {"objects": size, "inventory": kind,
                   "run": f"{share:.1%}" + (" + Resource List" if compact else ""),
                   "changes": done.changes, "packages": done.packages,
                   "package_bytes": done.package_bytes, **cost}
    finally:
        stand.stop()


def shown(result: dict[str, Any]) -> str:
    requests = ", ".join(f"{name} {count}" for name, count in result["requests"].items())
    return (f"(e) {result['objects']:>9,} objects, {result['inventory']:<6} {result['run']:<20}"
            f" {result['changes']:>9,} changes: {sum(result['requests'].values()):>6,} requests"
            f" ({requests}); sent {result['sent'] / 1e6:,.2f} MB, received "
            f"{result['received'] / 1e6:,.2f} MB; {result['seconds']} s")


def main(arguments: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--inventories", default="list,report")
    parser.add_argument("--out", default=None, help="also write each run's costs as JSON lines")
    options = parser.parse_args(arguments)
    out = open(options.out, "a", encoding="utf-8") if options.out else None  # noqa: SIM115
    try:
        for size in (int(value) for value in options.sizes.split(",")):
            for kind in options.inventories.split(","):
                if kind == "list" and size > LISTED_AT_MOST:
                    print(f"(e) {size:,} objects, list: not run on moto (a listing of them "
                          f"costs {math.ceil(size / 1000):,} ListObjectsV2)")
                    continue
                for result in scenario(size, kind):
                    print(shown(result), flush=True)
                    if out is not None:
                        out.write(json.dumps(result) + "\n")
                        out.flush()
    finally:
        if out is not None:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
