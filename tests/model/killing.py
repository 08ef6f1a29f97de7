"""A run killed at a write, in process: from its n-th write on, every write, staged commit,
delete and move of a destination raises :class:`Killed`, so no clean-up code of the run (a
``finally``, an ``__exit__``) changes the destination after the kill, as none could after a
SIGKILL (tests/killing.py kills children for real; a model test makes thousands of runs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from airflow_provider_resourcesync.storage.base import Destination, Staged

D = TypeVar("D", bound=Destination)


class Killed(BaseException):
    """The run was killed at a write: no ``except Exception`` of the run catches it."""


#: Where a run is killed: at its n-th change of the destination, or at the first change (the
#: action, ``"write"``, ``"delete"`` or ``"move"``, and the key) the predicate holds for.
KillAt = int | Callable[[str, str], bool]


def killed_at(destination: D, at: KillAt) -> D:
    """``destination``, changed in place to fail from the change ``at`` on."""
    changes = 0
    killed = False

    def step(action: str, key: str) -> None:
        nonlocal changes, killed
        changes += 1
        killed = killed or (changes >= at if isinstance(at, int) else at(action, key))
        if killed:
            raise Killed(f"killed at change {changes} ({action} {key})")

    real_stage, real_write = destination.stage, destination.write_bytes
    real_delete, real_move = destination.delete, destination.move

    def stage(key: str) -> Staged:
        staged = real_stage(key)
        commit = staged.commit
        staged.commit = lambda info: (step("write", key), commit(info))[1]  # type: ignore[method-assign]
        return staged

    def write_bytes(key: str, data: bytes, content_type: str, *,
                    cache_control: str | None = None) -> None:
        step("write", key)
        real_write(key, data, content_type, cache_control=cache_control)

    def delete(key: str) -> None:
        step("delete", key)
        real_delete(key)

    def move(key: str, to_key: str) -> None:
        step("move", key)
        real_move(key, to_key)

    destination.stage = stage  # type: ignore[method-assign]
    destination.write_bytes = write_bytes  # type: ignore[method-assign]
    destination.delete = delete  # type: ignore[method-assign]
    destination.move = move  # type: ignore[method-assign]
    return destination
