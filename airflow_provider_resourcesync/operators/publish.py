"""The publishing operator: a bucket (or a directory) published as a ResourceSync Source, run
after run."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import timedelta
from functools import partial
from typing import Any

from ..compat import BaseOperator, Context
from ..errors import ConfigurationError
from ..hooks.destination import destination_from_url
from ..hooks.inventory import LIST, Inventoried, inventory_of
from ..hooks.previewed import previewed
from ..hooks.resourcesync import ResourceSyncHook
from ..lineage import Lineage, Written
from ..protocol.datetimes import format_datetime
from ..publish.guards import MAX_DELETIONS, deletion_share
from ..publish.inventory import DEFAULT_SHARE, InventoryObject, Skipped
from ..publish.packages import DEFAULT_BYTES, DEFAULT_ENTRIES, PackageSize, checked_algorithms
from ..publish.reads import DEFAULT_CONCURRENCY, checked_concurrency
from ..publish.retention import KEEP_CHANGES_FOR
from ..publish.run import Publication, preview, publish
from ..publish.urls import CHECK_POLICY, CHECKED_OBJECTS, UrlCheck
from ..shell import describe_at_well_known, describe_outlet_events, destination_outlets
from ..shell.checkpoints import PUBLICATION, starting_checkpoint
from ..shell.durations import max_age
from ..shell.next_step import says_what_next
from ..storage.base import Destination
from ..storage.keys import RESERVED_PREFIX
from ..units import PROGRESS_SECONDS, byte_size
from ..writer import (
    DESCRIPTION,
    DOCUMENTS_MAX_AGE,
    RESOURCE_LIST_MAX_AGE,
    documents_cache_control,
    saved_checkpoint,
)

__all__ = ["ResourceSyncPublishOperator"]

#: The XCom's count of keys skipped, beside the checkpoint.
SKIPPED = "skipped"
#: The XCom's counts of the run, beside the checkpoint (and in its Asset event's ``extra``).
STATS = "stats"
#: The publication's Source Description, at the root of ``publish_to``.
DESCRIPTION_KEY = DESCRIPTION.removeprefix(RESERVED_PREFIX)


class ResourceSyncPublishOperator(BaseOperator, Lineage):
    """Publish a bucket prefix or a directory as a ResourceSync Source (docs/publishing.md):
    the first run a Resource List of every object; each later run the changes since the one
    before, in Change Dump packages (spec 13.1, 13.2) and in a Change List (12.1), with the
    Capability List and Source Description over them.

    The objects' changes are found by comparing the inventory with the objects as last
    published, kept at ``publish_to``; that record, not the XCom, is where a run starts from
    (a run killed midway is finished by the next one first). The task returns its checkpoint
    as its XCom (the end of the window published, the record of the objects, the keys left for
    the next run); ``publish_to`` is declared as an outlet ``Asset`` unless templated.

    :param source: what to publish (templated): ``s3://bucket/prefix/``, ``file:///dir`` or
        ``/dir``.
    :param inventory: how to list it (templated): ``"list"`` (a live listing, or a directory
        walk, when the task runs), or ``s3://bucket/.../manifest.json``, an S3 Inventory report
        of the source's bucket (CSV, or ORC and Parquet with the ``parquet`` extra).
    :param publish_to: where the documents and packages go (templated): ``s3://bucket/prefix/``,
        ``file:///dir`` or ``/dir``; inside ``source`` it is left out of what is published.
    :param base_url: where the source's objects are served (templated): each resource's URI is
        it plus the percent-encoded key, the whole key (the bucket's root, not the prefix
        published). The publication's for life: a run given another fails.
    :param publish_url: where ``publish_to`` is served (templated); required unless
        ``publish_to`` is a local folder (None: its ``file://`` URLs). The publication's for
        life, as ``base_url``.
    :param package_entries: changes a package holds at most (at most 50,000).
    :param package_bytes: bytes of bitstreams after which a package closes (an object larger
        goes alone in a package of its own).
    :param hashes: the hashes of each packaged object, one or more of ``"md5"``, ``"sha-1"``,
        ``"sha-256"``, ``"sha-512"`` (another is refused when the DAG is parsed).
    :param resource_dump: also publish a Resource Dump (spec 11.1) beside each Resource List
        (the first run, and compactions): every object read again into packages (templated:
        a bool, or a template rendering ``true`` or ``false``).
    :param resource_list_max_age: the Resource List (what a follower baselines from) is
        rewritten once the oldest run whose changes it lacks is this old, so a follower that
        reads no Change List lacks at most that much; None: only once the changes since it pass
        a tenth of it. A ``timedelta``; a day by default. Each rewrite writes the whole list,
        and with ``resource_dump`` packages every object again: give it a longer age then.
    :param keep_changes_for: Change Lists, Change Dumps and their packages that end before this
        long ago are retired (never one with changes the Resource List lacks); a follower
        whose checkpoint is older must baseline again (``ChangeGapError``). A ``timedelta``;
        30 days by default; None: kept for ever.
    :param max_skipped_share: keys no URL can carry (a control character, a name that is not
        UTF-8, a ``.`` segment) are skipped, logged and counted in the XCom (``skipped``: a
        count and a few examples); the run fails once more than this share (0 to 1) of the
        keys are; 0: any one fails it.
    :param max_deletions: the share of the objects last published a run may delete, 0 to 1
        (rounded up to a whole object); a run that would delete more fails before it writes,
        naming the count (an empty or truncated report, another prefix's listing). Templated:
        to let one run delete more, render it from a param (``"{{ params.max_deletions }}"``)
        and trigger that run with a larger one.
    :param check_urls: objects whose URLs each run fetches, before it writes, and compares
        with the bucket's bytes (and the Source Description at ``publish_url``, once there is
        one); a URL answering an error or other bytes fails the run. 0: no check.
    :param documents_max_age: how long a cache (a CDN in front of ``publish_url``) may keep a
        document that runs rewrite (the Capability List, the indexes, ``resourcelist.xml``,
        ``resourcedump.xml``): their ``Cache-Control`` on S3, ``public, max-age=300`` by
        default; what is named by its time (packages, closed Change Lists) is immutable. A
        replaced Resource Dump's packages are kept that long after. A ``timedelta``.
    :param resourcesync_conn_id: a ``resourcesync`` connection whose settings (timeouts,
        TLS, headers, ``allowed_hosts``, ``allow_private``) the checks follow; None: a minute
        per request, public addresses only.
    :param concurrency: objects read at once while packaging (1 to 256; 1: one after another);
        the packages are the same whatever it is. The reads retry as the checks do (the
        ``resourcesync_conn_id`` connection's ``max_tries``, ``request_timeout`` and
        ``retry_budget``, else a sync's defaults).
    :param well_known: also write the publication's Source Description at
        ``.well-known/resourcesync`` of ``publish_to`` (spec 6.3.2), for a ``publish_url`` at
        the root of a host: Destinations then find the publication from the host alone.
    :param dry_run: write nothing: the task lists what a run would publish, delete, skip and
        leave as it is (counts, a few keys of each), and whether it would be refused, and
        returns that as its XCom (docs/publishing.md, "Dry runs"); no Asset event.
    :param aws_conn_id: the AWS connection for ``s3://`` sources, reports and ``publish_to``,
        where the three below are None (None itself: boto3's default credentials).
    :param source_aws_conn_id: the AWS connection that lists and reads the source's bucket
        (None: ``aws_conn_id``).
    :param inventory_aws_conn_id: the AWS connection that reads the S3 Inventory report, often
        in another account (None: ``aws_conn_id``).
    :param publish_aws_conn_id: the AWS connection that writes ``publish_to`` (None:
        ``aws_conn_id``).

    The XCom's ``stats`` (and the Asset event's ``extra``, with ``time``) count what the run
    published: ``changes``, ``created``, ``updated``, ``deleted``, ``skipped``, ``left``,
    ``bytes`` (of the packages) and ``packages``.

    OpenLineage: the source as input, ``publish_to`` as output (the same at START and
    COMPLETE); on COMPLETE, the output's ``outputStatistics`` facet (changes, bytes of the
    packages, packages) and the ``resourcesync_counts`` run facet (``stats``).
    """

    template_fields: Sequence[str] = ("source", "inventory", "publish_to", "base_url",
                                      "publish_url", "resource_dump", "max_deletions",
                                      "aws_conn_id", "source_aws_conn_id",
                                      "inventory_aws_conn_id", "publish_aws_conn_id")
    ui_color = "#fdebd0"

    def __init__(self, *, source: str, publish_to: str, base_url: str, inventory: str = LIST,
                 publish_url: str | None = None, package_entries: int = DEFAULT_ENTRIES,
                 package_bytes: int = DEFAULT_BYTES,
                 hashes: Sequence[str] = ("md5",), resource_dump: bool | str = False,
                 resource_list_max_age: timedelta | None = RESOURCE_LIST_MAX_AGE,
                 keep_changes_for: timedelta | None = KEEP_CHANGES_FOR,
                 max_skipped_share: float = DEFAULT_SHARE,
                 max_deletions: float | str = MAX_DELETIONS,
                 check_urls: int = CHECKED_OBJECTS,
                 documents_max_age: timedelta = DOCUMENTS_MAX_AGE,
                 resourcesync_conn_id: str | None = None,
                 concurrency: int = DEFAULT_CONCURRENCY,
                 well_known: bool = False, dry_run: bool = False,
                 aws_conn_id: str | None = "aws_default", source_aws_conn_id: str | None = None,
                 inventory_aws_conn_id: str | None = None,
                 publish_aws_conn_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(max_deletions, str):
            deletion_share(max_deletions)  # wrong when the DAG is parsed, unless templated
        if publish_to.startswith("s3://") and not publish_url:
            raise ConfigurationError(
                f"publish_url: required for {publish_to}: without it the documents link s3:// "
                "URLs, which no follower can fetch. Give the http(s) URL it is served under")
        self.check_urls = UrlCheck(check_urls).count
        self.resourcesync_conn_id = resourcesync_conn_id
        self.concurrency = checked_concurrency(concurrency)
        self.resource_list_max_age = max_age(resource_list_max_age)
        self.keep_changes_for = max_age(keep_changes_for, "keep_changes_for")
        documents_cache_control(documents_max_age)  # wrong when the DAG is parsed
        self.documents_max_age = documents_max_age
        self.size = PackageSize(package_entries, package_bytes)
        self.hashes = checked_algorithms(hashes)
        self.max_skipped_share = Skipped(max_skipped_share).share
        self.source = source
        self.inventory = inventory
        self.publish_to = publish_to
        self.base_url = base_url
        self.publish_url = publish_url
        self.resource_dump = resource_dump
        self.max_deletions = max_deletions
        self.well_known = well_known
        self.is_dry_run = dry_run
        self.aws_conn_id = aws_conn_id
        self.source_aws_conn_id = source_aws_conn_id
        self.inventory_aws_conn_id = inventory_aws_conn_id
        self.publish_aws_conn_id = publish_aws_conn_id
        if not dry_run:  # a dry run changes nothing: no Asset event
            self.add_outlets(destination_outlets(publish_to))

    def execute(self, context: Context) -> dict[str, Any]:
        with says_what_next(self.log):
            if self.is_dry_run:
                return self._dry_run()
            destination = destination_from_url(self.publish_to,
                                               aws_conn_id=self._conn(self.publish_aws_conn_id))
            self._start(context, destination)
            listed, skipped = self._listed()
            publication = self._publication(destination)
            self._reads_and_writes([self.source], [self.publish_to])
            done = publish(publication, self._counted(listed.objects), listed.time,
                           listed.bucket, log=self.log.info)
            stats = {**done.stats, SKIPPED: skipped.count}
            self._wrote(Written(done.changes, done.package_bytes, done.packages, stats))
            self.log.info("Published %s changes in %s packages (%s)%s", done.changes,
                          done.packages, byte_size(done.package_bytes),
                          f"; {len(done.left)} left for the next run" if done.left else "")
            self._warn_skipped(skipped)
            if self.well_known:  # the publication's Source Description, at publish_to's root
                describe_at_well_known(destination, self.log, description=DESCRIPTION_KEY,
                                       max_age=self.documents_max_age)
        return describe_outlet_events(context, self.outlets, {
            **done.checkpoint, STATS: stats,
            SKIPPED: skipped.as_dict()}, names=("time", STATS))

    def _dry_run(self) -> dict[str, Any]:
        """What a run would publish, found without writing (:func:`~..publish.run.preview`)."""
        with previewed(self.publish_to,
                       aws_conn_id=self._conn(self.publish_aws_conn_id)) as destination:
            listed, skipped = self._listed()
            self._reads_and_writes([self.source], [])
            found = preview(self._publication(destination), self._counted(listed.objects),
                            listed.time, listed.bucket, log=self.log.info)
        answer = found.as_dict(skipped.as_dict())
        self.log.info("Dry run, nothing written: a run would publish %s changes (%s created, "
                      "%s updated, %s deleted) in %s packages (%s), leave %s objects as they "
                      "are and skip %s keys; e.g. %s", f"{found.changes:,}",
                      f"{found.created:,}", f"{found.updated:,}", f"{found.deleted:,}",
                      f"{found.packages:,}", byte_size(found.bytes), f"{found.unchanged:,}",
                      f"{skipped.count:,}", answer["examples"])
        if found.pending:
            self.log.info("A killed run's plan would be carried out first: %s", found.pending)
        if found.refused:
            self.log.warning("Dry run: a run would be refused, writing nothing: %s",
                             found.refused)
        self._warn_skipped(skipped)
        return answer

    def _listed(self) -> tuple[Inventoried, Skipped]:
        skipped = Skipped(self.max_skipped_share)
        listed = inventory_of(self.source, self.inventory, self.publish_to,
                              aws_conn_id=self._conn(self.source_aws_conn_id),
                              inventory_aws_conn_id=self._conn(self.inventory_aws_conn_id),
                              skipped=skipped)
        self.log.info("Publishing %s as of %s to %s%s", listed.what,
                      format_datetime(listed.time), self.publish_to,
                      f" (leaving out {listed.excluded}, where it is written)"
                      if listed.excluded else "")
        return listed, skipped

    def _publication(self, destination: Destination) -> Publication:
        return Publication(destination, base_url=self.base_url,
                           publish_url=self.publish_url or None, size=self.size,
                           algorithms=self.hashes,
                           resource_dump=_switch(self.resource_dump, "resource_dump"),
                           resource_list_max_age=self.resource_list_max_age,
                           keep_changes_for=self.keep_changes_for,
                           max_deletions=deletion_share(self.max_deletions),
                           url_check=self._url_check(),
                           documents_max_age=self.documents_max_age,
                           concurrency=self.concurrency, **self._read_policy())

    def _conn(self, conn_id: str | None) -> str | None:
        """The AWS connection of one part (source, inventory, publication): its own, else
        ``aws_conn_id``."""
        return conn_id or self.aws_conn_id

    def _warn_skipped(self, skipped: Skipped) -> None:
        if skipped.count:
            self.log.warning("Skipped %s keys no URL can carry (%s): rename those objects, "
                             "or move them out of the published prefix",
                             f"{skipped.count:,}", skipped.summary())

    def get_openlineage_facets_on_start(self) -> Any:
        """Airflow's OpenLineage hook at START: the datasets the run reads and writes, as at
        COMPLETE (the source as input; the publication, none for a dry run, as output)."""
        self._reads_and_writes([self.source], [] if self.is_dry_run else [self.publish_to])
        return self.get_openlineage_facets_on_complete(None)

    def _url_check(self) -> UrlCheck | None:
        if not self.check_urls:
            return None
        policy = ResourceSyncHook(resourcesync_conn_id=self.resourcesync_conn_id).policy \
            if self.resourcesync_conn_id else CHECK_POLICY
        return UrlCheck(self.check_urls, policy)

    def _read_policy(self) -> dict[str, Any]:
        """The reads' retries and deadline: the connection's, where one is given."""
        if not self.resourcesync_conn_id:
            return {}
        return {"read_policy": ResourceSyncHook(
            resourcesync_conn_id=self.resourcesync_conn_id).policy}

    def _start(self, context: Context, destination: Destination) -> None:
        """Log where the run starts (:func:`~..shell.checkpoints.starting_checkpoint`): the
        state saved at ``publish_to``; this task's previous XCom only says where the last run
        ended, and a difference is reported."""
        found = starting_checkpoint(context, self.log, PUBLICATION, of=self.publish_to,
                                    saved=partial(saved_checkpoint, destination, location=""),
                                    previous="compare")
        if found is None:
            self.log.info("Nothing published at %s yet: this run publishes every object",
                          self.publish_to)

    def _counted(self, objects: Iterable[InventoryObject]) -> Iterator[InventoryObject]:
        """``objects``, with a line logged every :data:`PROGRESS_SECONDS` of listing."""
        count, last = 0, time.monotonic()
        for item in objects:
            count += 1
            if time.monotonic() - last >= PROGRESS_SECONDS:
                last = time.monotonic()
                self.log.info("Listed %s objects so far (now at %s)", f"{count:,}", item.key)
            yield item
        self.log.info("Listed %s objects", f"{count:,}")


def _switch(value: bool | str, name: str) -> bool:
    """An on/off argument, given as a bool or rendered by a template (``true``, ``False``...).

    :raises ConfigurationError: a text that says neither.
    """
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ConfigurationError(f"{name}: {str(value)[:200]!r} is neither true nor false: give a "
                             "bool, or a template rendering 'true' or 'false'")
