"""The publication's URLs, checked before a run writes (issue 27, docs/design.md "Publishing:
the URLs are checked").

A publication's documents are only as good as their URLs: each resource's is ``base_url`` plus
its key, each document's and package's ``publish_url`` plus its key. A run fetches a few of them
over HTTP and compares what they serve with what they stand for: up to :attr:`UrlCheck.count`
objects (the oldest of the inventory's first :data:`PICKED_FROM`, none larger than
:data:`MAX_CHECKED_BYTES`) with the bytes read from the bucket, and the Source Description at
``publish_url`` with the one at the destination. A URL that answers 404 or other bytes fails the
run, naming the URL, the key and what to fix.

The URLs are also the publication's for life: a run given another ``base_url`` or
``publish_url`` than the publication was made with is refused (:func:`check_unchanged`).
"""

from __future__ import annotations

import hashlib
import heapq
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain, islice
from urllib.parse import unquote, urlsplit

from ..client.policy import ClientPolicy
from ..client.sync_client import ResourceSyncClient
from ..errors import (
    ConfigurationError,
    ContentMismatchError,
    FetchError,
    PublishError,
    UnsafeContentError,
)
from ..protocol.closing import ClosedOnExit
from ..protocol.hashes import Hashes
from ..protocol.model import Metadata
from ..storage.base import Destination
from ..storage.keys import quoted_key
from ..units import byte_size
from ..writer import base_url
from .bucket import Bucket
from .inventory.entries import object_of
from .inventory.objects import InventoryObject
from .inventory.order import Ordered

__all__ = [
    "CHECKED_OBJECTS",
    "CHECK_POLICY",
    "MAX_CHECKED_BYTES",
    "PICKED_FROM",
    "UrlCheck",
    "UrlChecker",
    "check_unchanged",
]

#: Objects whose URLs a run checks, by default.
CHECKED_OBJECTS = 3
#: The first objects of the inventory (in key order) the checked ones are picked from.
PICKED_FROM = 1000
#: An object larger is not picked: its URL's whole body is fetched.
MAX_CHECKED_BYTES = 16 * 1024 * 1024
#: The checks' HTTP policy when none is given: a minute at most per request and for retries.
CHECK_POLICY = ClientPolicy(request_timeout=60.0, retry_budget=60.0, max_tries=3)
_OFF = "check_urls=0 turns the check off"


@dataclass(frozen=True, slots=True)
class UrlCheck:
    """How a run checks its URLs.

    :param count: objects whose URLs are fetched and compared with the bucket; 0: none (the
        Source Description at ``publish_url`` is still checked).
    :param policy: the HTTP client's timeouts, retries, limits and reachable addresses
        (private ones only with ``allow_private``).
    :raises ConfigurationError: ``count`` is not a whole number from 0.
    """

    count: int = CHECKED_OBJECTS
    policy: ClientPolicy = field(default_factory=lambda: CHECK_POLICY)

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise ConfigurationError(f"check_urls: {self.count!r} is not a count of objects "
                                     "(0 or more; 0 turns the check off)")


def check_unchanged(name: str, saved: str | None, given: str | None, where: str) -> None:
    """:raises PublishError: ``given`` (``base_url`` or ``publish_url``, normalized) is not the
    ``saved`` one the publication at ``where`` was made with."""
    if saved == given:
        return
    raise PublishError(
        f"{name} is {given!r}, but the publication at {where} was made with {saved!r}: its "
        "documents and packages list the old URLs, which a run cannot take back (followers "
        f"hold them). Give {name}={saved!r} again; or, to move, publish from scratch to a new "
        "publish_to (followers baseline from the new one), or delete what is at publish_to")


