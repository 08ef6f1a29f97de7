"""The audit operator: does the mirror hold what the Source lists, byte for byte?"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from typing import Any

from ..compat import BaseOperator, Context
from ..errors import ConfigurationError, ResourceSyncError
from ..hooks.destination import destination_from_url
from ..hooks.resourcesync import ResourceSyncHook
from ..lineage import Lineage
from ..shell import capability_list_of
from ..shell.next_step import says_what_next
from ..storage.keys import KeyMapper
from ..sync.audit import AuditReport, run_audit

__all__ = ["MirrorMismatchError", "ResourceSyncAuditOperator"]

ON_MISMATCH = ("fail", "warn", "repair")


class MirrorMismatchError(ResourceSyncError):
    """The audit found the mirror not to hold what the Source lists."""


class ResourceSyncAuditOperator(BaseOperator, Lineage):
    """Compare a mirror with the Source's Resource List: what is missing, what the Source no
    longer lists, what differs (by the hash and length the mirror recorded, or with ``deep`` by
    the bytes themselves). The report (a JSON object) is the task's XCom.

    :param destination: the mirror: ``file:///absolute/path``, ``/absolute/path`` or
        ``s3://bucket/prefix/`` (templated).
    :param resourcesync_conn_id: the ``resourcesync`` connection to the Source.
    :param capability_list_url: the Source's Capability List (templated); None: discovered from
        the connection's base URL, the first one found.
    :param on_mismatch: ``"fail"``: fail the task, with the counts and examples;
        ``"warn"``: log a warning and succeed; ``"repair"``: fetch what is missing or differs,
        remove what is extra, and fail only if the mirror is still not clean.
    :param deep: read the mirrored bytes and check them against the Source's hashes, instead of
        trusting the hashes the mirror recorded.
    :param key_prefixes: the baseline's URI prefix -> key prefix mapping (templated).
    :param ignore_prefixes: key prefixes holding objects that are not the mirror's, never extra
        and never removed (templated): the incremental sync's ``move_to`` with
        ``deletes="move"``. The mirror's Source Description at ``.well-known/resourcesync``
        (``well_known``) is never extra either.
    :param concurrency: resources checked at once; None: the connection's concurrency.
    :param aws_conn_id: the AWS connection for an ``s3://`` destination.

    OpenLineage: the Source's Capability List and the destination as inputs (an audit reads
    both), the destination with a ``dataQualityAssertions`` facet saying what held
    (:data:`ASSERTIONS`); the destination as output only where a repair wrote to it.
    """

    template_fields: Sequence[str] = ("destination", "capability_list_url", "key_prefixes",
                                      "ignore_prefixes", "resourcesync_conn_id", "aws_conn_id")
    ui_color = "#d5f5e3"

    def __init__(self, *, destination: str, resourcesync_conn_id: str = "resourcesync_default",
                 capability_list_url: str | None = None, on_mismatch: str = "fail",
                 deep: bool = False, key_prefixes: dict[str, str] | None = None,
                 ignore_prefixes: list[str] | None = None, concurrency: int | None = None,
                 aws_conn_id: str | None = "aws_default", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        ConfigurationError.unless_one_of("on_mismatch", on_mismatch, ON_MISMATCH)
        self.destination = destination
        self.resourcesync_conn_id = resourcesync_conn_id
        self.capability_list_url = capability_list_url
        self.on_mismatch = on_mismatch
        self.deep = deep
        self.key_prefixes = key_prefixes
        self.ignore_prefixes = ignore_prefixes
        self.concurrency = concurrency
        self.aws_conn_id = aws_conn_id

    def execute(self, context: Context) -> dict[str, Any]:
        with says_what_next(self.log), closing(ResourceSyncHook(
                resourcesync_conn_id=self.resourcesync_conn_id)) as hook:
            destination = destination_from_url(self.destination, aws_conn_id=self.aws_conn_id)
            capability_list = capability_list_of(hook, self.capability_list_url, self.log)
            report = run_audit(
                hook.get_conn(), destination, capability_list_url=capability_list,
                mapper=KeyMapper(self.key_prefixes), repair=self.on_mismatch == "repair",
                deep=self.deep, ignore_prefixes=self.ignore_prefixes or (),
                concurrency=self.concurrency or hook.policy.concurrency_per_host, log=self.log)
        self._reads_and_writes([capability_list, self.destination],
                               [self.destination] if report.repaired else [],
                               checked={self.destination: _assertions(report)})
        counts = _counts(report)
        if report.clean:
            self.log.info("The mirror at %s holds what the Source lists: %s", destination.url,
                          counts)
        elif self.on_mismatch == "warn":
            self.log.warning("The mirror at %s differs from the Source: %s; e.g. %s",
                             destination.url, counts, _examples(report))
        else:
            message = (f"The mirror at {destination.url} differs from the Source: {counts}; "
                       f"e.g. {_examples(report)}")
            self.log.error("Next: %s. %s", _NEXT[self.on_mismatch], message)
            raise MirrorMismatchError(message)
        return report.to_json()


_NEXT = {
    "fail": "re-run the baseline (it fetches only what differs), or audit with "
            "on_mismatch='repair'",
    "repair": "re-run this task (repairs that failed are retried); if the same resources "
              "stay wrong, check them at the Source",
}


#: The audit's findings as OpenLineage data quality assertions: name -> what must be zero.
ASSERTIONS = {"no_missing_resources": "missing", "no_extra_resources": "extra",
              "no_mismatched_resources": "mismatched"}


def _assertions(report: AuditReport) -> dict[str, bool]:
    return {name: getattr(report, count) == 0 for name, count in ASSERTIONS.items()}


def _counts(report: AuditReport) -> str:
    return (f"{report.listed} listed, {report.checked} checked, {report.missing} missing, "
            f"{report.extra} extra, {report.mismatched} mismatched, {report.repaired} repaired")


def _examples(report: AuditReport) -> str:
    return " ; ".join(f"{kind}: {' '.join(uris)}" for kind, uris in report.examples.items()
                     if uris) or "none recorded"
