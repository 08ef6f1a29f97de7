"""The audit (spec 5.2): does the mirror hold what the Source says it holds?

The expectation is the Source's Resource List with the changes its Change Lists record after the
list's ``at`` applied (the last change of a URI wins), kept in a scratch SQLite database. Each
resource expected is compared with the description stored with the object at its key, and with
the mirror's own state, without downloading; ``deep`` re-reads and re-hashes each object too. The
destination's other objects, and the state's other records, are extra. ``repair`` re-fetches
what is missing or mismatched, removes what is extra, and checks each repaired resource again.

Resources are known by their URIs' normal form (two spellings are one resource); a URI a safety
rule refuses (credentials in it, no well-formed http(s) host) is never mirrored, so it is
counted as refused, not as missing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any

from ..client.navigate import ChangeItem, capability_documents, changes_after, resource_list
from ..client.sync_client import ResourceSyncClient
from ..errors import ContentMismatchError, DocumentError, ResourceSyncError, UnsafeContentError
from ..protocol.hashes import Digester
from ..protocol.model import Capability, Change, Entry
from ..protocol.position import ChangePosition
from ..storage.base import Destination, ObjectInfo
from ..storage.keys import KeyMapper, normalized
from ..units import PROGRESS_EVERY, Pacer, pace
from ..writer import WELL_KNOWN, MirrorState
from .compare import Expected, agrees, identity
from .expectation import Expectations
from .log import Log
from .pool import bounded_map
from .transfer import Transfer

__all__ = ["KINDS", "AuditReport", "run_audit"]

_log = logging.getLogger(__name__)

#: The kinds of findings.
KINDS = ("missing", "extra", "mismatched")
#: Examples kept per kind.
EXAMPLES = 10
_CHUNK = 1024 * 1024


@dataclass
class AuditReport:
    """What an audit found (after repairs, if it made any).

    :param listed: entries of the Source's Resource List.
    :param checked: resources expected (changes applied) and compared with the destination.
    :param missing: expected and not held.
    :param extra: held (at the destination or in the mirror's state) and not expected.
    :param mismatched: held, but not as described (hash, length; the content, when deep; the
        mirror's state disagreeing with the object).
    :param repaired: findings fixed and checked again.
    :param refused: listed (or changed) URIs a safety rule refuses, never mirrored.
    :param examples: up to 10 URIs of each kind of finding.
    """

    listed: int = 0
    checked: int = 0
    missing: int = 0
    extra: int = 0
    mismatched: int = 0
    repaired: int = 0
    refused: int = 0
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return not (self.missing or self.extra or self.mismatched)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "clean": self.clean}


def run_audit(client: ResourceSyncClient, destination: Destination, *, capability_list_url: str,
              mapper: KeyMapper | None = None, repair: bool = False, deep: bool = False,
              ignore_prefixes: Sequence[str] = (), concurrency: int = 16,
              log: Log | None = None) -> AuditReport:
    """Compare ``destination`` with the Source; with ``repair``, fix what differs.

    :param capability_list_url: the Source's Capability List (9); it must offer a Resource List.
    :param mapper: URI -> key mapping, the one the mirror was made with (keys in the
        mirror's key layout; one asking for another is refused).
    :param repair: re-fetch missing and mismatched resources, remove extra ones.
    :param deep: re-read and re-hash every object (its bytes, not only its description).
    :param ignore_prefixes: key prefixes whose objects are not the mirror's (where an incremental
        sync moves deleted resources, say): never extra, never removed.
    :param concurrency: objects checked (or fetched) at once.
    :raises ResourceSyncError: the Source's documents cannot be read.
    """
    log = log or _log
    capabilities = capability_documents(client, capability_list_url)
    if Capability.RESOURCE_LIST not in capabilities:
        raise DocumentError("an audit compares with a Resource List (10.1), and the Capability "
                            f"List offers {', '.join(sorted(capabilities)) or 'nothing'}",
                            url=capability_list_url, section="5.2")
    report = AuditReport()
    with MirrorState.load(destination) as state, Expectations(  # keys in the mirror's layout
            partial(_key_or_none, mapper := state.keys(mapper, record=False))) as book:
        # the mirror's own copy of its Source Description is never a resource (well_known)
        auditor = _Auditor(destination, state, book, deep, (*ignore_prefixes, WELL_KNOWN), log)
        report.listed = auditor.expect(client, capabilities[Capability.RESOURCE_LIST],
                                       capabilities.get(Capability.CHANGE_LIST))
        report.refused = auditor.refused
        report.checked = auditor.check(concurrency, book.present_count())
        auditor.find_extras()
        _fill(report, book)
        log.info("Audit of %s against %s : %s listed, %s checked, %s missing, %s extra, "
                 "%s mismatched, %s refused%s", destination.url, capability_list_url,
                 report.listed, report.checked, report.missing, report.extra, report.mismatched,
                 report.refused,
                 "".join(f" ; {kind}, e.g. {' '.join(uris)}"
                         for kind, uris in report.examples.items() if uris))
        if repair and not report.clean:
            report.repaired = auditor.repair(client, Transfer(destination, state, mapper),
                                             concurrency, report.missing + report.mismatched)
            _fill(report, book)
            log.info("Audit repaired %s findings: %s missing, %s extra, %s mismatched remain",
                     report.repaired, report.missing, report.extra, report.mismatched)
    return report


def _key_or_none(mapper: KeyMapper, uri: str) -> str | None:
    try:
        return mapper.key(uri)
    except ResourceSyncError:
        return None


def _fill(report: AuditReport, book: Expectations) -> None:
    report.missing, report.extra, report.mismatched = (book.count(kind) for kind in KINDS)
    report.examples = {kind: book.examples(kind, EXAMPLES) for kind in KINDS}


@dataclass
class _Auditor:
    """One audit's steps over its book of expectations and findings."""

    destination: Destination
    state: MirrorState
    book: Expectations
    deep: bool
    ignored: tuple[str, ...]
    log: Log
    refused: int = 0

    def expect(self, client: ResourceSyncClient, list_url: str, change_list_url: str | None
               ) -> int:
        """Fill the book from the Resource List, then the changes after its ``at``; the number
        of Resource List entries."""
        with resource_list(client, list_url) as walk:
            listed = self.book.expect(self._resources(walk)) + self.refused
            at = walk.at
        if change_list_url is None:
            return listed
        if at is None:
            self.log.warning("%s has no 'at' (10.1): the changes since cannot be told apart, "
                             "none applied", list_url)
            return listed
        items = changes_after(client, change_list_url, ChangePosition.at(at))
        changed = self.book.expect(self._resources(self._as_applied(items)))
        self.log.info("Audit expects %s listed at %s with %s changes since applied", listed,
                      at.isoformat(), changed)
        return listed

    def _as_applied(self, items: Iterable[ChangeItem]) -> Iterator[Entry]:
        """The changes as the incremental engine applies them: a doubtful deletion (dated before
        the Resource List in a list whose times cannot say it is older) not over a newer copy."""
        for item in items:
            entry, when = item.entry, item.entry.change_time
            if item.doubtful and entry.change is Change.DELETED and when is not None:
                try:
                    if self.book.expects_newer(normalized(entry.loc), when):
                        continue
                except UnsafeContentError:
                    pass  # refused by _resources
            yield entry

    def _resources(self, entries: Iterable[Entry]) -> Iterator[Entry]:
        """``entries`` named by their URIs' normal form, without those a safety rule refuses
        (counted, and logged)."""
        for entry in entries:
            try:
                yield replace(entry, loc=normalized(entry.loc))
            except UnsafeContentError as error:
                self.refused += 1
                self.log.warning("Not mirrored, so not expected: %s", error)

    def check(self, concurrency: int, total: int) -> int:
        """Compare every expected resource (``total``) with the destination, saying how far it
        is as a sync does; how many were compared."""
        checked, read, pacer = 0, 0, Pacer(PROGRESS_EVERY)
        for kind, expected, key in bounded_map(self._problem, self.book.present(), concurrency):
            checked += 1
            read += (expected.length or 0) if kind != "missing" else 0
            if kind is not None:
                self.book.note(kind, expected.uri, key)
            self._progress(pacer, checked, total, read if self.deep else None, "checking")
        return checked

    def _progress(self, pacer: Pacer, done: int, total: int, read: int | None,
                  doing: str) -> None:
        """A progress line, when ``pacer`` says, with the findings so far (and the bytes
        ``read``, where the audit reads them)."""
        elapsed = pacer.due(done)
        if elapsed is not None:
            self.log.info("Progress: %s: %s: %s", doing,
                          pace(done, total, read, elapsed, "resources"),
                          ", ".join(f"{self.book.count(kind)} {kind}" for kind in KINDS))

    def _problem(self, item: tuple[Expected, str | None]
                 ) -> tuple[str | None, Expected, str | None]:
        """``(kind of problem or None, expected, key)`` for one expected resource."""
        expected, key = item
        if key is None:
            self.log.warning("%s has no key at the destination: missing", expected.uri)
            return "missing", expected, key
        try:
            return self._compare(expected, key), expected, key
        except ResourceSyncError as error:
            self.log.warning("Cannot check %s at %s: %s", expected.uri, key, error)
            return "mismatched", expected, key

    def _compare(self, expected: Expected, key: str) -> str | None:
        info = self.destination.info(key)
        if info is None:
            return "mismatched" if self.destination.exists(key) else "missing"
        if agrees(expected, info) is False:
            return "mismatched"
        record = self.state.get(expected.uri)
        if record is None or (record.key, record.length, record.hashes) != (
                key, info.length, info.hashes):
            return "mismatched"
        if self.deep and not self._content_matches(key, info):
            return "mismatched"
        return None

    def _content_matches(self, key: str, info: ObjectInfo) -> bool:
        digester = Digester(value.algorithm for value in info.hashes.values)
        with self.destination.open(key) as stream:
            while chunk := stream.read(_CHUNK):
                digester.update(chunk)
        try:
            return digester.verify(info.uri, hashes=info.hashes, length=info.length)
        except ContentMismatchError as error:
            self.log.warning("Deep check: %s", error)
            return False

    def find_extras(self) -> None:
        """Objects at the destination, and records of the state, that nothing expected has."""
        for key in self.destination.keys(""):
            if not self.book.expects_key(key) and not key.startswith(self.ignored):
                info = self._info(key)
                self.book.note("extra", info.uri if info else self.destination.object_url(key),
                               key)
        for record in self.state.records():
            if not self.book.expects(identity(record.uri)) and not self.book.noted_key(
                    "extra", record.key):
                self.book.note("extra", record.uri, record.key)

    def _info(self, key: str) -> ObjectInfo | None:
        try:
            return self.destination.info(key)
        except ResourceSyncError as error:  # unreadable metadata: an undescribed object
            self.log.warning("%s", error)
            return None

    def repair(self, client: ResourceSyncClient, transfer: Transfer, concurrency: int,
               total: int) -> int:
        """Re-fetch the missing and mismatched (``total``), saying how far it is, remove the
        extra, save the state; how many findings are gone once checked again."""
        repaired, pacer = 0, Pacer(PROGRESS_EVERY)
        work = partial(self._refetch, client, transfer)
        for done, (kind, uri, fixed) in enumerate(
                bounded_map(work, self.book.wrong(), concurrency), 1):
            if fixed:
                self.book.forget(kind, uri)
                repaired += 1
            self._progress(pacer, done, total, None, "repairing")
        for uri, key in self.book.found("extra"):
            if self._remove(uri, key):
                self.book.forget("extra", uri)
                repaired += 1
        self.state.save(checkpoint=self.state.checkpoint())
        return repaired

    def _refetch(self, client: ResourceSyncClient, transfer: Transfer,
                 item: tuple[str, Expected, str | None]) -> tuple[str, str, bool]:
        kind, expected, key = item
        if key is None:
            return kind, expected.uri, False
        try:
            transfer.fetch(client, expected.entry(), key)
        except ResourceSyncError as error:
            self.log.warning("Repair of %s failed: %s", expected.uri, error)
            return kind, expected.uri, False
        return kind, expected.uri, self._problem((expected, key))[0] is None

    def _remove(self, uri: str, key: str | None) -> bool:
        try:
            if key is not None:
                self.destination.delete(key)
            if self.state.get(uri) is not None:
                self.state.remove(uri)
            return key is None or not self.destination.exists(key)
        except ResourceSyncError as error:
            self.log.warning("Removing %s (of %s ) failed: %s", key, uri, error)
            return False
