"""The incremental operator: keep a mirror in step with its Source's changes, run after run."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from datetime import timedelta
from functools import partial
from typing import Any

from ..compat import BaseOperator, Context
from ..errors import ConfigurationError, NoCheckpointError
from ..hooks.destination import destination_from_url
from ..hooks.resourcesync import ResourceSyncHook
from ..lineage import Lineage
from ..shell import (
    capability_list_of,
    describe_at_well_known,
    describe_outlet_events,
    destination_outlets,
)
from ..shell.checkpoints import MIRROR, starting_checkpoint
from ..shell.durations import max_age
from ..shell.next_step import says_what_next
from ..storage.base import Destination
from ..storage.keys import KeyMapper
from ..sync.checkpoint import Checkpoint
from ..sync.incremental import DELETES, METHODS, ON_GAP, run_incremental
from ..writer import RESOURCE_LIST_MAX_AGE, check_well_known, saved_checkpoint

__all__ = ["ResourceSyncIncrementalOperator"]


class ResourceSyncIncrementalOperator(BaseOperator, Lineage):
    """Apply a ResourceSync Source's changes since the mirror's checkpoint (spec 12, 13): created
    and updated resources fetched and verified, deleted ones handled as ``deletes`` says. Each
    resource is brought to its latest state once, however often it changed.

    The checkpoint to start from is, in this order: the ``checkpoint`` argument; the checkpoint
    saved with the mirror (by the baseline, or the last incremental run); where the mirror has none,
    this task's XCom from its previous run; one of another mirror is set aside, logged (a DAG
    whose destination changed). The task returns the new checkpoint as its XCom; it
    never stands past a change that was not committed, so a failed run re-run (or a run repeated
    from the same checkpoint) loses and duplicates nothing. Unless templated, the destination is
    declared as an outlet ``Asset``.

    :param destination: ``file:///absolute/path``, ``/absolute/path`` or
        ``s3://bucket/prefix/`` (templated): a mirror made by a baseline.
    :param resourcesync_conn_id: the ``resourcesync`` connection to the Source.
    :param capability_list_url: the Source's Capability List (templated); None: discovered from
        the connection's base URL, the first one found.
    :param checkpoint: where to start (templated): a checkpoint as the baseline and incremental
        operators return it, e.g. ``"{{ ti.xcom_pull(task_ids='baseline') }}"``; None: the
        mirror's saved checkpoint, else this task's previous XCom.
    :param method: ``"auto"`` (the Change List if offered, else the Change Dump),
        ``"changelist"`` or ``"changedump"``.
    :param deletes: what a deleted resource does to the mirror's copy: ``"delete"`` it,
        ``"keep"`` it, or ``"move"`` it under ``move_to``.
    :param move_to: the key prefix deleted resources are moved under (templated).
    :param key_prefixes: URI prefix -> key prefix, as given to the baseline (templated).
    :param concurrency: the most resources in progress at once (fewer while more would not be
        faster); None: the connection's concurrency.
    :param public_url: the URL the destination is published under, as given to the baseline
        (templated); None: the one saved with the mirror.
    :param on_gap: what to do when the Source no longer offers every change after the
        checkpoint (its older Change Lists were rotated out of its index): ``"fail"`` the task
        with a ``ChangeGapError`` naming the checkpoint and the first change still offered, or
        run a ``"baseline"`` into the destination instead (removing what the Source no longer
        lists, unless ``deletes`` is ``"keep"`` or ``"move"``); the XCom is then the baseline's
        checkpoint.
    :param well_known: also write the mirror's Source Description at
        ``.well-known/resourcesync``, as the baseline does (see
        :class:`~.baseline.ResourceSyncBaselineOperator`): give it to both.
    :param resource_list_max_age: the mirror's own Resource List (what its Destinations
        baseline from) is rewritten once the oldest run whose changes it lacks is this old, so a
        Destination that reads no Change List lacks at most that much; None: only once the
        changes since it pass a tenth of it. A ``timedelta``; a day by default. Each rewrite
        costs a write of the whole list.
    :param aws_conn_id: the AWS connection for an ``s3://`` destination.

    OpenLineage: the Source's Capability List as input, the destination as output.
    """

    template_fields: Sequence[str] = ("destination", "capability_list_url", "checkpoint",
                                      "move_to", "key_prefixes", "public_url",
                                      "resourcesync_conn_id", "aws_conn_id")
    ui_color = "#d5f5e3"

    def __init__(self, *, destination: str, resourcesync_conn_id: str = "resourcesync_default",
                 capability_list_url: str | None = None, checkpoint: Any = None,
                 method: str = "auto", deletes: str = "delete", move_to: str = "deleted/",
                 key_prefixes: dict[str, str] | None = None, concurrency: int | None = None,
                 public_url: str | None = None, on_gap: str = "fail", well_known: bool = False,
                 resource_list_max_age: timedelta | None = RESOURCE_LIST_MAX_AGE,
                 aws_conn_id: str | None = "aws_default", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.resource_list_max_age = max_age(resource_list_max_age)
        ConfigurationError.unless_one_of("method", method, METHODS)
        ConfigurationError.unless_one_of("deletes", deletes, DELETES)
        ConfigurationError.unless_one_of("on_gap", on_gap, ON_GAP)
        self.destination = destination
        self.resourcesync_conn_id = resourcesync_conn_id
        self.capability_list_url = capability_list_url
        self.checkpoint = checkpoint
        self.method = method
        self.deletes = deletes
        self.move_to = move_to
        self.key_prefixes = key_prefixes
        self.concurrency = concurrency
        self.public_url = public_url
        self.on_gap = on_gap
        self.well_known = well_known
        self.aws_conn_id = aws_conn_id
        self.add_outlets(destination_outlets(destination))

    def execute(self, context: Context) -> dict[str, Any]:
        with says_what_next(self.log), closing(ResourceSyncHook(
                resourcesync_conn_id=self.resourcesync_conn_id)) as hook:
            if self.well_known:
                check_well_known(self.key_prefixes)
            destination = destination_from_url(self.destination, aws_conn_id=self.aws_conn_id)
            start = self._start(context, destination)
            capability_list = capability_list_of(hook, self.capability_list_url, self.log)
            self._reads_and_writes([capability_list], [self.destination])
            checkpoint = run_incremental(
                hook.get_conn(), destination,
                capability_list_url=capability_list,
                checkpoint=start, method=self.method, deletes=self.deletes,
                move_to=self.move_to, mapper=KeyMapper(self.key_prefixes),
                concurrency=self.concurrency or hook.policy.concurrency_per_host,
                public_url=self.public_url or None, on_gap=self.on_gap,
                resource_list_max_age=self.resource_list_max_age, log=self.log)
            if self.well_known:
                describe_at_well_known(destination, self.log)
        return describe_outlet_events(context, self.outlets, checkpoint.to_json())

    def _start(self, context: Context, destination: Destination) -> Checkpoint:
        """The checkpoint to start from (:func:`~..shell.checkpoints.starting_checkpoint`): the
        argument; the one saved with the mirror; this task's previous XCom where it has none."""
        found = starting_checkpoint(context, self.log, MIRROR, of=destination.url,
                                    saved=partial(saved_checkpoint, destination),
                                    given=self.checkpoint, previous="start")
        if found is None:
            raise NoCheckpointError(
                f"no checkpoint to start from: the mirror at {destination.url} has none saved and "
                "this task has no previous XCom of it. Run a baseline "
                "(ResourceSyncBaselineOperator) into it first, or pass checkpoint=")
        return Checkpoint.from_json(found.value)
