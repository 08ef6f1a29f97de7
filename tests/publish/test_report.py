"""S3 Inventory reports as S3 delivers them, read from moto's S3 over HTTP (and from a
directory): manifest checked, data files checked as they are read, keys decoded, rows ordered."""

from __future__ import annotations

import hashlib
import json
import random
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from airflow_provider_resourcesync.errors import InventoryError
from airflow_provider_resourcesync.publish.inventory import (
    DirectoryReportReader,
    InventoryObject,
    InventoryReport,
    S3ReportReader,
    Skipped,
    bounded,
    read_report,
    rows,
    runs,
)
from airflow_provider_resourcesync.testing import SourceServer

from .reports import CREATED, CSV_COLUMNS, MANIFEST, SOURCE, directory_put, s3_put, write_report

T = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
#: Keys S3 Inventory's CSV encoding has to carry: space and plus, percent, tilde and star,
#: quotes and commas (CSV's own syntax), non-ASCII, and names that sort around '/'.
TRICKY = ["a b+c", "100%/x", "~tilde*", 'quo"te,comma', "é/ü", "日本/語", "a/b", "a-b", "a.b",
          "a0", "plain"]


def objects(keys: list[str]) -> list[InventoryObject]:
    return [InventoryObject(key, n, hashlib.md5(key.encode()).hexdigest(),
                            T + timedelta(seconds=n, milliseconds=n))
            for n, key in enumerate(keys)]


def utf8_sorted(items: list[InventoryObject]) -> list[InventoryObject]:
    return sorted(items, key=lambda item: item.key.encode())


def directory_report(root: Path) -> InventoryReport:
    """The report at :data:`MANIFEST` under ``root``, of the bucket :data:`SOURCE`."""
    return read_report(DirectoryReportReader(root), MANIFEST, bucket=SOURCE)


def test_a_csv_gzip_report_in_s3_reads_every_key_decoded(s3_client: Any, bucket: str) -> None:
    items = objects(TRICKY)
    write_report(s3_put(s3_client, bucket), [items[6:], items[:6]])
    report = read_report(S3ReportReader(s3_client, bucket), MANIFEST, bucket=SOURCE)
    assert report.created == CREATED
    assert list(report.objects()) == items[6:] + items[:6]
    assert list(report.ordered()) == utf8_sorted(items)


def test_prefix_and_exclude_prefix_keep_the_publication_out(s3_client: Any, bucket: str) -> None:
    items = objects(["data/a", "data/pub/resourcesync/changedump.xml", "data/pub/x", "other"])
    write_report(s3_put(s3_client, bucket), [items])
    report = read_report(S3ReportReader(s3_client, bucket), MANIFEST, "data/", bucket=SOURCE,
                         exclude_prefix="data/pub/")
    assert [item.key for item in report.ordered()] == ["data/a"]


@pytest.mark.parametrize("file_format", ["CSV", "Parquet"])
@pytest.mark.parametrize("batch", [4096, 2])
def test_folder_markers_are_not_published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          file_format: str, batch: int) -> None:
    """Keys ending with ``/`` (the S3 console's folders) are left out, whether rows are
    checked a batch at a time or, a batch holding a row S3 would not write, one by one."""
    monkeypatch.setattr(rows, "BATCH", batch)
    items = objects(["folder/", "folder/a", "no\u00a0break", "x/y/", "x/y/z"])
    write_report(directory_put(tmp_path), [items], file_format=file_format)
    report = directory_report(tmp_path)
    assert [item.key for item in report.ordered()] == ["folder/a", "no\u00a0break", "x/y/z"]


@pytest.mark.parametrize("file_format", ["Parquet", "ORC"])
def test_parquet_and_orc_reports_read_as_csv_does(s3_client: Any, bucket: str, tmp_path: Path,
                                                  file_format: str) -> None:
    items = objects(TRICKY)
    write_report(s3_put(s3_client, bucket), [items[:4], items[4:]], file_format=file_format)
    from_s3 = read_report(S3ReportReader(s3_client, bucket), MANIFEST, bucket=SOURCE)
    assert list(from_s3.ordered()) == utf8_sorted(items)
    write_report(directory_put(tmp_path), [items], file_format=file_format)
    assert list(directory_report(tmp_path).objects()) == items


