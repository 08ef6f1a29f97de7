"""Where a task starts, found in one order by the incremental operator, the Change List sensors
and the publishing operator: the checkpoint it is given, else the one saved with its
destination, else (for a task that keeps its place in its XCom) this task's previous XCom;
logged with where it was found."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..compat import Context
from ..errors import ConfigurationError
from ..sync.checkpoint import Checkpoint
from ..sync.log import Log
from .rendered import rendered_value

__all__ = ["MIRROR", "PUBLICATION", "Found", "Saver", "starting_checkpoint"]

#: What a task does with its previous XCom: ``"start"`` from it where nothing is saved;
#: ``"compare"`` it with the one saved, warning where they differ (and never ask for it where
#: nothing is saved: Airflow logs an ERROR for an XCom it does not find, alarming in every first
#: run).
Previous = Literal["start", "compare"]


@dataclass(frozen=True, slots=True)
class Saver:
    """What saves the checkpoints a task looks for: its ``name``, and ``describe``, a
    checkpoint of it in words for the log (raising ``ConfigurationError`` for one it cannot
    read)."""

    name: str
    describe: Callable[[dict[str, Any]], str]


def _sync_checkpoint(value: dict[str, Any]) -> str:
    checkpoint = Checkpoint.from_json(value)
    return (f"the {checkpoint.kind} checkpoint of {checkpoint.document} at "
            f"{checkpoint.position.time or 'the first change'}")


#: A mirror: its checkpoint is a sync's (:class:`~..sync.checkpoint.Checkpoint`).
MIRROR = Saver("mirror", _sync_checkpoint)
#: A publication: its checkpoint is the state it saved, up to a time.
PUBLICATION = Saver("publication", lambda value: f"published up to {value.get('time')}")


@dataclass(frozen=True, slots=True)
class Found:
    """A checkpoint (as JSON) and where it was found."""

    value: dict[str, Any]
    where: str


def starting_checkpoint(context: Context, log: Log, saver: Saver, *, of: str | None,
                        saved: Callable[[], dict[str, Any] | None], given: Any = None,
                        previous: Previous | None = None) -> Found | None:
    """The checkpoint to start from, logged with where it was found: ``given`` (the task's
    argument); else ``saved()``, the one saved with the destination; else, with ``previous``
    ``"start"``, this task's previous XCom. None: none of them has one.

    :param of: the destination's URL (None: none given); a checkpoint given, or an XCom, of
        another destination (a DAG whose destination changed) is set aside, logged.
    :raises ConfigurationError: a checkpoint found that is not one.
    """
    found = _given(rendered_value(given, "checkpoint"), of, log)
    if found is None and (value := saved()) is not None:
        found = Found(value, f"the {saver.name}'s saved checkpoint")
        if previous == "compare":
            _compare(_previous(context), found.value, log)
    elif found is None and previous == "start":
        found = _given(_previous(context), of, log,
                       f"this task's previous XCom (the {saver.name} has none saved)")
    if found is not None:
        log.info("Starting from %s: %s", found.where, saver.describe(found.value))
    return found


def _given(value: Any, of: str | None, log: Log, where: str = "the argument") -> Found | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"checkpoint from {where}: not a checkpoint: {value!r:.200}")
    theirs = value.get("destination")
    if of is not None and theirs is not None and str(theirs).rstrip("/") != of.rstrip("/"):
        log.warning("The checkpoint from %s is of the mirror at %s, not %s : not used", where,
                    theirs, of)
        return None
    return Found(dict(value), where)


def _previous(context: Context) -> Any:
    """This task's XCom from its previous run (of the same map index), if any."""
    ti = context["ti"]
    return rendered_value(ti.xcom_pull(task_ids=ti.task_id, include_prior_dates=True,
                                       map_indexes=ti.map_index), "previous XCom")


def _compare(previous: Any, saved: dict[str, Any], log: Log) -> None:
    """Warn where this task's previous XCom does not hold the checkpoint saved (what it holds
    beside, counts say, aside)."""
    if previous is None:
        return
    held = {name: previous.get(name) for name in saved} if isinstance(previous, Mapping) \
        else previous
    if held != saved:
        log.warning("This task's previous XCom (%s) is not the checkpoint saved with the "
                    "destination: starting from the saved one, which the documents agree with",
                    str(previous)[:200])
