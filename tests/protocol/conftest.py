"""Shared by the protocol tests: the spec's examples and small document builders.

The examples are the files of ``shared/spec/examples`` beside the checkout (CI puts it there);
``RESOURCESYNC_SPEC_EXAMPLES`` points elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

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
