"""A live inventory: a bucket listed with ListObjectsV2, through a boto3 client the caller gives.

S3 returns keys in ascending order of their UTF-8 bytes, 1,000 a request; the listing checks that
order as it goes (an S3-compatible store that breaks it would make the diff wrong), so the
objects can be merged against the previous snapshot with no sort.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC
from typing import TYPE_CHECKING

from .objects import InventoryObject, in_scope
from .order import in_key_order
from .s3errors import s3_errors
from .skipped import Skipped

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["list_bucket"]


def list_bucket(client: S3Client, bucket: str, prefix: str = "", *,
                exclude_prefix: str | None = None, page_size: int = 1000,
                skipped: Skipped | None = None) -> Iterator[InventoryObject]:
    """The objects under ``prefix`` in ``bucket``, in key order, a page in memory at a time.

    :param client: a boto3 S3 client (the shell builds it from the user's AWS connection).
    :param exclude_prefix: keys under it are left out (where the publication is written).
    :param page_size: keys asked for per request (S3 answers at most 1,000).
    :param skipped: counts the keys no URL can carry, which are left out (None: a new
        :class:`.Skipped`, with the default share).
    :raises InventoryError: a request was refused or failed (bucket, prefix and action named),
        too many keys cannot be published as URLs, or the store listed keys out of order.
    """
    where = f"the listing of s3://{bucket}/{prefix}"
    skipping = skipped if skipped is not None else Skipped()
    yield from in_key_order(skipping.counted(
        _listed(client, bucket, prefix, exclude_prefix, page_size, skipping), where), where)


def _listed(client: S3Client, bucket: str, prefix: str, exclude_prefix: str | None,
            page_size: int, skipped: Skipped) -> Iterator[InventoryObject]:
    pages = client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": page_size})
    with s3_errors("s3:ListBucket", bucket, prefix):
        for page in pages:
            for item in page.get("Contents", ()):
                key = item["Key"]
                if in_scope(key, prefix, exclude_prefix) and skipped.key(key) is not None:
                    yield InventoryObject(key, item["Size"],
                                          item.get("ETag", "").strip('"'),
                                          item["LastModified"].astimezone(UTC))
