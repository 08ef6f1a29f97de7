"""Sensors on a Source's Change List (12.1) or Change List Index (12.2), from a mirror's
checkpoint: new changes after it, or the list it is in closed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..client.navigate import capability_documents, choose_capability
from ..client.watch import Plan, Sighting, drive
from ..compat import BaseSensorOperator, Context, PokeReturnValue, conf
from ..errors import ChangeGapError, NoCheckpointError, ResourceSyncError
from ..hooks.destination import DestinationURL, destination_from_url
from ..hooks.resourcesync import ResourceSyncHook
from ..protocol.model import Capability
from ..protocol.position import ChangePosition
from ..shell import capability_list_of
from ..shell.checkpoints import MIRROR, starting_checkpoint
from ..shell.next_step import says_what_next
from ..sync.checkpoint import Checkpoint
from ..triggers.changelist import (
    ResourceSyncChangeListTrigger,
    ResourceSyncClosedChangeListTrigger,
    check_intervals,
)
from ..writer import saved_checkpoint

__all__ = ["ResourceSyncChangeListSensor", "ResourceSyncClosedChangeListSensor"]


@dataclass(frozen=True, slots=True)
class _Watch:
    """What one execution watches, resolved at its first poke."""

    hook: ResourceSyncHook
    change_list_url: str
    position: ChangePosition


class _ChangeListWatchSensor(BaseSensorOperator):
    """Watch the Source's Change List from a mirror's checkpoint; see the subclasses. Where the
    Source no longer offers every change after the checkpoint (its older lists rotated away),
    the task fails with ``ChangeGapError``: waiting cannot help, a baseline must run.

    :param resourcesync_conn_id: the ``resourcesync`` connection to the Source.
    :param capability_list_url: the Source's Capability List (templated); None: discovered from
        the connection's base URL, the first one found.
    :param change_list_url: the Change List or Change List Index to watch (templated); None: the
        one the Capability List points at.
    :param checkpoint: where the mirror stands (templated): a checkpoint as the sync operators
        return it, or a template rendering one, e.g.
        ``"{{ ti.xcom_pull(task_ids='baseline') }}"``; None: the one saved at ``destination``.
    :param destination: the mirror whose saved checkpoint to use when ``checkpoint`` is None
        (templated): ``file:///absolute/path``, ``/absolute/path`` or ``s3://bucket/prefix/``.
    :param aws_conn_id: the AWS connection for an ``s3://`` destination (None: boto3's default
        credentials).
    :param deferrable: wait in the triggerer rather than in a worker slot; by default as
        Airflow's ``[operators] default_deferrable`` says (False unless set).
    :param poll_interval: when deferred, seconds between polls after a document changed; None:
        ``poke_interval``.
    :param max_poll_interval: when deferred, the longest wait between polls, reached while
        nothing changes; None: ten times ``poll_interval``.
    """

    template_fields: Sequence[str] = ("capability_list_url", "change_list_url", "checkpoint",
                                      "destination", "resourcesync_conn_id", "aws_conn_id")
    ui_color = "#d6eaf8"
    trigger_class: type[ResourceSyncChangeListTrigger | ResourceSyncClosedChangeListTrigger]

    def __init__(self, *, resourcesync_conn_id: str = "resourcesync_default",
                 capability_list_url: str | None = None, change_list_url: str | None = None,
                 checkpoint: dict[str, Any] | str | None = None, destination: str | None = None,
                 aws_conn_id: str | None = "aws_default",
                 deferrable: bool = conf.getboolean("operators", "default_deferrable",
                                                    fallback=False),
                 poll_interval: float | None = None, max_poll_interval: float | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.resourcesync_conn_id = resourcesync_conn_id
        self.capability_list_url = capability_list_url
        self.change_list_url = change_list_url
        self.checkpoint = checkpoint
        self.destination = destination
        self.aws_conn_id = aws_conn_id
        self.deferrable = deferrable
        self.poll_interval = self.poke_interval if poll_interval is None else poll_interval
        self.max_poll_interval = (10 * self.poll_interval if max_poll_interval is None
                                  else max_poll_interval)
        check_intervals(self.poll_interval, self.max_poll_interval)
        self._watch: _Watch | None = None

    # -- running ---------------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        try:
            with says_what_next(self.log):
                if not self.deferrable:
                    return super().execute(context)
                seen = self._look(context)
                if seen.is_done:
                    return seen.to_json()
                watch = self._watching(context)
                self.defer(trigger=self.trigger_class(
                    change_list_url=watch.change_list_url, position=watch.position,
                    resourcesync_conn_id=self.resourcesync_conn_id,
                    poll_interval=self.poll_interval, max_poll_interval=self.max_poll_interval,
                ), method_name="execute_complete", timeout=timedelta(seconds=self.timeout))
        finally:
            self._release()

    def poke(self, context: Context) -> PokeReturnValue:
        seen = self._look(context)
        return PokeReturnValue(seen.is_done, seen.to_json() if seen.is_done else None)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Resume from the trigger: its result, or the error it met."""
        if event.get("status") != "success":
            message = f"Watching the Change List failed: {event.get('message')}"
            if event.get("error") == ChangeGapError.__name__:
                with says_what_next(self.log):
                    raise ChangeGapError(message)
            self.log.error("Next: %s. %s", event.get("next") or "check the Source and the message "
                           "below, then re-run this task", message)
            raise ResourceSyncError(message)
        result = {key: value for key, value in event.items() if key != "status"}
        self.log.info("The trigger saw: %s", result)
        return result

    def _look(self, context: Context) -> Sighting:
        watch = self._watching(context)
        client = watch.hook.get_conn()
        client.budget.restart()  # one client serves every poke: each poke has the whole budget
        plan: Plan[Sighting] = self.trigger_class.plan(watch.change_list_url, watch.position)
        seen = drive(client, plan)
        self.log.info("Looked for %s in %s : %s", self.trigger_class.waiting_for,
                      watch.change_list_url, seen.to_json())
        return seen

    # -- what to watch, resolved once per execution ------------------------------------------------

    def _watching(self, context: Context) -> _Watch:
        if self._watch is None:
            position, source = self._position(context)
            hook = ResourceSyncHook(resourcesync_conn_id=self.resourcesync_conn_id, watch=True)
            try:
                url = self.change_list_url or self._change_list_of(hook, source)
            except BaseException:
                hook.close()
                raise
            self.log.info("Watching the Change List %s from %s", url, position.to_json())
            self._watch = _Watch(hook, url, position)
        return self._watch

    def _release(self) -> None:
        if self._watch is not None:
            self._watch.hook.close()
            self._watch = None

    def _position(self, context: Context) -> tuple[ChangePosition, str]:
        """The checkpoint's position and its Capability List
        (:func:`~..shell.checkpoints.starting_checkpoint`): ``checkpoint``, else the one saved
        at ``destination``."""
        of = DestinationURL.parse(self.destination).asset_uri if self.destination else None
        found = starting_checkpoint(context, self.log, MIRROR, of=of, saved=self._saved,
                                    given=self.checkpoint)
        if found is None and self.destination:
            raise NoCheckpointError(
                f"destination {self.destination!r}: the mirror has saved no checkpoint; run a "
                "baseline into it first, or pass checkpoint=")
        if found is None:
            raise NoCheckpointError(
                "no checkpoint to watch from: pass checkpoint= (a sync task's XCom) or "
                "destination= (a mirror a baseline ran into); run a baseline first if there "
                "is none")
        checkpoint = Checkpoint.from_json(found.value)
        return checkpoint.position, checkpoint.source

    def _saved(self) -> dict[str, Any] | None:
        """The checkpoint saved at ``destination``; None where there is none (nor any
        directory: a sensor never makes one)."""
        if not self.destination:
            return None
        where = DestinationURL.parse(self.destination)
        if where.scheme == "file" and not Path(where.path).is_dir():
            return None
        return saved_checkpoint(destination_from_url(self.destination,
                                                     aws_conn_id=self.aws_conn_id))

    def _change_list_of(self, hook: ResourceSyncHook, source: str) -> str:
        capability_list = capability_list_of(hook, self.capability_list_url, self.log)
        if capability_list != source:
            self.log.warning("The checkpoint comes from the Capability List %s , not from %s",
                             source, capability_list)
        capabilities = capability_documents(hook.get_conn(), capability_list)
        return capabilities[choose_capability(Capability.CHANGE_LIST, (), capabilities,
                                              capability_list, "to watch")]


class ResourceSyncChangeListSensor(_ChangeListWatchSensor):
    """Wait until the Source's Change List has changes after a mirror's checkpoint (12.1), in
    the list the checkpoint is in or in a later list of the Change List Index (12.2).

    Returns (as its XCom) what it saw: ``count``, ``first_time``, ``last_time``, ``list_urls``
    and up to ten ``samples`` as ``[uri, change]``. In poke mode one client serves every poke, so
    a poke that finds nothing new costs one request answered 304 per document read.
    """

    trigger_class = ResourceSyncChangeListTrigger


class ResourceSyncClosedChangeListSensor(_ChangeListWatchSensor):
    """Wait until the Change List a mirror's checkpoint is in is closed: it has ``until``
    (12.1), or the Change List Index lists a newer list after it (12.2). The list is the one the
    checkpoint names, else the one its time falls in.

    Returns (as its XCom) ``list_url``, ``until`` (None when only a newer list appeared) and
    ``newer_list_url``.
    """

    trigger_class = ResourceSyncClosedChangeListTrigger