class UrlChecker(ClosedOnExit):
    """The checks of one run: ``base_url`` serves the objects, ``publish_url`` (None: not
    served over HTTP) the destination; :meth:`close` (or ``with``) ends its client."""

    def __init__(self, check: UrlCheck, resources: str, publish_url: str | None) -> None:
        self.check = check
        self.resources = base_url(resources)
        self.publish_url = base_url(publish_url) if publish_url is not None else None
        self._client = ResourceSyncClient(check.policy, source_urls=[
            self.resources, *([self.publish_url] if self.publish_url else [])])
        self._picked: list[InventoryObject] = []

    def close(self) -> None:
        self._client.close()

    def sampled(self, inventory: Iterable[InventoryObject]) -> Iterable[InventoryObject]:
        """``inventory``, passed on whole; the objects to check picked from its head: the
        oldest (least likely changed since, or cached older) non-empty ones not larger than
        :data:`MAX_CHECKED_BYTES`. A report's entries stay entries."""
        if self.check.count == 0:
            return inventory
        if isinstance(inventory, Ordered):
            entries = inventory.entries
            head = list(islice(entries, PICKED_FROM))
            objects: Iterable[InventoryObject] = map(object_of, head)
            passed: Iterable[InventoryObject] = Ordered(chain(head, entries), inventory.where,
                                                        inventory.fix)
        else:
            rest = iter(inventory)
            objects = listed = list(islice(rest, PICKED_FROM))
            passed = chain(listed, rest)
        self._picked = heapq.nsmallest(self.check.count, (
            item for item in objects if item.is_latest and not item.is_delete_marker
            and 0 < item.size <= MAX_CHECKED_BYTES), key=lambda item: (item.last_modified,
                                                                        item.key))
        return passed

    def objects(self, bucket: Bucket) -> int:
        """Fetch the picked objects' URLs and compare each with the object's bytes read from
        ``bucket`` as it is now (length and SHA-256); an object gone since the inventory is not
        checked. The count checked.

        :raises PublishError: a URL answers an error or other bytes (it, the key, the object
            and what to fix named).
        """
        checked = 0
        for item in self._picked:
            with bucket.read(item.key) as read:
                if read is None:
                    continue
                digest, length = hashlib.sha256(), 0
                for chunk in read:
                    digest.update(chunk)
                    length += len(chunk)
            url = self.resources + quoted_key(item.key)
            what = f"the object {item.key!r} ({bucket.where(item.key)})"
            self._compare(url, length, digest.hexdigest(), what, "base_url", self.resources,
                          _doubled(self.resources, item.key, "the bucket's"))
            checked += 1
        return checked

    def document(self, destination: Destination, key: str) -> bool:
        """Fetch the document at ``key`` of ``destination`` at ``publish_url`` and compare it
        with the one stored; False: nothing to compare (no ``publish_url``, no document).

        :raises PublishError: the URL answers an error or other bytes.
        """
        data = destination.read_bytes(key) if self.publish_url is not None else None
        if self.publish_url is None or data is None:
            return False
        self._compare(self.publish_url + quoted_key(key), len(data),
                      hashlib.sha256(data).hexdigest(), destination.object_url(key),
                      "publish_url", self.publish_url,
                      _doubled(self.publish_url, key, "publish_to's"))
        return True

    def _compare(self, url: str, length: int, sha256: str, what: str, name: str, base: str,
                 doubled: str) -> None:
        expected = Metadata(length=length, hash=Hashes.of(sha_256=sha256))
        served = "the bucket's root" if name == "base_url" else "publish_to"
        fix = doubled or (f"{name} ({base!r}) must be where {served} is served, the "
                          "very bucket or folder published, not another.")
        try:
            self._client.download(url, io.BytesIO(), expected=expected)
        except FetchError as exc:
            answer = f"HTTP {exc.status}" if exc.status is not None else "no answer"
            raise PublishError(f"{url} ({name} plus the key) answers {answer} for {what}: {fix} "
                               f"Nothing was published ({exc}; {_OFF})",
                               rerun_helps=exc.status is None or exc.status >= 500) from exc
        except ContentMismatchError as exc:
            raise PublishError(
                f"{url} ({name} plus the key) serves other bytes than {what}, "
                f"{byte_size(length)}: its {exc.what} is {exc.actual}, not {exc.expected}. "
                f"{fix} Or a cache in front serves an older copy: let it expire or "
                f"invalidate it. Nothing was published ({_OFF})") from exc
        except UnsafeContentError as exc:
            raise PublishError(f"{url} ({name} plus the key) is not fetched: {exc}. A "
                               "publication served on a private address is checked with a "
                               "connection that allows it (allow_private); nothing was "
                               f"published ({_OFF})") from exc


def _doubled(base: str, key: str, root: str) -> str:
    """What to fix when ``base``'s path ends with the folders ``key`` starts with (the URL
    then has them twice: ``.../plus/plus/x``); ``""`` if it does not. ``root``: whose root
    ``base`` should serve."""
    folders = [part for part in unquote(urlsplit(base).path).split("/") if part]
    parts = key.split("/")[:-1]
    for size in range(min(len(folders), len(parts)), 0, -1):
        if folders[-size:] == parts[:size]:
            twice = "/".join(parts[:size]) + "/"
            return (f"the key starts with {twice!r} and the URL it is joined to ends with it, "
                    "so the URL has it twice: each URL is the base plus the whole key, so the "
                    f"base is where {root} root is served, without {twice!r}.")
    return ""
