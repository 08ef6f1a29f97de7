"""The publisher's own records at the destination: gzip'd JSON lines, a head line first, then
one row a line, written staged (whole or not at all) and read back as a stream.

Our own format rather than a ResourceSync document: these records (a run's plan, the objects as
last published) carry what no ResourceSync document holds (ETags, versions, the run's window),
are read only by us, and are rewritten each run; ``json`` and ``gzip`` do the parsing.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..errors import DocumentError
from ..protocol.hashes import Hashes
from ..storage.base import Destination, ObjectInfo

__all__ = ["lines_writer", "read_lines", "write_lines"]

T = TypeVar("T")
_BAD = (ValueError, KeyError, TypeError, OSError, EOFError)


@contextmanager
def lines_writer(destination: Destination, key: str, head: dict[str, Any]
                 ) -> Iterator[Callable[[list[Any]], object]]:
    """A function that writes a row after ``head`` at ``key``; all are committed together on
    leaving the block without an error, and none otherwise."""
    with destination.stage(key) as staged:
        with gzip.GzipFile(fileobj=staged.file, mode="wb", mtime=0) as packed:
            text = io.TextIOWrapper(packed, encoding="utf-8", newline="\n")
            text.write(json.dumps(head) + "\n")
            yield lambda row: text.write(json.dumps(row, ensure_ascii=False) + "\n")
            text.flush()
            text.detach()
        staged.commit(ObjectInfo(destination.object_url(key), 0, Hashes(()),
                                 type="application/gzip"))


def write_lines(destination: Destination, key: str, head: dict[str, Any],
                rows: Iterable[list[Any]]) -> int:
    """``head`` and ``rows`` at ``key``, committed once all are written; how many rows."""
    count = 0
    with lines_writer(destination, key, head) as write:
        for row in rows:
            write(row)
            count += 1
    return count


def read_lines(destination: Destination, key: str, what: str,
               head_of: Callable[[dict[str, Any]], Any], row_of: Callable[[Any], T]
               ) -> tuple[Any, Iterator[T]]:
    """The head at ``key`` (made by ``head_of``) and its rows (each made by ``row_of``),
    streamed; ``what`` names the record in errors.

    :raises DocumentError: the record cannot be read, or a row or the head is not one we
        write (``head_of``/``row_of`` raise ValueError, KeyError or TypeError): the key and
        line are named.
    """
    url = destination.object_url(key)
    with _text(destination, key) as lines:
        try:
            head = head_of(json.loads(lines.readline()))
        except _BAD as exc:
            raise DocumentError(f"not {what} ({exc}): delete it and publish again", url=url,
                                line=1) from exc

    def rows() -> Iterator[T]:  # opens the record only when read: nothing held until then
        with _text(destination, key) as lines:
            lines.readline()
            for number, line in enumerate(lines, start=2):
                try:
                    yield row_of(json.loads(line))
                except _BAD as exc:
                    raise DocumentError(f"a line of {what} cannot be read ({exc}): delete it "
                                        "and publish again", url=url, line=number) from exc

    return head, rows()


@contextmanager
def _text(destination: Destination, key: str) -> Iterator[io.TextIOWrapper]:
    """The record at ``key``, unzipped, as text; closed on leaving."""
    with io.TextIOWrapper(gzip.GzipFile(fileobj=destination.open(key)),
                          encoding="utf-8") as lines:
        yield lines
