"""botocore's errors, met reading an inventory from S3, as :class:`InventoryError`.

The message names the bucket, the key and the S3 action refused. Refusals (403: AccessDenied and
kin) and a missing bucket or key are lasting: the fix is a permission, a bucket name or a report;
anything else (throttling, a 5xx, a dropped connection) may pass, and a re-run can help.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import BotoCoreError, ClientError

from ...errors import InventoryError
from ...storage.base import shown_key

__all__ = ["s3_errors"]

_MISSING = frozenset({"404", "NoSuchKey", "NoSuchBucket", "NotFound"})


@contextmanager
def s3_errors(action: str, bucket: str, key: str) -> Iterator[None]:
    """Turn botocore's errors inside the block into :class:`InventoryError`.

    :param action: the S3 action, as a policy names it (``s3:GetObject``, ``s3:ListBucket``).
    :param key: the key (or prefix) asked for.
    """
    try:
        yield
    except ClientError as exc:
        raise _refused(exc, action, bucket, key) from exc
    except BotoCoreError as exc:
        raise InventoryError(f"s3://{bucket}/ key {shown_key(key)}: {action} failed ({exc}); "
                             "re-run once the store answers again", rerun_helps=True) from exc


def _refused(exc: ClientError, action: str, bucket: str, key: str) -> InventoryError:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "unknown"))
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    where = f"s3://{bucket}/ key {shown_key(key)}: {action} failed: {code} " \
            f"({error.get('Message') or exc})"
    if status == 403 or code in ("AccessDenied", "AllAccessDisabled", "403"):
        return InventoryError(f"{where}; allow {action} on bucket {bucket!r} to the AWS "
                              "connection's identity (its IAM policy, the bucket policy)")
    if code in _MISSING:
        return InventoryError(f"{where}; check the bucket and the key")
    return InventoryError(f"{where}; re-run once the store answers again", rerun_helps=True)
