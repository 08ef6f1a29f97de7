"""Sorting more lines than memory holds: sorted runs in temporary files, merged.

Each run file is unlinked as it is made (:func:`tempfile.TemporaryFile`), so a killed run leaves
nothing behind. Lines are sorted as Python strings (code point order).
"""

from __future__ import annotations

import tempfile
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from operator import itemgetter
from typing import IO

__all__ = ["sorted_lines"]

#: Characters of lines held in memory before they are sorted and written out as a run.
RUN_CHARACTERS = 16_000_000
#: Runs merged at once; past it, runs are first merged into longer runs.
FAN_IN = 128
_WRITE = 10_000
#: Lines read ahead from all the runs of one merge, and at least from each.
_MERGE_LINES = 40_000
_LEAST_BLOCK = 500
_BUFFER = 1 << 15
_stripped = itemgetter(slice(None, -1))


def sorted_lines(batches: Iterable[list[str]]) -> Iterator[str]:
    """The lines of ``batches`` (no newline in any), sorted, in memory bounded by
    :data:`RUN_CHARACTERS`. Every batch is read before the first line comes out."""
    return chain.from_iterable(_sorted_blocks(batches))


def _sorted_blocks(batches: Iterable[list[str]]) -> Iterator[Iterable[str]]:
    """:func:`sorted_lines` in sorted pieces: taken a piece at a time, the lines cost no
    Python step each."""
    runs: list[IO[str]] = []
    try:
        held: list[str] = []
        size = 0
        for batch in batches:
            held += batch
            size += sum(map(len, batch))
            if size >= RUN_CHARACTERS:
                held.sort()
                runs.append(_run(held))
                held, size = [], 0
        held.sort()
        if not runs:
            yield held
            return
        if held:
            runs.append(_run(held))
        del held
        while len(runs) > FAN_IN:
            runs.append(_run(chain.from_iterable(_merged(runs[:FAN_IN]))))
            for run in runs[:FAN_IN]:
                run.close()
            del runs[:FAN_IN]
        yield from _merged(runs)
    finally:
        for run in runs:
            run.close()


def _run(lines: Iterable[str]) -> IO[str]:
    """A temporary file of ``lines``, one a line, to read from its start."""
    run = tempfile.TemporaryFile(  # noqa: SIM115 (read by the merge, closed by its caller)
        "w+", encoding="utf-8", newline="\n", buffering=_BUFFER)
    try:
        remaining = iter(lines)
        while batch := list(islice(remaining, _WRITE)):
            run.write("\n".join(batch) + "\n")
        run.seek(0)
    except BaseException:
        run.close()
        raise
    return run


def _merged(runs: list[IO[str]]) -> Iterator[Iterable[str]]:
    """The lines of sorted ``runs``, merged, in sorted pieces: from a block read ahead of
    each run, every line up to the least of the blocks' last lines (no line still unread can
    come before it), sorted at once (a sort that finds the sorted pieces and merges them)."""
    size = max(_LEAST_BLOCK, _MERGE_LINES // len(runs))
    blocks = [list(islice(run, size)) for run in runs]
    while live := [number for number, block in enumerate(blocks) if block]:
        bound = min(blocks[number][-1] for number in live)
        out: list[str] = []
        for number in live:
            block = blocks[number]
            cut = bisect_right(block, bound)
            if cut:
                out += block[:cut]
                blocks[number] = block[cut:] + list(islice(runs[number], cut))
        out.sort()
        yield map(_stripped, out)