@pytest.mark.parametrize("file_format", ["CSV", "Parquet", "ORC"])
@pytest.mark.parametrize("batch", [4096, 2])
def test_an_etag_is_an_md5_only_where_the_encryption_status_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_format: str, batch: int) -> None:
    """S3 documents a single-part ETag as the MD5 of the bytes for objects stored unencrypted or
    with SSE-S3 only; every ETag of SSE-KMS, DSSE-KMS and SSE-C objects, and of a report
    without the column, is only an ETag (issue 27, item 5)."""
    monkeypatch.setattr(rows, "BATCH", batch)
    statuses = ["NOT-SSE", "SSE-S3", "SSE-KMS", "DSSE-KMS", "SSE-C", None, "SSE-S3"]
    items = [replace(item, encryption=status)
             for item, status in zip(objects([f"k{n}" for n in range(7)]), statuses,
                                     strict=True)]
    items[-1] = replace(items[-1], etag=items[-1].etag + "-3")  # multipart
    write_report(directory_put(tmp_path), [items], file_format=file_format,
                 columns=(*CSV_COLUMNS, "EncryptionStatus"))
    ordered = list(directory_report(tmp_path).ordered())
    assert ordered == items
    assert [item.md5 for item in ordered] == [items[0].etag, items[1].etag] + [None] * 5
    write_report(directory_put(tmp_path / "without"), [items], file_format=file_format)
    assert [item.md5 for item in directory_report(tmp_path / "without").ordered()] == [None] * 7


def test_a_report_without_the_optional_version_columns_reads(tmp_path: Path) -> None:
    items = objects(["b", "a"])
    columns = ("Bucket", "Key", "Size", "LastModifiedDate", "ETag")
    write_report(directory_put(tmp_path), [items], columns=columns)
    assert list(directory_report(tmp_path).ordered()) == \
        utf8_sorted(items)


def test_a_versioned_report_orders_the_latest_versions_and_delete_markers(
        s3_client: Any, bucket: str) -> None:
    rows = [
        InventoryObject("kept", 3, "e2", T, "v2", True),
        InventoryObject("kept", 2, "e1", T - timedelta(days=1), "v1", False),
        InventoryObject("gone", 0, "", T + timedelta(hours=1), "v4", True, True),
        InventoryObject("gone", 5, "e3", T - timedelta(days=2), "v3", False),
    ]
    write_report(s3_put(s3_client, bucket), [rows[2:], rows[:2]])
    report = read_report(S3ReportReader(s3_client, bucket), MANIFEST, bucket=SOURCE)
    assert list(report.ordered()) == [rows[2], rows[0]]


def test_two_latest_versions_of_one_key_are_an_error(tmp_path: Path) -> None:
    rows = [InventoryObject("k", 1, "e1", T, "v1"), InventoryObject("k", 2, "e2", T, "v2")]
    write_report(directory_put(tmp_path), [rows])
    with pytest.raises(InventoryError, match="'k' comes twice") as caught:
        list(directory_report(tmp_path).ordered())
    assert "manifest.json" in str(caught.value) and not caught.value.rerun_helps


# -- another bucket's report -------------------------------------------------------------------

def test_another_buckets_report_is_refused_naming_both_buckets(s3_client: Any,
                                                               bucket: str) -> None:
    """A shared inventory bucket holds many buckets' reports side by side: one path segment
    off, and the manifest read is another bucket's (its every object would be 'deleted')."""
    write_report(s3_put(s3_client, bucket), [objects(["a", "b"])], bucket="other")
    with pytest.raises(InventoryError) as caught:
        read_report(S3ReportReader(s3_client, bucket), MANIFEST, bucket=SOURCE)
    message = str(caught.value)
    assert f"s3://{bucket}/{MANIFEST}" in message and "\n" not in message
    assert "of bucket 'other' (its sourceBucket), not 'source', the bucket published" in message
    assert not caught.value.rerun_helps


