"""OpenLineage for the operators: what a task read and wrote, one dataset per place (a Source's
Capability List, a mirror, a bucket prefix, a Change Dump), never one per resource.

Datasets are named as OpenLineage names them: ``s3://bucket`` and the key for S3, ``file`` and
the absolute path for a local directory, ``{scheme}://{host}`` and the path for a URL. A check
(the audit) reports what it checked as an input with OpenLineage's ``dataQualityAssertions``
input facet, the way data quality checks do; a run that counts what it wrote (the publisher)
gives its outputs the ``outputStatistics`` facet, and its counts in a run facet
(:data:`~.lineage_facets.COUNTS`). The openlineage provider is optional: it is
imported only when Airflow's OpenLineage listener asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from .hooks.destination import DestinationURL

__all__ = ["Lineage", "Written", "dataset_name"]


class Written(NamedTuple):
    """How much a run wrote: its rows (changes, entries...), bytes and files, and all its
    counts by name."""

    rows: int
    size: int
    files: int
    counts: Mapping[str, int]


def dataset_name(location: str) -> tuple[str, str]:
    """``(namespace, name)`` of a destination URL (``s3://``, ``file://``, a path) or of an
    ``http(s)`` URL."""
    parts = urlsplit(location)
    if parts.scheme in ("http", "https"):
        return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}", parts.path or "/"
    where = DestinationURL.parse(location)
    if where.scheme == "s3":
        return f"s3://{where.bucket}", where.path.rstrip("/") or "/"
    return "file", where.path


class Lineage:
    """An operator's OpenLineage facets on completion (and on failure, which falls back to
    them): the places :meth:`_reads_and_writes` recorded during ``execute``."""

    _lineage: tuple[tuple[str, ...], tuple[str, ...], Mapping[str, Mapping[str, bool]]] = (
        (), (), {})
    _written: Written | None = None

    def _reads_and_writes(self, inputs: list[str], outputs: list[str], *,
                          checked: Mapping[str, Mapping[str, bool]] | None = None) -> None:
        """Record what the task read and wrote (locations :func:`dataset_name` takes), and of
        the inputs it checked, each assertion's name and whether it held."""
        self._lineage = (tuple(inputs), tuple(outputs), dict(checked or {}))

    def _wrote(self, written: Written) -> None:
        """Record how much the task wrote to its outputs (their ``outputStatistics``)."""
        self._written = written

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Airflow's OpenLineage hook: the inputs and outputs recorded by ``execute``."""
        from airflow.providers.common.compat.openlineage.facet import InputDataset
        from airflow.providers.openlineage.extractors import OperatorLineage
        from openlineage.client.generated.data_quality_assertions_dataset import (
            Assertion,
            DataQualityAssertionsDatasetFacet,
        )

        from .lineage_facets import COUNTS, CountsRunFacet

        inputs, outputs, checked = self._lineage
        written = self._written
        return OperatorLineage(
            run_facets={COUNTS: CountsRunFacet(counts=dict(written.counts))}
            if written is not None else {},
            inputs=[InputDataset(*dataset_name(location), inputFacets={
                "dataQualityAssertions": DataQualityAssertionsDatasetFacet(assertions=[
                    Assertion(assertion=name, success=held)
                    for name, held in checked[location].items()])}
                if location in checked else {}) for location in inputs],
            outputs=[self._output(location) for location in outputs])

    def _output(self, location: str) -> Any:
        from airflow.providers.common.compat.openlineage.facet import (
            OutputDataset,
            OutputStatisticsOutputDatasetFacet,
        )

        written = self._written
        return OutputDataset(*dataset_name(location), outputFacets={
            "outputStatistics": OutputStatisticsOutputDatasetFacet(
                rowCount=written.rows, size=written.size, fileCount=written.files)}
            if written is not None else {})
