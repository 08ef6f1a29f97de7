"""The provider's errors: one hierarchy, rooted in :class:`ResourceSyncError`; and :func:`shown`,
how a URL or key is quoted in their messages.

Every layer raises these and nothing else, so a DAG author can catch one base class, and every
message says which document, URL or rule is at fault.

A URL in a message (and in a log line) is a word of its own, and punctuation after it is set off
by a space: ``https://example.org/changelist.xml : not found``, ``... line 12 : ...``. Airflow's
log view makes a link of everything from ``http`` to the next whitespace, so a URL followed by
``:`` or ``,`` would link to a page that does not exist (``tests/test_messages.py`` holds every
message of the package to this).
"""

from __future__ import annotations

from collections.abc import Iterable


class ResourceSyncError(Exception):
    """Base class of every error this provider raises on purpose."""

    #: Whether running the task again can succeed where this failed (a Source or a destination
    #: that was down, content caught mid-update). False: something must change first (the
    #: connection, an argument, the Source's documents, the destination's layout), and the
    #: error's next step says what.
    rerun_helps: bool = True


class ConfigurationError(ResourceSyncError, ValueError):
    """A connection field or an argument is wrong; the message names it."""

    rerun_helps = False

    @classmethod
    def unless_one_of(cls, name: str, value: object, choices: Iterable[str]) -> None:
        """:raises ConfigurationError: ``value`` of the argument ``name`` is not in ``choices``."""
        choices = list(choices)
        if value not in choices:
            raise cls(f"{name} {value!r} is not one of {', '.join(choices)}")



class NoCheckpointError(ConfigurationError):
    """Nothing to start from: no checkpoint was given and the mirror has none saved, because no
    baseline has run into it yet. Running a baseline is the fix, not this task again."""

class InvalidValueError(ResourceSyncError, ValueError):
    """A single value (datetime, hash, length, ...) is not in the form the spec defines."""

    rerun_helps = False


class DocumentError(ResourceSyncError):
    """A ResourceSync document cannot be read, or breaks a rule of the spec.

    :param message: what is wrong.
    :param url: the document's URL (or file name).
    :param line: the line in the document, where known.
    :param section: the spec section the rule comes from, where there is one.
    """

    rerun_helps = False

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        line: int | None = None,
        section: str | None = None,
    ) -> None:
        self.message = message
        self.url = url
        self.line = line
        self.section = section
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.url or "<document>"
        if self.line is not None:
            where = f"{where} line {self.line}"
        text = f"{where} : {self.message}"
        if self.section:
            text = f"{text} (spec section {self.section})"
        return text


class SourceNotFoundError(DocumentError):
    """Discovery (6.3) found no ResourceSync Source from a URL: the URL (the connection's host,
    port and path, or ``capability_list_url``) is the likely fault, not the Source's documents.
    ``unreachable``: the URL itself got no answer (refused, reset, timed out, no such host), so
    a re-run may succeed once it answers."""

    def __init__(self, message: str, *, url: str, unreachable: bool) -> None:
        self.unreachable = unreachable
        self.rerun_helps = unreachable
        super().__init__(message, url=url, section="6.3")


class UnsafeContentError(DocumentError):
    """Content refused by a safety rule (DTDs, size caps, ZIP path tricks, ...)."""

    def __init__(self, message: str, *, rule: str, url: str | None = None,
                 line: int | None = None) -> None:
        self.rule = rule
        super().__init__(f"{message} [refused by rule: {rule}]", url=url, line=line)


class FetchError(ResourceSyncError):
    """A fetch failed after its retries."""

    def __init__(self, message: str, *, url: str, status: int | None = None,
                 tries: int = 1) -> None:
        self.url = url
        self.status = status
        self.tries = tries
        status_text = f"HTTP {status}" if status is not None else "no response"
        super().__init__(
            f"{url} : {message} ({status_text}, after {tries} {'try' if tries == 1 else 'tries'})")


class ContentMismatchError(ResourceSyncError):
    """Content does not match its description (hash or length)."""

    def __init__(self, *, url: str, what: str, expected: str, actual: str) -> None:
        self.url = url
        self.what = what
        self.expected = expected
        self.actual = actual
        super().__init__(f"{url} : {what} mismatch: expected {expected}, got {actual}")


class DestinationError(ResourceSyncError):
    """A destination refused a write, or cannot be used."""


class UnstorableKeyError(DestinationError):
    """The destination cannot hold an object at this key, however often it is tried (a local
    disk holding both ``a`` and ``a/b``, a path longer than the file system allows): the fix is
    another destination or a prefix mapping, not a re-run."""

    rerun_helps = False


class SyncIncompleteError(ResourceSyncError):
    """A sync run committed what it could, but some resources failed; re-running converges
    unless some failures are lasting (:attr:`rerun_helps` is then False, and :attr:`fixes` says
    what must change).

    :param failures: ``(uri, reason)`` for the first failures, to show.
    :param failed: how many failed in all.
    :param lasting: how many of them a re-run cannot fix.
    :param fixes: what must change for those, each said once.
    :param stopped: the host the run stopped on, having stopped answering; None: the run went
        through every resource.
    """

    def __init__(self, message: str, *, failures: list[tuple[str, str]], failed: int,
                 lasting: int = 0, fixes: tuple[str, ...] = (),
                 stopped: str | None = None) -> None:
        self.failures = failures
        self.failed = failed
        self.lasting = lasting
        self.fixes = fixes
        self.stopped = stopped
        self.rerun_helps = not lasting
        examples = "; ".join(f"{uri} : {reason}" for uri, reason in failures)
        super().__init__(f"{message}: {failed} failed (e.g. {examples})")


class ChangeGapError(ResourceSyncError):
    """The Source no longer offers every change after a checkpoint (its older Change Lists were
    rotated out of the index): the changes in between cannot be read, so the mirror must be
    baselined again; the message names the checkpoint and the first change still offered."""

    rerun_helps = False


class PublishError(ResourceSyncError):
    """A publication cannot be made as asked: an object cannot be read or packaged, a setting
    contradicts another; the message names the object or setting and what to change.
    ``rerun_helps`` is given per error: True only where the store failed for a while."""

    rerun_helps = False

    def __init__(self, message: str, *, rerun_helps: bool = False) -> None:
        self.rerun_helps = rerun_helps
        super().__init__(message)


class InventoryError(PublishError):
    """An inventory to publish (a bucket listing, an S3 Inventory report, a directory) cannot be
    read, or holds what cannot be published; the message names the bucket, manifest, data file
    or key, and what is wrong. ``rerun_helps`` is True only where the store failed for a while
    (a throttled or broken request, a report still being delivered)."""


#: Characters of a URL or key quoted whole in a message; a longer one is cut to this many.
SHOWN = 100


def shown(text: str) -> str:
    """``text`` for an error message: whole up to :data:`SHOWN` characters, else its first
    ones, ``...`` and its length (a hostile Source's URL or key can be kilobytes long)."""
    if len(text) <= SHOWN:
        return text
    return f"{text[:SHOWN]}... ({len(text)} characters)"
