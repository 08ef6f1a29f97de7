"""When to try a request again, and after how long: shared by the sync and async clients."""

from __future__ import annotations

import logging
import random
import threading
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from ..errors import FetchError
from .policy import ClientPolicy

__all__ = ["RETRY_STATUSES", "Attempts", "RetryBudget", "retry_after_seconds"]

log = logging.getLogger(__name__)

#: Statuses worth another try (DESIGN.md: 429 and 5xx).
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Retries of a run logged one by one at INFO; the rest at DEBUG, so that a Source down makes
#: tens of lines, not one per resource and try.
RETRIES_SHOWN = 10


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """A ``Retry-After`` value (seconds, or an HTTP date) as seconds from now; None if unusable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class RetryBudget:
    """What one client (one run) may spend on retries: the waits between tries and the failed
    tries themselves, in seconds. Shared by every request of the client, thread-safe."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._left = seconds
        self._lock = threading.Lock()
        self._told = False
        self._retries = 0

    def restart(self) -> None:
        """Give the whole budget again: a new run of a client kept open (a trigger's poll)."""
        with self._lock:
            self._left, self._told, self._retries = self.seconds, False, 0

    def note_retry(self, url: str, delay: float, attempt: int) -> None:
        """Log that ``url`` is tried again (its ``attempt``-th try) in ``delay`` seconds: the
        first :data:`RETRIES_SHOWN` retries of the run at INFO, the others at DEBUG."""
        with self._lock:
            self._retries += 1
            count = self._retries
        if count == RETRIES_SHOWN + 1:
            log.info("More retries in this run: logged at DEBUG only")
        log.log(logging.INFO if count <= RETRIES_SHOWN else logging.DEBUG,
                "Retrying %s in %.1f s (try %d)", url, delay, attempt)

    def spend(self, seconds: float) -> None:
        """A failed try took ``seconds``."""
        with self._lock:
            self._left -= seconds

    def wait(self, delay: float, url: str) -> bool:
        """Take ``delay`` for a wait before a retry of ``url``; False (and nothing taken) when
        less than that is left. The first refusal is logged."""
        with self._lock:
            if self._left > 0 and delay <= self._left:
                self._left -= delay
                return True
            told, self._told = self._told, True
        if not told:
            log.warning("The retry_budget of %g s for this run is spent (the next retry of %s "
                        "would wait %.1f s): nothing more is retried in this run", self.seconds,
                        url, delay)
        return False


class Attempts:
    """The tries of one request, counted as they start, and the delay before each retry.

    :raises FetchError: when the tries or the run's retry budget are used up, or the server
        asks to wait longer than the policy allows; the error names the URL, the last status
        and the number of tries.
    """

    def __init__(self, policy: ClientPolicy, url: str, budget: RetryBudget) -> None:
        self._policy = policy
        self._budget = budget
        self.url = url
        self.tries = 0

    def count(self) -> None:
        """A try has started."""
        self.tries += 1

    @property
    def spent(self) -> bool:
        return self.tries >= self._policy.max_tries

    def status_delay(self, response: httpx.Response) -> float | None:
        """None: use this response. A float: close it and retry after that many seconds."""
        status = response.status_code
        if status not in RETRY_STATUSES:
            return None
        asked = retry_after_seconds(response.headers.get("Retry-After"))
        if asked is not None and asked > self._policy.max_backoff:
            raise FetchError(
                f"the server asks to retry after {asked:.0f} s, more than the "
                f"{self._policy.max_backoff:.0f} s allowed", url=self.url, status=status,
                tries=self.tries)
        return self.retry_delay(f"still failing with HTTP {status}", status, asked)

    def retry_delay(self, problem: str, status: int | None = None,
                    asked: float | None = None) -> float:
        """The delay before the next try, or :class:`FetchError` when none is left."""
        if self.spent:
            raise FetchError(problem, url=self.url, status=status, tries=self.tries)
        if asked is not None:
            delay = asked
        else:
            ceiling = min(self._policy.max_backoff, self._policy.backoff * 2 ** (self.tries - 1))
            delay = random.uniform(0, ceiling)  # full jitter
        if not self._budget.wait(delay, self.url):
            raise FetchError(
                f"{problem}; not retried: the retry_budget of {self._budget.seconds:g} s for "
                "this run is spent (raise retry_budget on the connection, or re-run when the "
                "Source is healthy)", url=self.url, status=status, tries=self.tries)
        return delay