@pytest.mark.parametrize("file_format", ["CSV", "Parquet", "ORC"])
@pytest.mark.parametrize("batch", [4096, 2])
def test_rows_of_another_bucket_are_refused_naming_both_buckets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_format: str, batch: int) -> None:
    """A data file whose rows name another bucket than the manifest does (and than the bucket
    published), whether CSV rows are checked a batch at a time or one by one."""
    monkeypatch.setattr(rows, "BATCH", batch)
    keys = write_report(directory_put(tmp_path), [objects(["a", "b", "c"])],
                        file_format=file_format, bucket="other")
    rewrite_manifest(tmp_path, {"sourceBucket": SOURCE})
    with pytest.raises(InventoryError) as caught:
        list(directory_report(tmp_path).ordered())
    message = str(caught.value)
    assert keys[0] in message and "row 1 is of bucket 'other', not 'source'" in message
    assert not caught.value.rerun_helps


# -- bad input ---------------------------------------------------------------------------------

def reader_with_report(tmp_path: Path, **options: Any) -> tuple[DirectoryReportReader, list[str]]:
    keys = write_report(directory_put(tmp_path), [objects(["a", "b"]), objects(["c"])],
                        **options)
    return DirectoryReportReader(tmp_path), keys


def rewrite_manifest(tmp_path: Path, change: dict[str, Any]) -> None:
    """Change fields of the manifest, and its checksum with it (as a report S3 wrote so)."""
    path = tmp_path / MANIFEST
    document = json.loads(path.read_bytes())
    document.update(change)
    data = json.dumps(document).encode()
    path.write_bytes(data)
    path.with_name("manifest.checksum").write_text(hashlib.md5(data).hexdigest())


def test_a_manifest_that_fails_its_checksum_is_refused(tmp_path: Path) -> None:
    reader, _ = reader_with_report(tmp_path)
    path = tmp_path / MANIFEST
    path.write_bytes(path.read_bytes().replace(b'"version"', b'"versio_"'))
    with pytest.raises(InventoryError, match=r"does not match manifest\.checksum") as caught:
        read_report(reader, MANIFEST, bucket=SOURCE)
    assert str(tmp_path / MANIFEST) in str(caught.value)
    assert not caught.value.rerun_helps and "re-run" not in str(caught.value)


def test_a_manifest_without_its_checksum_is_refused(tmp_path: Path) -> None:
    reader, _ = reader_with_report(tmp_path)
    (tmp_path / MANIFEST).with_name("manifest.checksum").unlink()
    with pytest.raises(InventoryError, match=r"manifest\.checksum: cannot be read"):
        read_report(reader, MANIFEST, bucket=SOURCE)


@pytest.mark.parametrize(("change", "message"), [
    ({"fileFormat": "JSON"}, "unknown fileFormat 'JSON'"),
    ({"fileSchema": "Bucket, Size, LastModifiedDate, ETag"}, "no Key column"),
    ({"fileSchema": "Bucket, Key, Size, LastModifiedDate"}, "no ETag; add them to the "
                                                            "inventory configuration"),
    ({"fileSchema": "Bucket, Key"}, "no Size, LastModifiedDate, ETag"),
    ({"creationTimestamp": "yesterday"}, "creationTimestamp is not milliseconds"),
    ({"files": [{"key": "x"}]}, "lacks a key, a size or an MD5checksum"),
    ({"sourceBucket": None}, "'sourceBucket' is missing"),
])
def test_a_manifest_s3_would_not_write_is_refused(tmp_path: Path, change: dict[str, Any],
                                                  message: str) -> None:
    reader, _ = reader_with_report(tmp_path)
    rewrite_manifest(tmp_path, change)
    with pytest.raises(InventoryError, match=message) as caught:
        read_report(reader, MANIFEST, bucket=SOURCE)
    assert "manifest.json" in str(caught.value) and not caught.value.rerun_helps


def test_a_missing_data_file_is_named(s3_client: Any, bucket: str) -> None:
    keys = write_report(s3_put(s3_client, bucket), [objects(["a"]), objects(["b"])])
    s3_client.delete_object(Bucket=bucket, Key=keys[1])
    report = read_report(S3ReportReader(s3_client, bucket), MANIFEST, bucket=SOURCE)
    with pytest.raises(InventoryError, match="NoSuchKey") as caught:
        list(report.ordered())
    assert f"s3://{bucket}/ key {keys[1]!r}" in str(caught.value)
    assert "s3:GetObject" in str(caught.value) and not caught.value.rerun_helps


