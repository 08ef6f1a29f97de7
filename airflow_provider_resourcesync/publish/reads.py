"""Objects read ahead, a few at once, while the packages are written one object after another.

A package of many small objects from a distant store is bound by round trips (a million at
20 ms is five and a half hours one at a time). :class:`ReadAhead` reads the next objects on
``concurrency`` threads while the package writer takes them in plan order, so the packages come
out as they would read one at a time, byte for byte. It is a :class:`~.bucket.Bucket`: the
writer reads through it as through the bucket itself.

What is held is bounded: at most ``2 x concurrency`` objects are read ahead; one of at most
:data:`WHOLE` bytes is read whole into memory if the bytes held stay within ``max_bytes``,
else (a larger object, or memory full) its read is handed over open, its bytes streamed into
the package by the writer itself. Each read follows the policy of the sync engine's requests
(:class:`~..client.policy.ClientPolicy`): a read that fails for a while (a throttled or broken
request, a dropped connection, one over ``request_timeout``) is tried again, up to
``max_tries``, after a jittered backoff, within the run's ``retry_budget``; a read handed over
open is retried until it opens, not once its bytes are in a package. An error names the
bucket and the key, and the tries. An object gone since the inventory reads as None, as from
the bucket. A line of progress is logged every :data:`~..units.PROGRESS_SECONDS`: objects
read (of how many), bytes, rates and time left.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from typing import Any, TypeVar

from ..client.policy import ClientPolicy
from ..client.retry import Attempts, RetryBudget
from ..errors import FetchError, InvalidValueError, PublishError
from ..protocol.closing import ClosedOnExit
from ..units import PROGRESS_SECONDS, pace
from .bucket import Bucket, Read, S3Bucket

__all__ = ["DEFAULT_CONCURRENCY", "MAX_BYTES", "READ_POLICY", "WHOLE", "ReadAhead",
           "checked_concurrency"]

#: Objects read at once by default: as many as the sync engine fetches.
DEFAULT_CONCURRENCY = 16
#: The reads' retries, deadline and budget by default: the sync engine's requests'.
READ_POLICY = ClientPolicy()
#: An object of at most this many bytes is read whole by a thread; a larger one is streamed.
WHOLE = 1024 * 1024
#: Bytes of objects read ahead held in memory at most, by default.
MAX_BYTES = 64 * 1024 * 1024
#: The most objects read at once.
MOST = 256

G = TypeVar("G")


def checked_concurrency(concurrency: int) -> int:
    """:raises InvalidValueError: ``concurrency`` is not 1 to :data:`MOST`."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not (
            1 <= concurrency <= MOST):
        raise InvalidValueError(f"concurrency {concurrency!r}: give 1 to {MOST} (objects read "
                                "at once; 1: one after another)")
    return concurrency


class _Fetched:
    """A read done ahead: the object (None: gone), the read left open to stream (None: read
    whole), and the bytes it holds in memory."""

    __slots__ = ("held", "open", "read")

    def __init__(self, read: Read | None, open: ExitStack | None = None, held: int = 0) -> None:
        self.read = read
        self.open = open
        self.held = held


