"""The ``hash`` attribute (spec section 7) and digests computed while streaming.

The attribute is a whitespace-delimited list of ``algorithm:hexdigest`` tokens. Values that are
not hex (or not ``algorithm:value`` at all) are kept as written and flagged, never dropped.
"""

from __future__ import annotations

import hashlib
import io
import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

from ..errors import ContentMismatchError

__all__ = ["DEFAULT_ALGORITHMS", "HASH_ALGORITHMS", "Digester", "DigestingWriter", "HashValue",
           "Hashes"]

#: Algorithm tokens mapped to :mod:`hashlib` names: the spec's examples use md5 and sha-256.
HASH_ALGORITHMS: dict[str, str] = {
    "md5": "md5", "sha-1": "sha1", "sha-256": "sha256", "sha-512": "sha512"}
#: Direct constructors: ``hashlib.new(name)`` looks the name up on every call.
_CONSTRUCTORS = {name: getattr(hashlib, module) for name, module in HASH_ALGORITHMS.items()}
#: What a :class:`Digester` computes unless told otherwise.
DEFAULT_ALGORITHMS = ("md5", "sha-1", "sha-256")

_HEX = frozenset(string.hexdigits)


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
        """Whether the algorithm is one we can compute (md5, sha-1, sha-256)."""
        return self.algorithm in HASH_ALGORITHMS

    def __str__(self) -> str:
        return f"{self.algorithm}:{self.digest}" if self.algorithm else self.digest


@dataclass(frozen=True, slots=True)
class Hashes:
    """The parsed ``hash`` attribute: its tokens in order."""

    values: tuple[HashValue, ...]

    @classmethod
    def parse(cls, text: str) -> Hashes:
        return cls(tuple(HashValue.parse(token) for token in text.split()))

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
        return " ".join(str(value) for value in self.values)

    def __bool__(self) -> bool:
        return bool(self.values)


class Digester:
    """Computes digests and length of a byte stream as it passes by.

    :param algorithms: spec algorithm tokens to compute; defaults to md5, sha-1 and sha-256.
    """

    def __init__(self, algorithms: Iterable[str] = DEFAULT_ALGORITHMS) -> None:
        self._hashers = {
            name: _CONSTRUCTORS[name]() for name in algorithms if name in _CONSTRUCTORS}
        self.length = 0

    @classmethod
    def for_expected(cls, expected: Hashes | None) -> Digester:
        """A digester for the known algorithms in ``expected`` (none if it has none)."""
        return cls(v.algorithm for v in expected.values if v.is_known) if expected else cls(())

    def update(self, chunk: bytes) -> None:
        self.length += len(chunk)
        for hasher in self._hashers.values():
            hasher.update(chunk)

    def hexdigest(self, algorithm: str) -> str:
        return self._hashers[algorithm].hexdigest()

    def hashes(self) -> Hashes:
        """The computed digests, in the order they were asked for."""
        return Hashes(tuple([HashValue(name, h.hexdigest()) for name, h in self._hashers.items()]))

    def verify(self, url: str, *, hashes: Hashes | None = None, length: int | None = None
               ) -> bool:
        """Check the stream against its description; True if anything could be compared.

        Only digests we computed are compared; a value that is not hex cannot match and is
        reported as a mismatch. False means nothing was checked: no length, and no hash in an
        algorithm we computed; the caller decides what unverified content is worth.

        :raises ContentMismatchError: naming the URL, the expected and the actual value.
        """
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