@pytest.mark.parametrize("file_format", ["CSV", "Parquet"])
def test_a_truncated_data_file_is_refused(tmp_path: Path, file_format: str) -> None:
    reader, keys = reader_with_report(tmp_path, file_format=file_format)
    path = tmp_path / keys[0]
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InventoryError, match=f"{len(whole) // 2} bytes, the manifest says "
                                             f"{len(whole)}") as caught:
        list(read_report(reader, MANIFEST, bucket=SOURCE).ordered())
    assert keys[0] in str(caught.value) and "truncated" in str(caught.value)


def test_a_data_file_replaced_at_the_same_size_fails_its_md5(tmp_path: Path) -> None:
    reader, keys = reader_with_report(tmp_path)
    path = tmp_path / keys[1]
    forged = bytearray(path.read_bytes())
    forged[4] ^= 1  # the gzip header's mtime: every row still reads, only the MD5 tells
    path.write_bytes(bytes(forged))
    with pytest.raises(InventoryError, match=r"MD5 [0-9a-f]{32}, the manifest says") as caught:
        list(read_report(reader, MANIFEST, bucket=SOURCE).ordered())
    assert keys[1] in str(caught.value) and "corrupt or was replaced" in str(caught.value)


def csv_report(tmp_path: Path, lines: list[str]) -> DirectoryReportReader:
    """A CSV report whose one data file holds ``lines``, as they are."""
    import gzip

    write_report(directory_put(tmp_path), [[]])
    data = gzip.compress("".join(lines).encode())
    (tmp_path / MANIFEST).parent.parent.joinpath("data", "part-0.csv.gz").write_bytes(data)
    rewrite_manifest(tmp_path, {"files": [{"key": MANIFEST.rsplit("/", 2)[0]
                                                  + "/data/part-0.csv.gz",
                                           "size": len(data),
                                           "MD5checksum": hashlib.md5(data).hexdigest()}]})
    return DirectoryReportReader(tmp_path)


GOOD = '"source","k{n}","","true","false","{size}","2026-11-24T12:00:00.000Z","e","STANDARD"\n'


@pytest.mark.parametrize(("line", "message"), [
    ('"source","k","","true","false","1","2026-11-24T12:00:00.000Z","e"\n',
     "row 2 has 8 fields, the fileSchema names 9"),
    (GOOD.format(n=2, size="-1"), "row 2 has a bad size: '-1'"),
    (GOOD.format(n=2, size="1e3"), "row 2 has a bad size: '1e3'"),
    (GOOD.format(n=2, size="1").replace("2026-11-24T12", "2026-13-24T12"),
     "row 2 has a bad LastModifiedDate"),
    (GOOD.format(n=2, size="1").replace('"e"', '""'), "row 2 has no ETag"),
    (GOOD.format(n=2, size="1").replace('"true"', '"yes"'), "row 2 has 'yes' where true"),
    (GOOD.format(n=2, size="1").replace('"e"', '"e\nf"'),
     "row 2 has a control character in its ETag, VersionId or EncryptionStatus"),
    (GOOD.format(n=2, size="1").replace('""', '"v\x07"'),
     "row 2 has a control character in its ETag, VersionId or EncryptionStatus"),
    ('"sour"ce,"k3"\n', "not a whole CSV gzip file"),
    (GOOD.format(n=2, size="1").replace('"source"', '"other"'),
     "row 2 is of bucket 'other', not 'source', the bucket published"),
])
def test_csv_rows_that_break_the_schema_are_named(tmp_path: Path, line: str,
                                                  message: str) -> None:
    reader = csv_report(tmp_path, [GOOD.format(n=1, size="1"), line])
    with pytest.raises(InventoryError, match=message) as caught:
        list(read_report(reader, MANIFEST, bucket=SOURCE).ordered())
    assert "part-0.csv.gz" in str(caught.value) and not caught.value.rerun_helps
    assert "re-run" not in str(caught.value)


#: Ends of keys no URL can carry (after a ``k``), as S3 Inventory writes them in CSV: bytes
#: that are not UTF-8, a line feed, a '..' segment.
UNPUBLISHABLE = ["%FF%FE", "%0A", "/../etc"]