class ReadAhead(ClosedOnExit):
    """``bucket``'s objects read on ``concurrency`` threads ahead of the one asked for; give the
    objects to read with :meth:`groups`, read each with :meth:`read` in that order.

    :param policy: retries, ``request_timeout`` (a whole object read at once) and
        ``retry_budget`` (the run's, shared by all the reads).
    :param max_bytes: bytes read ahead held in memory at most.
    :param log: where progress lines go; ``total``: the objects the run reads, where known.
    """

    def __init__(self, bucket: Bucket, concurrency: int = DEFAULT_CONCURRENCY, *,
                 policy: ClientPolicy = READ_POLICY, max_bytes: int = MAX_BYTES,
                 log: Callable[[str], None] = lambda _: None, total: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.bucket = bucket
        self.policy = policy
        self.max_bytes = max_bytes
        self.held = self.peak = 0  # bytes read ahead in memory now, and at most
        self._lock = threading.Lock()
        self._budget = RetryBudget(policy.retry_budget)
        self._window = 2 * checked_concurrency(concurrency)
        self._pool = ThreadPoolExecutor(concurrency, "resourcesync_read") \
            if concurrency > 1 else None
        self._pending: OrderedDict[str, Future[_Fetched]] = OrderedDict()
        self._keys: deque[str] = deque()  # of the groups taken, not yet read ahead
        self._source: Iterator[Any] = iter(())
        self._taken: deque[Any] = deque()  # groups taken from the source, not yet given
        self._keys_of: Callable[[Any], Iterable[str]] = lambda _: ()
        self._log, self._total, self._clock = log, total, clock
        self._started = self._told = clock()
        self._done = self._bytes = 0
        self._check_room(concurrency, log)

    def groups(self, groups: Iterable[G], keys: Callable[[G], Iterable[str]]) -> Iterator[G]:
        """``groups`` (packages, say) as they come, the ``keys`` of each (of the objects it
        reads, in the order it reads them) read ahead."""
        self._source, self._keys_of = iter(groups), keys
        while self._taken or self._take_group():
            yield self._taken.popleft()

    # the Bucket protocol
    def where(self, key: str) -> str:
        return self.bucket.where(key)

    def type_of(self, key: str) -> str | None:
        return self.bucket.type_of(key)

    @contextmanager
    def read(self, key: str) -> Iterator[Read | None]:
        """The object at ``key`` as read ahead (or read now, if it was not), as
        :meth:`.Bucket.read` gives it.

        :raises PublishError: it cannot be read, after its tries (bucket and key named).
        """
        fetched = self._take(key)
        length = 0
        try:
            if fetched.read is not None:
                length = fetched.read.length
            yield fetched.read
        finally:
            self._release(fetched)
            self._count(length)

    def close(self) -> None:
        """Stop reading ahead; what was read and not taken is let go."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._let_go_ahead()

    def _take(self, key: str) -> _Fetched:
        """``key``'s read ahead, the reads before it let go (not asked for: a package taken as
        an earlier attempt wrote it); read now if it is not ahead."""
        if key not in self._pending:
            self._skip_to(key)
            self._top_up()
            return self._fetch(key, whole=False)
        while True:
            first, future = self._pending.popitem(last=False)
            if first == key:
                break
            self._drop(future)
        self._top_up()
        return future.result()

    def _skip_to(self, key: str) -> None:
        """Let go of every read ahead, and of the keys up to ``key`` not read ahead yet."""
        self._let_go_ahead()
        if key in self._keys:
            while self._keys.popleft() != key:
                pass

    def _let_go_ahead(self) -> None:
        while self._pending:
            self._drop(self._pending.popitem(last=False)[1])

    def _top_up(self) -> None:
        """Start reads until :attr:`_window` are ahead, taking groups from the source as the
        keys run out."""
        if self._pool is None:
            return
        while len(self._pending) < self._window and (self._keys or self._take_group()):
            if not self._keys:
                continue  # a group that reads nothing (deletions only)
            key = self._keys.popleft()
            if key not in self._pending:
                self._pending[key] = self._pool.submit(self._fetch, key)

    def _take_group(self) -> bool:
        """Take the next group from the source, its keys to read ahead; False: none is left."""
        group = next(self._source, _END)
        if group is _END:
            return False
        self._taken.append(group)
        if self._pool is not None:
            self._keys.extend(self._keys_of(group))
        return True

    def _fetch(self, key: str, whole: bool = True) -> _Fetched:
        """Read ``key`` as the policy says (``whole``: into memory, where it may be; else
        opened for the caller), retrying what fails for a while."""
        attempts = Attempts(self.policy, self.bucket.where(key), self._budget)
        while True:
            attempts.count()
            started = time.monotonic()
            try:
                return self._once(key, whole, started)
            except PublishError as error:
                if not error.rerun_helps:
                    raise
                self._budget.spend(time.monotonic() - started)
                try:
                    delay = attempts.retry_delay(str(error))
                except FetchError:
                    why = "" if attempts.spent else "; the run's retry_budget is spent"
                    raise type(error)(f"{error} (after {attempts.tries} tries{why})",
                                      rerun_helps=True) from error
            time.sleep(delay)

    def _once(self, key: str, whole: bool, started: float) -> _Fetched:
        """One try: the object read whole where it may be, else opened for the caller."""
        stack = ExitStack()
        try:
            read = stack.enter_context(self.bucket.read(key))
            if read is None:
                return _Fetched(None)
            if not whole or read.length > WHOLE or not self._hold(read.length):
                return _Fetched(read, stack.pop_all())
            try:
                chunks = []
                for chunk in read:
                    chunks.append(chunk)
                    if time.monotonic() - started > self.policy.request_timeout:
                        raise PublishError(f"{self.bucket.where(key)} : not read within the "
                                           f"request_timeout of {self.policy.request_timeout:g} s",
                                           rerun_helps=True)
            except BaseException:
                self._let_go(read.length)
                raise
            return _Fetched(Read(iter(chunks), read.type, read.etag, read.length,
                                 read.modified), held=read.length)
        finally:
            stack.close()

    def _hold(self, length: int) -> bool:
        """Take ``length`` bytes of the memory bound, if they are left."""
        with self._lock:
            if self.held + length > self.max_bytes:
                return False
            self.held += length
            self.peak = max(self.peak, self.held)
            return True

    def _let_go(self, length: int) -> None:
        with self._lock:
            self.held -= length

    def _release(self, fetched: _Fetched) -> None:
        if fetched.open is not None:
            fetched.open.close()
        self._let_go(fetched.held)

    def _drop(self, future: Future[_Fetched]) -> None:
        if future.cancel():
            return
        with suppress(Exception):  # a read not asked for: its failure is no one's
            self._release(future.result())

    def _count(self, length: int) -> None:
        self._done += 1
        self._bytes += length
        now = self._clock()
        if now - self._told >= PROGRESS_SECONDS:
            self._told = now
            self._log("Progress: " + pace(self._done, self._total, self._bytes,
                                          now - self._started, "objects read"))

    def _check_room(self, concurrency: int, log: Callable[[str], None]) -> None:
        """Log where the S3 client keeps fewer connections than the reads hold open."""
        if isinstance(self.bucket, S3Bucket):
            # botocore's default pool: 10 connections
            room = getattr(self.bucket.client.meta.config, "max_pool_connections", None) or 10
            if room < self._window:
                log(f"the S3 client keeps {room} connections, fewer than the {self._window} "
                    f"reads of concurrency {concurrency} may hold open: each one over is opened "
                    "and closed again (give its config a larger max_pool_connections)")


_END = object()
