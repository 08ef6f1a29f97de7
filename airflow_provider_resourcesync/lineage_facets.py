"""An OpenLineage facet of our own: a run's counts. Imported only when Airflow's OpenLineage
listener asks (the openlineage provider is optional)."""

from __future__ import annotations

import attr
from openlineage.client.generated.base import RunFacet

__all__ = ["COUNTS", "CountsRunFacet"]

#: The run facet's name (custom facets are prefixed with their producer's).
COUNTS = "resourcesync_counts"


@attr.define
class CountsRunFacet(RunFacet):
    """What a run wrote, counted as in its XCom's ``stats`` (a publication's changes by kind,
    keys skipped and left, bytes, packages)."""

    counts: dict[str, int] = attr.field(factory=dict)