@pytest.mark.parametrize("file_format", ["CSV", "Parquet"])
@pytest.mark.parametrize("batch", [4096, 2])
def test_keys_no_url_can_carry_are_skipped_and_counted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_format: str, batch: int) -> None:
    """One bad key does not stop the report: it is left out and counted (a few named), and
    the other objects come out, whether rows are checked a batch at a time or one by one;
    a bad key's older versions are not counted again."""
    monkeypatch.setattr(rows, "BATCH", batch)
    good = [f"k{n}" for n in range(6)]
    if file_format == "CSV":
        older = GOOD.format(n="%0A", size="1").replace('"","true"', '"v0","false"')
        reader = csv_report(tmp_path, [GOOD.format(n=end, size="1") for end in (
            *range(3), *UNPUBLISHABLE)] + [older] + [GOOD.format(n=n, size="1")
                                                      for n in range(3, 6)])
        first = "'k\\udcff\\udcfe' is not valid UTF-8"
    else:
        older = InventoryObject("k\n", 1, "e", T, "v0", is_latest=False)
        items = [*objects([*good[:3], "k\x7f", "k\n", "k/../etc"]), older,
                 *objects(good[3:])]
        write_report(directory_put(tmp_path), [items], file_format=file_format)
        reader = DirectoryReportReader(tmp_path)
        first = "'k\\x7f' holds a control character, which no URL can carry"
    skipped = Skipped(share=0.5)
    report = read_report(reader, MANIFEST, bucket=SOURCE, skipped=skipped)
    assert [item.key for item in report.ordered()] == \
        good
    assert skipped.count == 3
    assert skipped.examples == [
        first, "'k\\n' holds a control character, which no URL can carry",
        "'k/../etc' has a '.' or '..' segment, which a URL client resolves away"]


def test_too_many_keys_skipped_fail_the_report_naming_a_few(tmp_path: Path) -> None:
    lines = [GOOD.format(n=n, size="1") for n in range(3)] + [
        GOOD.format(n=key, size="1") for key in UNPUBLISHABLE]
    reader = csv_report(tmp_path, lines)
    with pytest.raises(InventoryError, match=r"3 of 6 keys cannot be published as URLs, more "
                                             r"than the 1\.00% that may be skipped") as caught:
        list(read_report(reader, MANIFEST, bucket=SOURCE).ordered())
    assert "manifest.json" in str(caught.value) and "'k\\n' holds a control" in str(
        caught.value) and not caught.value.rerun_helps


def test_a_gzip_bomb_is_refused_in_bounded_memory_naming_the_data_file(tmp_path: Path) -> None:
    """A data file of 30 KB inflating to a row of 30 M fields (an empty field each: a list of
    240 MB, as csv would build it) is refused once its line passes 128 KiB, the data file and
    row named, with no more than a few MB allocated."""
    import tracemalloc

    reader = csv_report(tmp_path, [GOOD.format(n=1, size="1"), "," * 30_000_000 + "\n"])
    assert next((tmp_path / MANIFEST).parent.parent.glob("data/*")).stat().st_size < 100_000
    report = read_report(reader, MANIFEST, bucket=SOURCE)
    tracemalloc.start()
    try:
        with pytest.raises(InventoryError, match=r"part-0\.csv\.gz, row 2 is longer than "
                                                 r"131,072 bytes") as caught:
            list(report.ordered())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000 and not caught.value.rerun_helps


def test_rows_are_batched_by_their_text_as_well_as_their_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches close at a few KB of text here (16 MiB by default): the same objects."""
    monkeypatch.setattr(bounded, "BATCH_BYTES", 2_000)
    items = objects([f"k{n:03d}/{'x' * (n % 50 + 1)}" for n in range(300)])
    write_report(directory_put(tmp_path), [items])
    report = read_report(DirectoryReportReader(tmp_path), MANIFEST, bucket=SOURCE)
    assert list(report.ordered()) == \
        utf8_sorted(items)


def test_a_report_larger_than_memory_is_sorted_in_runs_on_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of a few entries, merged a few at a time, a few lines of each at a time: the order
    and the check for a key listed twice hold across runs."""
    monkeypatch.setattr(runs, "RUN_CHARACTERS", 2_000)
    monkeypatch.setattr(runs, "FAN_IN", 3)
    monkeypatch.setattr(runs, "_MERGE_LINES", 6)  # blocks of 2 lines: read ahead, refilled
    monkeypatch.setattr(runs, "_LEAST_BLOCK", 2)
    items = objects([f"{n}/{key}" for n in range(40) for key in TRICKY])
    random.Random(15).shuffle(items)
    write_report(directory_put(tmp_path), [items[:100], items[100:300], items[300:]])
    assert list(directory_report(tmp_path).ordered()) == \
        utf8_sorted(items)
    write_report(directory_put(tmp_path), [items, [items[123]]])
    with pytest.raises(InventoryError, match="comes twice"):
        list(directory_report(tmp_path).ordered())


