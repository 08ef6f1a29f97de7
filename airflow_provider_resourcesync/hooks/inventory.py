"""The shell's inventory factory: what to publish (a bucket prefix or a directory) and how to list
it (``"list"``, or the ``manifest.json`` of an S3 Inventory report) -> its objects in key order,
their time, and where their bytes are read.

Keys under the prefix the publication itself is written to (in the same bucket or directory,
directories compared once their symbolic links are resolved) are left out of the inventory: a
publication never publishes itself. Keys no URL can carry are skipped and counted
(:class:`~..publish.inventory.Skipped`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import unquote, urlsplit

from ..errors import ConfigurationError
from ..publish.bucket import Bucket, LocalBucket, S3Bucket
from ..publish.inventory import (
    InventoryObject,
    S3ReportReader,
    Skipped,
    list_bucket,
    read_report,
    walk_directory,
)
from .destination import DestinationURL, s3_client

__all__ = ["LIST", "Inventoried", "inventory_of"]

#: The ``inventory`` that lists the objects when the task runs.
LIST = "list"


@dataclass(frozen=True, slots=True)
class Inventoried:
    """An inventory: its objects in key order, as of ``time``, read from ``bucket``; ``what``
    names it in logs, ``excluded`` the prefix left out (None: none)."""

    objects: Iterable[InventoryObject]
    time: datetime
    bucket: Bucket
    what: str
    excluded: str | None


def inventory_of(source: str, inventory: str, publish_to: str, *, aws_conn_id: str | None,
                 skipped: Skipped, inventory_aws_conn_id: str | None = None) -> Inventoried:
    """The inventory of ``source`` (``s3://bucket/prefix/``, ``file:///dir`` or ``/dir``), by
    ``inventory``: :data:`LIST` (a live listing, or a directory walk), or
    ``s3://bucket/key/manifest.json`` (an S3 Inventory report of the source's bucket). The keys
    no URL can carry are counted in ``skipped``, and left out. The source's bucket is listed and
    read through the AWS connection ``aws_conn_id``, the report through
    ``inventory_aws_conn_id`` (None: ``aws_conn_id``), often another account's.

    :raises ConfigurationError: an argument is not one of those forms.
    :raises InventoryError: the report's manifest cannot be read or is not one S3 writes.
    """
    where = DestinationURL.parse(source)
    excluded = _excluded(where, DestinationURL.parse(publish_to))
    if inventory == LIST:
        if where.scheme == "file":
            return Inventoried(walk_directory(where.path, exclude_prefix=excluded,
                                              skipped=skipped),
                               datetime.now(UTC), LocalBucket(where.path),
                               f"the files under {where.path}", excluded)
        client = s3_client(aws_conn_id)
        return Inventoried(list_bucket(client, where.bucket, where.path,
                                       exclude_prefix=excluded, skipped=skipped),
                           datetime.now(UTC), S3Bucket(client, where.bucket),
                           f"the listing of s3://{where.bucket}/{where.path}", excluded)
    manifest = urlsplit(inventory)
    if manifest.scheme != "s3" or not manifest.netloc or not manifest.path.endswith(
            "/manifest.json") or where.scheme != "s3":
        raise ConfigurationError(
            f"inventory {inventory!r}: give {LIST!r}, or the s3://bucket/.../manifest.json of "
            "an S3 Inventory report of the source's bucket (a source on S3)")
    client = s3_client(aws_conn_id)
    reports = client if inventory_aws_conn_id in (None, aws_conn_id) \
        else s3_client(inventory_aws_conn_id)
    key = unquote(manifest.path).lstrip("/")
    report = read_report(S3ReportReader(reports, manifest.netloc), key, where.path,
                         bucket=where.bucket, exclude_prefix=excluded, skipped=skipped)
    return Inventoried(report.ordered(), report.created, S3Bucket(client, where.bucket),
                       f"the S3 Inventory report {inventory}", excluded)


def _excluded(source: DestinationURL, publish_to: DestinationURL) -> str | None:
    """The key prefix of ``publish_to`` inside ``source``'s keys; None if it is elsewhere.
    Directories are compared as they are, their symbolic links resolved: a ``publish_to`` reached
    through a link into ``source`` is inside it."""
    if source.scheme != publish_to.scheme or source.bucket != publish_to.bucket:
        return None
    if source.scheme == "s3":
        inside, same = (publish_to.path.startswith(source.path),
                        publish_to.path.rstrip("/") == source.path.rstrip("/"))
        excluded = publish_to.path.rstrip("/") + "/"
    else:
        relative = os.path.relpath(os.path.realpath(publish_to.path),
                                   os.path.realpath(source.path))
        inside, same = not relative.startswith(".."), relative == "."
        excluded = relative.replace(os.sep, "/") + "/"
    if same:
        raise ConfigurationError(f"publish_to is the very folder published ({publish_to.path!r}):"
                                 " give the publication a folder of its own, inside or elsewhere")
    return excluded if inside else None
