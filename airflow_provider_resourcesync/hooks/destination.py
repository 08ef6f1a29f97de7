"""The shell's destination factory: a destination URL -> a :class:`Destination`, and its Asset URI.

A destination URL is ``file:///absolute/path``, a plain absolute path, or ``s3://bucket/prefix/``.
For S3 the boto3 client comes from the amazon provider's ``S3Hook``, so the user's AWS connection
(its credentials, region and ``endpoint_url`` extra) is honoured.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import ConfigurationError
from ..storage.base import Destination
from ..storage.local import LocalDestination
from ..storage.s3 import STALE_UPLOAD_AFTER, S3Destination

__all__ = ["DestinationURL", "destination_asset_uri", "destination_from_url", "s3_client"]

_FORMS = "file:///absolute/path, /absolute/path or s3://bucket/prefix/"


@dataclass(frozen=True, slots=True)
class DestinationURL:
    """A destination URL, read: a local directory, or a bucket and a key prefix.

    :param scheme: ``"file"`` or ``"s3"``.
    :param path: the absolute directory (``file``) or the key prefix (``s3``, may be empty).
    :param bucket: the bucket (``s3`` only).
    """

    scheme: str
    path: str
    bucket: str = ""

    @classmethod
    def parse(cls, url: str) -> DestinationURL:
        """Read ``url``.

        :raises ConfigurationError: not one of the accepted forms (the message lists them).
        """
        if not isinstance(url, str) or not url.strip():
            raise ConfigurationError(f"destination {url!r}: expected {_FORMS}")
        url = url.strip()
        if os.path.isabs(url):
            return cls("file", os.path.normpath(url))
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if parts.query or parts.fragment:
            raise ConfigurationError(
                f"destination {url!r}: a query or fragment has no meaning here; expected {_FORMS}")
        if scheme == "file" and parts.netloc in ("", "localhost") and parts.path.startswith("/"):
            return cls("file", os.path.normpath(unquote(parts.path)))
        if scheme == "s3" and parts.netloc:
            return cls("s3", unquote(parts.path).lstrip("/"), bucket=parts.netloc)
        raise ConfigurationError(f"destination {url!r}: expected {_FORMS} (a relative path "
                                 "would depend on the worker's working directory)")

    @property
    def asset_uri(self) -> str:
        """The URI of the Airflow ``Asset`` for this destination, as Airflow normalises it (no
        trailing slash after a path): ``file:///abs/path``, ``s3://bucket/prefix``,
        ``s3://bucket/``."""
        if self.scheme == "file":
            return Path(self.path).as_uri()
        return f"s3://{self.bucket}/{self.path.rstrip('/')}"


def destination_asset_uri(url: str) -> str:
    """The Asset URI for the destination at ``url``, without touching it (for ``outlets`` at
    parse time).

    :raises ConfigurationError: ``url`` is not a destination URL.
    """
    return DestinationURL.parse(url).asset_uri


#: Connections an S3 destination's client keeps open: above the threads a sync runs by default
#: (the connection's ``concurrency``, 16) and most that users set.
MAX_POOL = 64


def destination_from_url(url: str, *, aws_conn_id: str | None = "aws_default",
                         stale_upload_after: timedelta = STALE_UPLOAD_AFTER) -> Destination:
    """The destination at ``url``: a :class:`LocalDestination` (the directory is created if
    missing) or an :class:`S3Destination` whose client is ``S3Hook(aws_conn_id).get_conn()``.

    :param url: ``file:///absolute/path``, ``/absolute/path`` or ``s3://bucket/prefix/``.
    :param aws_conn_id: the AWS connection for ``s3://`` (None: boto3's default credentials).
    :param stale_upload_after: for ``s3://``, incomplete multipart uploads under the prefix older
        than this (by the server's clock) are aborted before the first write, as left by killed
        runs. Set it above the longest upload a live run makes to the same prefix.
    :raises ConfigurationError: ``url`` is not one of those forms.
    :raises DestinationError: the local directory cannot be created, or the bucket or prefix
        is not valid.
    """
    parsed = DestinationURL.parse(url)
    if parsed.scheme == "file":
        return LocalDestination(parsed.path)
    return S3Destination(s3_client(aws_conn_id), parsed.bucket, parsed.path,
                         stale_upload_after=stale_upload_after)


def s3_client(aws_conn_id: str | None) -> Any:
    """The S3 client of the AWS connection ``aws_conn_id`` (None: boto3's default credentials),
    through the amazon provider's ``S3Hook`` (see :func:`_s3_client`)."""
    # Imported here: the amazon provider is slow to import, and local mirrors do not need it.
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    return _s3_client(S3Hook, aws_conn_id)


def _s3_client(hook: Any, aws_conn_id: str | None) -> Any:
    """The connection's S3 client with room for :data:`MAX_POOL` connections (botocore keeps
    10, fewer than a sync's threads: each one over is opened and thrown away with a warning).
    Whatever the connection's ``config_kwargs`` set explicitly is kept, its own pool size too."""
    from botocore.config import Config

    ours = Config(max_pool_connections=MAX_POOL)
    theirs = hook(aws_conn_id=aws_conn_id).conn_config.botocore_config
    return hook(aws_conn_id=aws_conn_id,
                config=ours if theirs is None else ours.merge(theirs)).get_conn()
