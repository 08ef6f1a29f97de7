"""The ``hash`` attribute (spec section 7) and digests computed while streaming.

The attribute is a whitespace-delimited list of ``algorithm:hexdigest`` tokens. Values that are
not hex (or not ``algorithm:value`` at all) are kept as written and flagged, never dropped.
"""

from __future__ import annotations

import hashlib
import io
import os
import string
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any, Protocol

from ..errors import ContentMismatchError

__all__ = ["DEFAULT_ALGORITHMS", "HASH_ALGORITHMS", "Digester", "DigestingWriter", "HashValue",
           "Hashes", "stored_digests"]

#: Algorithm tokens mapped to :mod:`hashlib` names: the spec's examples use md5 and sha-256.
HASH_ALGORITHMS: dict[str, str] = {
    "md5": "md5", "sha-1": "sha1", "sha-256": "sha256", "sha-512": "sha512"}
#: Direct constructors: ``hashlib.new(name)`` looks the name up on every call.
_CONSTRUCTORS: dict[str, Callable[[], _Hasher]] = {
    name: getattr(hashlib, module) for name, module in HASH_ALGORITHMS.items()}
#: What a :class:`Digester` computes unless told otherwise.
DEFAULT_ALGORITHMS = ("md5", "sha-1", "sha-256")
#: Known algorithms, strongest first: of a resource's listed hashes, the first here is the one
#: verified (see :meth:`Hashes.strongest`).
BY_STRENGTH = ("sha-512", "sha-256", "sha-1", "md5")
#: The digest stored with every mirrored object, whatever the Source lists: an audit can always
#: compare the object with itself, and a later listing in sha-256 with it.
STORED_DIGEST = "sha-256"

#: Past this many bytes of one stream, a :class:`Digester` computes its digests on helper
#: threads while the caller goes on, a batch of ``BATCH`` bytes at a time (see
#: :class:`Digester`).
OVERLAP_AFTER = 1 << 20
BATCH = 1 << 20

_HEX = frozenset(string.hexdigits)


class _Hasher(Protocol):
    """What :mod:`hashlib`'s constructors make."""

    def update(self, data: bytes | bytearray, /) -> None: ...
    def hexdigest(self) -> str: ...


@dataclass(frozen=True, slots=True)
class HashValue:
    """One token of a ``hash`` attribute, as written."""

    algorithm: str
    digest: str

    @classmethod
    def parse(cls, token: str) -> HashValue:
        algorithm, sep, digest = token.partition(":")
        if not sep:
            return cls("", token)
        return cls(algorithm.lower(), digest)

    @property
    def is_hex(self) -> bool:
        return bool(self.digest) and _HEX.issuperset(self.digest)

    @property
    def is_known(self) -> bool:
        """Whether the algorithm is one we can compute (:data:`HASH_ALGORITHMS`)."""
        return self.algorithm in HASH_ALGORITHMS

    def __str__(self) -> str:
        return f"{self.algorithm}:{self.digest}" if self.algorithm else self.digest


