"""Inventories to publish from, each a stream of :class:`InventoryObject` in bounded memory: a
live bucket listing, a local directory walk, an S3 Inventory report (CSV gzip, ORC, Parquet)."""

from __future__ import annotations

from .listing import list_bucket
from .local import walk_directory
from .objects import InventoryObject
from .order import in_key_order, ordered
from .readers import DirectoryReportReader, ReportReader, S3ReportReader
from .report import InventoryReport, read_report
from .skipped import DEFAULT_SHARE, Skipped

__all__ = [
    "DEFAULT_SHARE",
    "DirectoryReportReader",
    "InventoryObject",
    "InventoryReport",
    "ReportReader",
    "S3ReportReader",
    "Skipped",
    "in_key_order",
    "list_bucket",
    "ordered",
    "read_report",
    "walk_directory",
]
