"""S3 Inventory reports written as S3 writes them, for the tests: ``manifest.json`` with
``manifest.checksum`` beside it, data files in CSV gzip (every field quoted, no header, keys
URL-encoded as an HTML form is: a space as ``+``), Parquet or ORC (snake_case columns, plain keys).
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airflow_provider_resourcesync.publish.inventory import InventoryObject
from airflow_provider_resourcesync.testing.reports import Put, csv_gzip, form_encoded, put_report

CREATED = datetime(2026, 11, 25, 1, 0, tzinfo=UTC)
#: The bucket the reports are of, unless told.
SOURCE = "source"
#: S3's CSV columns, in its order, and the same for ORC and Parquet.
CSV_COLUMNS = ("Bucket", "Key", "VersionId", "IsLatest", "IsDeleteMarker", "Size",
               "LastModifiedDate", "ETag", "StorageClass")
SNAKE = {"Bucket": "bucket", "Key": "key", "VersionId": "version_id", "IsLatest": "is_latest",
         "IsDeleteMarker": "is_delete_marker", "Size": "size",
         "LastModifiedDate": "last_modified_date", "ETag": "e_tag",
         "StorageClass": "storage_class", "EncryptionStatus": "encryption_status"}
MANIFEST = "inventory/source/daily/2026-11-25T01-00Z/manifest.json"


def s3_put(client: Any, bucket: str) -> Put:
    return lambda key, data: client.put_object(Bucket=bucket, Key=key, Body=data)


def directory_put(root: Path) -> Put:
    def put(key: str, data: bytes) -> None:
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return put


def csv_row(item: InventoryObject, columns: Sequence[str] = CSV_COLUMNS,
            bucket: str = SOURCE) -> list[str]:
    values = {
        "Bucket": bucket, "Key": form_encoded(item.key), "VersionId": item.version_id or "",
        "IsLatest": str(item.is_latest).lower(),
        "IsDeleteMarker": str(item.is_delete_marker).lower(),
        "Size": "" if item.is_delete_marker else str(item.size),
        "LastModifiedDate": item.last_modified.strftime("%Y-%m-%dT%H:%M:%S.")
        + f"{item.last_modified.microsecond // 1000:03d}Z",
        "ETag": item.etag, "StorageClass": "STANDARD", "EncryptionStatus": item.encryption or ""}
    return [values[name] for name in columns]


def columnar(items: Sequence[InventoryObject], file_format: str,
             columns: Sequence[str] = CSV_COLUMNS, bucket: str = SOURCE) -> bytes:
    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as parquet

    values = {
        "Bucket": pa.array([bucket] * len(items)),
        "Key": pa.array([item.key for item in items]),
        "VersionId": pa.array([item.version_id for item in items], pa.string()),
        "IsLatest": pa.array([item.is_latest for item in items]),
        "IsDeleteMarker": pa.array([item.is_delete_marker for item in items]),
        "Size": pa.array([None if item.is_delete_marker else item.size for item in items],
                         pa.int64()),
        "LastModifiedDate": pa.array([item.last_modified for item in items],
                                     pa.timestamp("ms", tz="UTC")),
        "ETag": pa.array([item.etag or None for item in items], pa.string()),
        "StorageClass": pa.array(["STANDARD"] * len(items)),
        "EncryptionStatus": pa.array([item.encryption for item in items], pa.string()),
    }
    table = pa.table({SNAKE[name]: values[name] for name in columns})
    sink = io.BytesIO()
    if file_format == "Parquet":
        parquet.write_table(table, sink)
    else:
        orc.write_table(table, sink)
    return sink.getvalue()


def file_schema(file_format: str, columns: Sequence[str] = CSV_COLUMNS) -> str:
    if file_format == "CSV":
        return ", ".join(columns)
    if file_format == "Parquet":
        fields = " ".join(f"optional binary {SNAKE[name]} (UTF8);" for name in columns)
        return f"message s3.inventory {{ {fields} }}"
    return "struct<" + ",".join(f"{SNAKE[name]}:string" for name in columns) + ">"


def write_report(put: Put, parts: Sequence[Sequence[InventoryObject]], *,
                 file_format: str = "CSV", columns: Sequence[str] = CSV_COLUMNS,
                 manifest_key: str = MANIFEST, created: datetime = CREATED,
                 schema: str | None = None, bucket: str = SOURCE) -> list[str]:
    """A report of ``bucket``'s ``parts`` (one data file each) under ``manifest_key``'s
    configuration; the data files' keys."""
    def data_files() -> Iterator[tuple[str, bytes]]:
        for number, items in enumerate(parts):
            if file_format == "CSV":
                yield f"part-{number}.csv.gz", csv_gzip(csv_row(item, columns, bucket)
                                                        for item in items)
            else:
                yield (f"part-{number}.{file_format.lower()}",
                       columnar(items, file_format, columns, bucket))
    return put_report(put, manifest_key, data_files(), file_format=file_format,
                      file_schema=schema if schema is not None else file_schema(file_format,
                                                                                columns),
                      created=created, source_bucket=bucket)
