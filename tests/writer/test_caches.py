"""The mirror published as a Source (14.8) is cached as a publication is (issue 28): on S3, its
documents that saves rewrite are served with a short, settable ``Cache-Control`` (its
``.well-known`` copy too), its closed Change Lists as immutable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from airflow_provider_resourcesync.storage.keys import RESERVED_PREFIX
from airflow_provider_resourcesync.storage.s3 import S3Destination
from airflow_provider_resourcesync.writer import IMMUTABLE, MirrorState, publish_well_known

from ..storage.test_cache_control import public
from .records import record

LIFETIME = timedelta(seconds=90)


def test_the_mirrors_documents_are_served_short_lived_and_its_change_lists_immutable(
        s3_client: Any, s3_endpoint: str, bucket: str) -> None:
    public(s3_client, bucket)
    destination = S3Destination(s3_client, bucket, "mirror/")
    served = f"{s3_endpoint}/{bucket}/mirror/"
    for version in range(3):  # a first save, then two with changes: two Change Lists
        when = datetime(2026, 3, 1, tzinfo=UTC) + timedelta(hours=version)
        with MirrorState.load(destination, public_base_url=served, clock=lambda at=when: at,
                              documents_max_age=LIFETIME) as state:
            for number in range(3):
                state.put(record(number, version))
            state.save(checkpoint={"version": version})
    assert publish_well_known(destination, max_age=LIFETIME)

    def header(key: str) -> str | None:
        return httpx.get(served + key).headers.get("cache-control")

    for name in ("capabilitylist.xml", "description.xml", "changelist.xml", "resourcelist.xml"):
        assert header(RESERVED_PREFIX + name) == "public, max-age=90", name
    assert header(".well-known/resourcesync") == "public, max-age=90"
    closed = list(destination.keys(RESERVED_PREFIX + "changes/"))
    assert len(closed) == 2
    assert {header(key) for key in closed} == {IMMUTABLE}