def test_rows_checked_a_batch_at_a_time_read_as_rows_checked_one_by_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch holding a row S3 would not write as it is (a key with a no-break space, a
    quoted ETag, a time with an offset) is read row by row: the same objects."""
    monkeypatch.setattr(rows, "BATCH", 4)
    items = objects([f"k{n:02d}" for n in range(12)] + ["no\u00a0break"])
    write_report(directory_put(tmp_path), [items])
    fast = list(directory_report(tmp_path).ordered())
    def line(n: int) -> str:
        etag = hashlib.md5(f"k{n:02d}".encode()).hexdigest()
        etag = f'""{etag}""' if n == 5 else etag  # CSV for "<etag>", quotes and all
        time = f"2026-11-24T12:00:{n:02d}.{n:03d}" + ("+00:00" if n == 9 else "Z")
        return f'"source","k{n:02d}","","true","false","{n}","{time}","{etag}","STANDARD"\n'

    lines = [line(n) for n in range(12)]
    assert fast[:12] == items[:12] and fast[12].key == "no\u00a0break"
    reader = csv_report(tmp_path, lines)
    assert list(read_report(reader, MANIFEST, bucket=SOURCE).ordered()) == items[:12]


def test_a_delete_marker_row_needs_no_size_or_etag(tmp_path: Path) -> None:
    line = '"source","k","v","true","true","","2026-11-24T12:00:00.000Z","","STANDARD"\n'
    reader = csv_report(tmp_path, [line])
    assert list(read_report(reader, MANIFEST, bucket=SOURCE).ordered()) == [
        InventoryObject("k", 0, "", T, "v", True, True)]


def test_columnar_reports_without_pyarrow_say_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reader, _ = reader_with_report(tmp_path, file_format="Parquet")
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # as if not installed
    with pytest.raises(InventoryError, match=r"pip install 'airflow-provider-resourcesync"
                                             r"\[parquet\]'") as caught:
        list(read_report(reader, MANIFEST, bucket=SOURCE).objects())
    assert "Parquet" in str(caught.value)


def test_access_denied_names_bucket_key_and_action(s3_client: Any, bucket: str) -> None:
    write_report(s3_put(s3_client, bucket), [objects(["a"])])
    s3_client.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
            "Resource": f"arn:aws:s3:::{bucket}/*"}]}))
    with pytest.raises(InventoryError) as caught:
        read_report(S3ReportReader(s3_client, bucket), MANIFEST, bucket=SOURCE)
    message = str(caught.value)
    assert f"s3://{bucket}/ key {MANIFEST!r}" in message and "s3:GetObject" in message
    assert "allow s3:GetObject" in message and not caught.value.rerun_helps


def test_a_connection_dropped_mid_data_file_is_an_error_a_rerun_can_fix(
        server: SourceServer) -> None:
    """The loopback server speaks for S3 here: it can cut a body short, moto cannot."""
    client = boto3.client("s3", endpoint_url=server.base_url, aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"},
                                        retries={"max_attempts": 1}))
    keys = write_report(lambda key, data: server.put(f"/inventory/{key}", data),
                        [objects([f"{n}/{key}" for n in range(100) for key in TRICKY])])
    server.truncate(f"/inventory/{keys[0]}")
    reader = S3ReportReader(client, "inventory")
    with pytest.raises(InventoryError, match="s3:GetObject failed") as caught:
        list(read_report(reader, MANIFEST, bucket=SOURCE).ordered())
    assert f"s3://inventory/ key {keys[0]!r}" in str(caught.value)
    assert caught.value.rerun_helps and "re-run" in str(caught.value)
    assert len(list(read_report(reader, MANIFEST, bucket=SOURCE).ordered())) == 100 * len(TRICKY)