@dataclass(frozen=True, slots=True)
class Hashes:
    """The parsed ``hash`` attribute: its tokens in order."""

    values: tuple[HashValue, ...]

    @classmethod
    def parse(cls, text: str) -> Hashes:
        values = []
        for token in text.split():  # HashValue.parse, inline: a few per resource and run
            algorithm, sep, digest = token.partition(":")
            values.append(HashValue(algorithm.lower(), digest) if sep else HashValue("", token))
        return cls(tuple(values))

    @classmethod
    def of(cls, **digests: str) -> Hashes:
        """Build from keyword digests: ``Hashes.of(md5="...", sha_256="...")``."""
        return cls(tuple(HashValue(name.replace("_", "-"), value)
                         for name, value in digests.items()))

    def get(self, algorithm: str) -> str | None:
        """The digest for ``algorithm`` (e.g. ``"sha-256"``), or None."""
        for value in self.values:
            if value.algorithm == algorithm:
                return value.digest
        return None

    def strongest(self) -> tuple[str, ...]:
        """The strongest listed algorithm we can compute, alone (none if nothing listed is).

        Section 7 lets a ``hash`` attribute carry several algorithms' digests of the same bytes;
        one match of the strongest proves the bytes as well as all of them would. md5 costs about
        twice sha-256 per byte here (sha-256 is computed in hardware), so verifying both would
        cap a large resource's download at md5's speed for no gain in certainty.
        """
        listed = {value.algorithm for value in self.values}
        return next(((name,) for name in BY_STRENGTH if name in listed), ())

    @property
    def problems(self) -> list[str]:
        """Human-readable descriptions of tokens that do not follow section 7."""
        found = []
        for value in self.values:
            if not value.algorithm:
                found.append(f"{value.digest!r} has no 'algorithm:' prefix")
            elif not value.is_hex:
                found.append(f"{value} is not a hex-encoded digest")
        return found

    def __str__(self) -> str:
        return " ".join([f"{value.algorithm}:{value.digest}" if value.algorithm else value.digest
                         for value in self.values])

    def __bool__(self) -> bool:
        return bool(self.values)


class Digester:
    """Computes digests and length of a byte stream as it passes by.

    In two algorithms or more, past its first :data:`OVERLAP_AFTER` bytes, a stream's chunks
    (``bytes``) are gathered into batches of :data:`BATCH` bytes, and each batch is digested on
    helper threads, one per algorithm, side by side, while the caller receives and writes the
    next: hashlib lets go of the interpreter's lock while it digests. One batch is digested
    while the next gathers, so a stream holds at most two, and every digest read waits for the
    last. Batches, not chunks, so that the hand-overs between threads, which on a busy machine
    cost a wait for a core each, are few. A smaller stream is digested on the caller's thread;
    so is a large one while one stream per two cores is already being digested on helpers
    (many large streams at once keep the cores busy by themselves, and handing theirs over
    would only add work), and so is any stream in one algorithm: a helper then runs no
    digest beside another, and each hand-over waits for the caller to let go of the
    interpreter's lock, which a thread receiving at full speed rarely does (measured in
    docs/design.md, "Large resources": md5 and sha-256 on helpers 15% faster than on the
    caller, sha-256 alone 5-10% slower).

    :param algorithms: spec algorithm tokens to compute; defaults to md5, sha-1 and sha-256.
    """

    def __init__(self, algorithms: Iterable[str] = DEFAULT_ALGORITHMS) -> None:
        self._hashers = {
            name: _CONSTRUCTORS[name]() for name in algorithms if name in _CONSTRUCTORS}
        self.length = 0
        self._pending: list[Future[None]] = []  # the batch being digested, per algorithm
        self._batch: list[bytes | bytearray] = []  # the one gathering
        self._batched = 0
        self._overlapping: bool | None = None  # None: not decided yet (below OVERLAP_AFTER)

    @classmethod
    def for_expected(cls, expected: Hashes | None) -> Digester:
        """A digester for the strongest known algorithm in ``expected`` (none if it has none)."""
        return cls(expected.strongest() if expected else ())

    def update(self, chunk: bytes | bytearray, *, owned: bool = False) -> None:
        """Digest ``chunk`` (maybe later, on a helper: ``bytes``, or any chunk the caller says
        it ``owned`` and never changes again; a caller may refill its own buffer)."""
        self.length += len(chunk)
        if self._overlapping is None and self.length > OVERLAP_AFTER:
            self._overlapping = len(self._hashers) > 1 and _streams.acquire(blocking=False)
        if self._overlapping and (owned or type(chunk) is bytes):
            self._batch.append(chunk)
            self._batched += len(chunk)
            if self._batched >= BATCH:
                self._hand_over()
            return
        if self._pending or self._batch:
            self._settle()
        for hasher in self._hashers.values():
            hasher.update(chunk)

    def _hand_over(self) -> None:
        """Digest the gathered batch on the helpers, once the one before it is done."""
        batch, self._batch, self._batched = self._batch, [], 0
        self._wait()
        helpers = _helpers()
        self._pending = [helpers.submit(_digest, hasher, batch)
                         for hasher in self._hashers.values()]

    def _wait(self) -> None:
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def _settle(self) -> None:
        """Digest whatever was handed to the helpers or gathered for them."""
        if self._batch:
            self._hand_over()
        self._wait()

    def _done(self) -> None:
        """The digests are read: every chunk digested, and the helpers free for another
        stream (later chunks, if any, are digested on the caller's thread)."""
        self._settle()
        if self._overlapping:
            self._overlapping = False
            _streams.release()

    def __del__(self) -> None:  # a stream abandoned half-way (a failed try) frees its helpers
        if self._overlapping:
            _streams.release()

    def hexdigest(self, algorithm: str) -> str:
        self._done()
        return self._hashers[algorithm].hexdigest()

    def hashes(self) -> Hashes:
        """The computed digests, in the order they were asked for."""
        self._done()
        return Hashes(tuple([HashValue(name, h.hexdigest()) for name, h in self._hashers.items()]))

    def verify(self, url: str, *, hashes: Hashes | None = None, length: int | None = None
               ) -> bool:
        """Check the stream against its description; True if anything could be compared.

        Only digests we computed are compared; a value that is not hex cannot match and is
        reported as a mismatch. False means nothing was checked: no length, and no hash in an
        algorithm we computed; the caller decides what unverified content is worth.

        :raises ContentMismatchError: naming the URL, the expected and the actual value.
        """
        self._done()
        checked = length is not None
        if length is not None and length != self.length:
            raise ContentMismatchError(
                url=url, what="length", expected=str(length), actual=str(self.length)
            )
        for value in hashes.values if hashes else ():
            hasher = self._hashers.get(value.algorithm)
            if hasher is None:
                continue
            checked = True
            if hasher.hexdigest() != value.digest.lower():
                raise ContentMismatchError(
                    url=url, what=f"{value.algorithm} hash", expected=value.digest,
                    actual=hasher.hexdigest(),
                )
        return checked


