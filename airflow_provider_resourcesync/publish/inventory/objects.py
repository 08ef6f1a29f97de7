"""An inventoried object, and the rules every inventory applies to its keys.

A key is published as a URL (``base_url`` plus the percent-encoded key), so an inventory skips
a key that no URL can carry faithfully: one that is empty, holds a control character (U+0000 to
U+001F, U+007F to U+009F: HTTP clients and servers strip or refuse them), is not valid UTF-8
(an S3 Inventory CSV key that URL-decodes to bytes that are not UTF-8, a file name that is not),
or has a ``.`` or ``..`` segment (a client resolves those away, RFC 3986 section 5.2.4, and would
fetch another object). Such a key is skipped and counted (:mod:`.skipped`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

__all__ = ["CONTROL", "MD5_ETAGS", "InventoryObject", "fit", "in_scope", "unpublishable"]

#: A control character: no key, ETag, version or encryption status may hold one.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
#: The encryption statuses (S3 Inventory's EncryptionStatus) of objects whose single-part
#: ETag S3 documents as the MD5 of their bytes: unencrypted, or SSE-S3. Not SSE-KMS, DSSE-KMS
#: nor SSE-C, whose ETags are not MD5s.
MD5_ETAGS = frozenset({"NOT-SSE", "SSE-S3"})
_MD5 = re.compile("[0-9a-f]{32}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_REFUSED_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_DOT_SEGMENT = re.compile(r"(?:^|/)\.\.?(?:/|$)")
_DOT_SEGMENT_IN_LINES = re.compile(r"(?:^|/)\.\.?(?:/|$)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class InventoryObject:
    """One object (or one version of it) as an inventory lists it.

    :param key: the object's key, decoded (never URL-encoded).
    :param size: its length in bytes (0 for a delete marker).
    :param etag: its ETag without quotes, or the inventory's own change token (a directory
        walk's is size and mtime, see :mod:`.local`); ``""`` for a delete marker. Compared
        only with tokens of the same kind of inventory.
    :param last_modified: when it was last written, in UTC.
    :param version_id: its version, where the inventory lists versions.
    :param is_latest: False for a version that is not the current one.
    :param is_delete_marker: True for a delete marker (the key is deleted if it is the latest).
    :param encryption: its EncryptionStatus, where the inventory says it (a report with the
        column); None: not said (a listing, a report without it, a directory walk).
    """

    key: str
    size: int
    etag: str
    last_modified: datetime
    version_id: str | None = None
    is_latest: bool = True
    is_delete_marker: bool = False
    encryption: str | None = None

    @property
    def md5(self) -> str | None:
        """Its MD5, where S3 says its ETag is one: an object stored in one part (32 hex digits;
        a multipart ETag ends ``-<parts>``) whose inventory says it is unencrypted or SSE-S3
        (:data:`MD5_ETAGS`); else None, never a guess: a listing says no encryption status,
        and an SSE-KMS object's ETag looks like any MD5."""
        etag = self.etag.lower()
        return etag if self.encryption in MD5_ETAGS and _MD5.fullmatch(etag) else None


def unpublishable(key: str) -> str | None:
    """Why a URL cannot carry ``key`` (see the module's rules); None if one can."""
    if key and _REFUSED_CHARACTER.search(key) is None and (
            ("/." not in key and key[0] != ".") or _DOT_SEGMENT.search(key) is None):
        return None
    if not key:
        return "is empty"
    if _SURROGATE.search(key):
        return "is not valid UTF-8"
    if CONTROL.search(key):
        return "holds a control character, which no URL can carry"
    return "has a '.' or '..' segment, which a URL client resolves away"


def fit(lines: str) -> bool:
    """Whether a URL can carry every key of ``lines`` (keys one a line, none empty): a batch
    of keys checked at once, conservatively (a key with any character that is not printable, a
    no-break space say, is left to :func:`unpublishable`)."""
    return lines.replace("\n", "").isprintable() and (
        ("/." not in lines and "\n." not in lines and lines[:1] != ".")
        or _DOT_SEGMENT_IN_LINES.search(lines) is None)


def in_scope(key: str, prefix: str, exclude_prefix: str | None) -> bool:
    """Whether ``key`` is published: under ``prefix``, not under ``exclude_prefix`` (where the
    publication itself is written: never part of what it publishes), and not a folder marker
    (a key ending with ``/``, as the S3 console makes for a folder: no web server serves it as
    a file, and no Destination's directory could hold it beside the folder's objects)."""
    return (key.startswith(prefix) and not key.endswith("/")
            and not (exclude_prefix and key.startswith(exclude_prefix)))
