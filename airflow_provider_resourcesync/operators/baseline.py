"""Baseline operators: mirror everything a ResourceSync Source holds, whole or in shards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import closing
from typing import Any

from ..compat import BaseOperator, Context
from ..errors import ConfigurationError
from ..hooks.destination import destination_from_url
from ..hooks.resourcesync import ResourceSyncHook
from ..lineage import Lineage
from ..shell import (
    capability_list_of,
    describe_at_well_known,
    describe_outlet_events,
    destination_outlets,
)
from ..shell.next_step import says_what_next
from ..shell.rendered import rendered_value
from ..storage.keys import LAYOUTS, KeyMapper
from ..sync.baseline import METHODS, combine_shards, run_baseline
from ..sync.catch_up import TO_CATCH_UP
from ..sync.checkpoint import Checkpoint
from ..sync.processes import check_processes
from ..sync.shard import Shard
from ..units import counted
from ..writer import check_well_known

__all__ = ["ResourceSyncBaselineOperator", "ResourceSyncCombineShardsOperator"]


class ResourceSyncBaselineOperator(BaseOperator, Lineage):
    """Mirror every resource a ResourceSync Source lists (spec 10.1, 11.1) into a local directory
    or an S3 prefix. Resources the mirror already holds unchanged are not transferred again, so
    a re-run after a failure fetches only what is missing.

    The task returns the baseline's checkpoint (a JSON object) as its XCom. Unless sharded or
    templated, the destination is declared as an outlet ``Asset`` (``file:///path`` or
    ``s3://bucket/prefix``) so that other DAGs can be scheduled on the mirror.

    To spread a large baseline over several workers, map it over shards and combine them::

        shards = ResourceSyncBaselineOperator.partial(
            task_id="baseline", destination=..., shard_count=3).expand(shard_index=[0, 1, 2])
        ResourceSyncCombineShardsOperator(task_id="combine", destination=...,
                                          checkpoints=shards.output)

    :param destination: ``file:///absolute/path``, ``/absolute/path`` or
        ``s3://bucket/prefix/`` (templated).
    :param resourcesync_conn_id: the ``resourcesync`` connection to the Source.
    :param capability_list_url: the Source's Capability List (templated); None: discovered from
        the connection's base URL, the first one found.
    :param method: ``"auto"`` (the Resource List if offered, else the Resource Dump),
        ``"resourcelist"`` or ``"resourcedump"``.
    :param remove_missing: delete what the mirror holds and the Source no longer lists (on the
        Source's origins and the connection's allowed hosts only: another Source's resources
        in the same destination are kept).
    :param key_prefixes: URI prefix -> key prefix at the destination, e.g.
        ``{"https://example.org/data/": "data/"}`` (templated); None: keys named after scheme,
        host and path.
    :param key_layout: how keys name a URI's path: ``"readable"`` (its decoded text,
        ``https/example.org/a b/café.txt``) or ``"escaped"`` (``a%2520b/caf%25C3%25A9.txt``,
        the layout before there was a choice); None: the one the mirror keeps, readable for a
        new one. A mirror keeps the layout it was made with (recorded in
        ``.resourcesync/layout.json``; one made before is escaped): asking for another fails.
        The incremental and audit operators follow the mirror's.
    :param concurrency: the most resources in progress at once (fewer while more would not be
        faster); None: the connection's concurrency.
    :param processes: how many worker processes of this task fetch, verify and commit the
        resources, so that one task uses several cores (templated): 1: this process alone.
        None ("auto"): for a Resource List of at least 3,000 entries mirrored whole into a
        local directory, one per core left idle while the list was read (4 at most), else 1.
        ``concurrency`` and the connection's concurrency are split between the workers; the
        mirror and its state are the same either way.
    :param shard_index: the part of the resources this task mirrors, from 0 (templated, so it
        can be mapped with ``expand``).
    :param shard_count: how many parts the resources are split into.
    :param public_url: the ``http(s)`` URL the destination is published under, for a mirror
        others sync from (spec 14.8): the mirror's own documents name its resources there
        (templated); later runs keep it. None: the one saved with the mirror, else the
        destination's own URLs.
    :param well_known: also write the mirror's Source Description at
        ``.well-known/resourcesync`` of the destination (spec 6.3.2), for a destination served
        at the root of a host (or of the URL a resync user points at): Destinations then find
        the mirror from that URL alone. Refused with ``key_prefixes`` that could map a resource
        there. A sharded baseline leaves it to the combining task.
    :param aws_conn_id: the AWS connection for an ``s3://`` destination (None: boto3's default
        credentials).

    OpenLineage: the Source's Capability List as input, the destination as output.
    """

    template_fields: Sequence[str] = ("destination", "capability_list_url", "key_prefixes",
                                      "shard_index", "public_url", "resourcesync_conn_id",
                                      "aws_conn_id", "processes")
    ui_color = "#d6eaf8"

    def __init__(self, *, destination: str, resourcesync_conn_id: str = "resourcesync_default",
                 capability_list_url: str | None = None, method: str = "auto",
                 remove_missing: bool = False, key_prefixes: dict[str, str] | None = None,
                 key_layout: str | None = None,
                 concurrency: int | None = None, processes: int | str | None = None,
                 shard_index: int | None = None, shard_count: int | None = None,
                 public_url: str | None = None, well_known: bool = False,
                 aws_conn_id: str | None = "aws_default", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        ConfigurationError.unless_one_of("method", method, METHODS)
        if key_layout is not None:
            ConfigurationError.unless_one_of("key_layout", key_layout, LAYOUTS)
        if not isinstance(processes, str):  # a template is checked once rendered
            check_processes(processes)
        self.destination = destination
        self.resourcesync_conn_id = resourcesync_conn_id
        self.capability_list_url = capability_list_url
        self.method = method
        self.remove_missing = remove_missing
        self.key_prefixes = key_prefixes
        self.key_layout = key_layout
        self.concurrency = concurrency
        self.processes = processes
        self.shard_index = shard_index
        self.shard_count = shard_count
        self.public_url = public_url
        self.well_known = well_known
        self.aws_conn_id = aws_conn_id
        if shard_count is None:  # a shard is not the mirror: the combining task announces it
            self.add_outlets(destination_outlets(destination))

    def execute(self, context: Context) -> dict[str, Any]:
        with says_what_next(self.log), closing(ResourceSyncHook(
                resourcesync_conn_id=self.resourcesync_conn_id)) as hook:
            shard = self._shard()
            if self.well_known:
                check_well_known(self.key_prefixes)
            destination = destination_from_url(self.destination, aws_conn_id=self.aws_conn_id)
            capability_list = capability_list_of(hook, self.capability_list_url, self.log)
            self._reads_and_writes([capability_list], [self.destination])
            checkpoint = run_baseline(
                hook.get_conn(), destination, capability_list_url=capability_list,
                method=self.method, mapper=KeyMapper(self.key_prefixes, self.key_layout),
                remove_missing=self.remove_missing, shard=shard,
                concurrency=self.concurrency or hook.policy.concurrency_per_host,
                public_url=self.public_url or None,
                processes=rendered_value(self.processes, "processes"), log=self.log)
            if self.well_known and shard is None:
                describe_at_well_known(destination, self.log)
        self.log.info("Mirrored %s into %s%s: %s", checkpoint.document, checkpoint.destination,
                      f" (shard {shard})" if shard else "", _stats(checkpoint))
        return describe_outlet_events(context, self.outlets, checkpoint.to_json())

    def _shard(self) -> Shard | None:
        if self.shard_index is None and self.shard_count is None:
            return None
        if self.shard_index is None or self.shard_count is None:
            raise ConfigurationError(
                f"shard_index {self.shard_index!r} and shard_count {self.shard_count!r}: give "
                "both (a sharded baseline) or neither")
        return Shard(int(self.shard_index), int(self.shard_count))


class ResourceSyncCombineShardsOperator(BaseOperator):
    """Make one mirror out of the shards of a sharded baseline: the mirror's own state is built
    from each shard's view, and the combined checkpoint is returned as the XCom. Run it once every
    shard succeeded. The destination is declared as an outlet ``Asset`` unless templated.

    Where the Source's listing is older than changes its Change Lists offer (a Source that
    rewrites its Resource List only now and then), the shards leave the resources changed since
    out, and this task applies those changes once the mirror is whole (a late joiner's
    catch-up, spec 10.1 with 12.1): its checkpoint stands after them.

    :param destination: the shards' destination (templated).
    :param checkpoints: the shards' checkpoints (templated): the mapped task's ``.output``, or a
        template such as ``"{{ ti.xcom_pull(task_ids='baseline') }}"``.
    :param resourcesync_conn_id: the ``resourcesync`` connection the shards used, for the
        catch-up.
    :param key_prefixes: URI prefix -> key prefix, as given to the shards (templated).
    :param concurrency: the most resources the catch-up has in progress at once; None: the
        connection's concurrency.
    :param well_known: also write the mirror's Source Description at
        ``.well-known/resourcesync`` (see :class:`ResourceSyncBaselineOperator`).
    :param aws_conn_id: the AWS connection for an ``s3://`` destination.
    """

    template_fields: Sequence[str] = ("destination", "checkpoints", "key_prefixes",
                                      "resourcesync_conn_id", "aws_conn_id")
    ui_color = "#d6eaf8"

    def __init__(self, *, destination: str, checkpoints: Any,
                 resourcesync_conn_id: str = "resourcesync_default",
                 key_prefixes: dict[str, str] | None = None, concurrency: int | None = None,
                 well_known: bool = False, aws_conn_id: str | None = "aws_default",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.destination = destination
        self.checkpoints = checkpoints
        self.resourcesync_conn_id = resourcesync_conn_id
        self.key_prefixes = key_prefixes
        self.concurrency = concurrency
        self.well_known = well_known
        self.aws_conn_id = aws_conn_id
        self.add_outlets(destination_outlets(destination))

    def execute(self, context: Context) -> dict[str, Any]:
        with says_what_next(self.log), closing(ResourceSyncHook(
                resourcesync_conn_id=self.resourcesync_conn_id)) as hook:
            shards = [Checkpoint.from_json(item) for item in _listed(self.checkpoints)]
            destination = destination_from_url(self.destination, aws_conn_id=self.aws_conn_id)
            # the connection only where there is something to catch up with
            late = any(shard.stats.get(TO_CATCH_UP) for shard in shards)
            combined = combine_shards(
                destination, shards, client=hook.get_conn() if late else None,
                mapper=KeyMapper(self.key_prefixes), log=self.log,
                concurrency=(self.concurrency or hook.policy.concurrency_per_host) if late else 1)
            if self.well_known:
                describe_at_well_known(destination, self.log)
        self.log.info("Combined %s shards into the mirror at %s: %s", len(shards),
                      combined.destination, _stats(combined))
        return describe_outlet_events(context, self.outlets, combined.to_json())


def _listed(value: Any) -> list[Any]:
    """Checkpoints as given: a list (or a lazy XCom sequence) of JSON objects, one object, or
    their rendering by a template (JSON, or Python's ``repr`` of the list: what
    ``{{ ti.xcom_pull(...) }}`` renders to)."""
    value = rendered_value(value, "checkpoints")
    if isinstance(value, Mapping):
        return [value]
    if isinstance(value, Sequence):
        return list(value[:])  # a slice: one request for a lazy XCom sequence
    raise ConfigurationError(f"checkpoints: not a list of checkpoints: {value!r}")


def _stats(checkpoint: Checkpoint) -> str:
    return counted(checkpoint.stats)