def stored_digests(listed: Hashes | None) -> tuple[str, ...]:
    """What a mirrored object's digester computes: :data:`STORED_DIGEST`, and the strongest
    listed algorithm, the one verified."""
    strongest = listed.strongest() if listed else ()
    return (STORED_DIGEST,) if strongest == (STORED_DIGEST,) else (STORED_DIGEST, *strongest)


def _digest(hasher: _Hasher, batch: list[bytes | bytearray]) -> None:
    for chunk in batch:
        hasher.update(chunk)


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _stream_slots() -> threading.Semaphore:
    """Streams digested on the helpers at once: one per two cores."""
    return threading.Semaphore(max(1, (os.cpu_count() or 1) // 2))


_streams = _stream_slots()


def _helpers() -> ThreadPoolExecutor:
    """The threads large chunks are digested on, one per core (at least two), shared by every
    digester of the process and started on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max(2, os.cpu_count() or 1),
                                       thread_name_prefix="resourcesync-digest")
        return _pool


def _forget_helpers() -> None:
    """In a forked child: the parent's threads are not there, so start anew."""
    global _pool, _pool_lock, _streams
    _pool, _pool_lock = None, threading.Lock()
    _streams = _stream_slots()


os.register_at_fork(after_in_child=_forget_helpers)


class DigestingWriter(io.RawIOBase):
    """A write-only stream that passes what is written on to ``file``, digesting it on the way
    (:attr:`digester`, of ``algorithms``)."""

    def __init__(self, file: IO[bytes], algorithms: Iterable[str] = DEFAULT_ALGORITHMS) -> None:
        super().__init__()
        self._file = file
        self.digester = Digester(algorithms)

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.digester.update(data)
        return self._file.write(data)
