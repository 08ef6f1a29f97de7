"""``with`` support for the protocol's readers and writers, in one place."""

from __future__ import annotations

from contextlib import AbstractContextManager
from types import TracebackType
from typing import Self


class ClosedOnExit(AbstractContextManager["ClosedOnExit"]):
    """Readers: leaving the ``with`` block, by any way, calls ``close()``."""

    def __enter__(self) -> Self:
        return self

    def close(self) -> None:
        raise NotImplementedError

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class FinishedOnSuccess(AbstractContextManager["FinishedOnSuccess"]):
    """Writers: a clean exit finishes the output with ``close()``; an error leaves it unfinished,
    so a truncated document or package cannot pass for a complete one."""

    def __enter__(self) -> Self:
        return self

    def close(self) -> None:
        raise NotImplementedError

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
