"""When to try a request again, and after how long: shared by the sync and async clients."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from ..errors import FetchError
from .policy import ClientPolicy

__all__ = ["RETRY_STATUSES", "Attempts", "retry_after_seconds"]

#: Statuses worth another try (DESIGN.md: 429 and 5xx).
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


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


class Attempts:
    """The tries of one request: each outcome either ends them or names the delay before the next.

    :raises FetchError: when the tries are used up, or the server asks to wait longer than the
        policy allows; the error names the URL, the last status and the number of tries.
    """

    def __init__(self, policy: ClientPolicy, url: str) -> None:
        self._policy = policy
        self.url = url
        self.tries = 0

    def after_response(self, response: httpx.Response) -> float | None:
        """None: use this response. A float: close it and retry after that many seconds."""
        self.tries += 1
        status = response.status_code
        if status not in RETRY_STATUSES:
            return None
        asked = retry_after_seconds(response.headers.get("Retry-After"))
        if asked is not None and asked > self._policy.max_backoff:
            raise FetchError(
                f"the server asks to retry after {asked:.0f} s, more than the "
                f"{self._policy.max_backoff:.0f} s allowed", url=self.url, status=status,
                tries=self.tries)
        self._give_up_if_spent(f"still failing with HTTP {status}", status)
        return asked if asked is not None else self._backoff()

    def after_error(self, error: httpx.TransportError) -> float:
        """The delay before the next try after a connection or protocol error."""
        self.tries += 1
        self._give_up_if_spent(f"{type(error).__name__}: {error}", None)
        return self._backoff()

    def _give_up_if_spent(self, problem: str, status: int | None) -> None:
        if self.tries >= self._policy.max_tries:
            raise FetchError(problem, url=self.url, status=status, tries=self.tries)

    def _backoff(self) -> float:
        ceiling = min(self._policy.max_backoff, self._policy.backoff * 2 ** (self.tries - 1))
        return random.uniform(0, ceiling)  # full jitter
