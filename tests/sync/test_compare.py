"""When the mirror holds a resource unchanged, by descriptions alone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.storage.base import ObjectInfo
from airflow_provider_resourcesync.sync.compare import Expected, agrees

URI = "https://example.org/a"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 1, 2, tzinfo=UTC)
HELD = ObjectInfo(URI, 3, Hashes.parse("md5:AAA sha-256:bbb"), T0)


@pytest.mark.parametrize(("expected", "verdict"), [
    (Expected(URI, Hashes.parse("md5:aaa"), 3), True),  # hex case does not matter
    (Expected(URI, Hashes.parse("sha-256:bbb md5:aaa"), lastmod=T1), True),  # hash wins
    (Expected(URI, Hashes.parse("md5:ccc"), 3), False),
    (Expected(URI, Hashes.parse("md5:aaa"), 4), False),
    (Expected("https://example.org/b", Hashes.parse("md5:aaa")), False),
    (Expected(URI, Hashes.parse("sha-512:ddd"), 3, T0), None),  # a hash we do not hold
    (Expected(URI, length=3, lastmod=T0), True),  # no hash: lastmod and length decide
    (Expected(URI, Hashes.parse("crc32:eee"), 3, T0), True),  # nor one we could compute
    (Expected(URI, length=3, lastmod=T1), False),
    (Expected(URI, length=3), None),  # nothing to go by
])
def test_agrees(expected: Expected, verdict: bool | None) -> None:
    assert agrees(expected, HELD) is verdict
