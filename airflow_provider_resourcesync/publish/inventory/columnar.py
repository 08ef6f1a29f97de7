"""ORC and Parquet data files, read with pyarrow (the optional extra ``parquet``) a batch or a
stripe at a time, from a local copy whose size and MD5 were checked."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

from ...errors import InventoryError
from .manifest import column_name

__all__ = ["INSTALL", "columnar_rows"]

#: What to install to read ORC and Parquet reports.
INSTALL = "pip install 'airflow-provider-resourcesync[parquet]'"
_BATCH = 10_000


def columnar_rows(file: BinaryIO, file_format: str, columns: Sequence[str],
                  where: str) -> Iterator[tuple[Any, ...]]:
    """The rows of an ORC or Parquet ``file``: a tuple per row of the values of ``columns``
    (names as :func:`column_name` makes them; those the file lacks are None).

    :raises InventoryError: pyarrow is not installed (the message says what to install), or the
        file cannot be read, or it lacks a column its manifest names.
    """
    try:
        if file_format == "Parquet":
            import pyarrow.parquet as parquet
        else:
            import pyarrow.orc as orc
    except ImportError as exc:
        raise InventoryError(f"{where}: the report is in {file_format}, which needs pyarrow: "
                             f"{INSTALL} (or choose CSV for the inventory)") from exc
    try:
        if file_format == "Parquet":
            reader = parquet.ParquetFile(file)
            names = _names(reader.schema_arrow.names, columns, where)
            batches = reader.iter_batches(batch_size=_BATCH, columns=_present(names))
        else:
            reader = orc.ORCFile(file)
            names = _names(reader.schema.names, columns, where)
            batches = (reader.read_stripe(stripe, columns=_present(names))
                       for stripe in range(reader.nstripes))
        for batch in batches:
            values = [batch.column(name).to_pylist() if name else [None] * batch.num_rows
                      for name in names]
            yield from zip(*values, strict=True)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowException derive from these
        raise InventoryError(f"{where}: not a readable {file_format} file ({exc}); publish "
                             "from a report S3 wrote") from exc


def _names(present: Sequence[str], columns: Sequence[str], where: str) -> list[str]:
    """The file's own name for each column, or "" where the file lacks an optional one."""
    own = {column_name(name): name for name in present}
    missing = [name for name in ("key", "size", "lastmodifieddate", "etag") if name not in own]
    if missing:
        raise InventoryError(f"{where}: has no {', '.join(missing)} column, though its manifest "
                             "names it; publish from a report S3 wrote")
    return [own.get(name, "") for name in columns]


def _present(names: Sequence[str]) -> list[str]:
    return [name for name in names if name]
