"""Shared by the protocol tests: the spec's examples and small document builders.

The examples are the files of ``shared/spec/examples`` beside the checkout (CI puts it there);
``RESOURCESYNC_SPEC_EXAMPLES`` points elsewhere.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from airflow_provider_resourcesync.protocol.model import Entry, Head, Link, Metadata

EXAMPLES = Path(os.environ.get(
    "RESOURCESYNC_SPEC_EXAMPLES",
    Path(__file__).resolve().parents[3] / "shared" / "spec" / "examples",
))
XML_EXAMPLES = sorted(EXAMPLES.glob("ex*.xml"))
assert len(XML_EXAMPLES) == 30, f"the spec's 30 XML examples were not found under {EXAMPLES}"

NS = ('xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
      'xmlns:rs="http://www.openarchives.org/rs/terms/"')
RESOURCE_LIST_MD = '<rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>'


def urlset(body: str, head: str = RESOURCE_LIST_MD) -> bytes:
    """A small ``<urlset>`` document with the given head and body."""
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>\n{head}\n{body}\n'
            "</urlset>\n").encode()


T0 = datetime(2013, 1, 3, 9, 0, tzinfo=UTC)
UP = Link(rel="up", href="http://example.com/dataset1/capabilitylist.xml")
RESOURCE_HEAD = Head(md=Metadata(capability="resourcelist", at=T0), links=(UP,))
CHANGE_HEAD = Head(md=Metadata(capability="changelist", from_=T0), links=(UP,))
URL = "http://example.com/dataset1/resourcelist.xml"


def resources(count: int) -> list[Entry]:
    return [Entry(f"http://example.com/res{n}", md=Metadata(length=n, type="text/plain"))
            for n in range(count)]


def changes(count: int) -> list[Entry]:
    return [Entry(f"http://example.com/res{n}",
                  md=Metadata(change="updated", datetime=T0 + timedelta(hours=n + 1)))
            for n in range(count)]
