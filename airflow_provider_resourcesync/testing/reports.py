"""S3 Inventory reports written as S3 writes them, for tests and benchmarks: data files under
the configuration's ``data/``, then ``manifest.json`` listing them (size, MD5) with
``manifest.checksum`` beside it; CSV data files gzipped, every field quoted, no header, keys
form-URL-encoded (a space as ``+``)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from urllib.parse import quote_plus

__all__ = ["Put", "csv_gzip", "form_encoded", "put_report"]

#: Stores ``bytes`` at a key (a bucket's put_object, a file under a directory).
Put = Callable[[str, bytes], None]


def form_encoded(key: str) -> str:
    """``key`` as S3 Inventory writes it in CSV: its UTF-8 bytes form-URL-encoded, letters,
    digits and ``. - * _`` as they are, a space as ``+``."""
    return quote_plus(key, safe="*").replace("~", "%7E")


def csv_gzip(rows: Iterable[Sequence[str]]) -> bytes:
    """``rows`` as a CSV gzip data file."""
    text = io.StringIO()
    csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return gzip.compress(text.getvalue().encode("utf-8"), compresslevel=6)


def put_report(put: Put, manifest_key: str, data_files: Iterable[tuple[str, bytes]], *,
               file_format: str, file_schema: str, created: datetime,
               source_bucket: str = "source") -> list[str]:
    """A report of the bucket ``source_bucket``, of ``data_files`` (name, content; each put
    under ``data/`` of the configuration ``manifest_key`` is in, as it comes) at
    ``manifest_key``; the data files' keys."""
    config = manifest_key.rsplit("/", 2)[0]
    files = []
    for name, data in data_files:
        key = f"{config}/data/{name}"
        put(key, data)
        files.append({"key": key, "size": len(data),
                      "MD5checksum": hashlib.md5(data).hexdigest()})
    manifest = json.dumps({
        "sourceBucket": source_bucket, "destinationBucket": "arn:aws:s3:::inventory",
        "version": "2016-11-30", "creationTimestamp": str(int(created.timestamp() * 1000)),
        "fileFormat": file_format, "fileSchema": file_schema, "files": files},
        indent=4).encode()
    put(manifest_key, manifest)
    put(manifest_key.rsplit("/", 1)[0] + "/manifest.checksum",
        hashlib.md5(manifest).hexdigest().encode())
    return [str(item["key"]) for item in files]
