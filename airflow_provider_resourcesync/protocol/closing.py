"""``with`` support for the protocol's readers and writers, in one place."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Self


class _Closeable(AbstractContextManager["_Closeable"]):
    """``with obj:`` gives ``obj``; subclasses say when leaving the block calls ``close()``."""

    def __enter__(self) -> Self:
        return self

    def close(self) -> None:
        raise NotImplementedError


class ClosedOnExit(_Closeable):
    """Readers: leaving the ``with`` block, by any way, calls ``close()``."""

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class FinishedOnSuccess(_Closeable):
    """Writers: a clean exit finishes the output with ``close()``; an error leaves it unfinished,
    so a truncated document or package cannot pass for a complete one."""

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        if exc_type is None:
            self.close()
