"""One logical request as a plan both clients follow: redirects, retries, reachable origins,
each try's deadline and the run's retry budget.

The clients own the I/O (send, sleep, resolve); this module decides what happens after each
outcome, so the sync and the async client cannot drift apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx

from ..errors import ContentMismatchError, FetchError
from .guard import HostGuard
from .policy import ClientPolicy
from .retry import RETRY_STATUSES, Attempts, RetryBudget

__all__ = ["Exchange", "Step"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True, slots=True)
class Step:
    """What the client does next: hand the response to its consumer, or try again after a delay."""

    deliver: bool
    delay: float = 0.0


_DELIVER = Step(deliver=True)


class Exchange:
    """The tries and redirects of one GET.

    Each try starts with :meth:`begin`, which sets its :attr:`deadline` (the policy's
    ``request_timeout`` for the head and the body); a failed try's time and the waits before
    retries are taken from the client's ``budget``.
    """

    def __init__(self, policy: ClientPolicy, guard: HostGuard, budget: RetryBudget, url: str, *,
                 headers: Mapping[str, str] | None = None) -> None:
        self._policy = policy
        self._guard = guard
        self._budget = budget
        self.headers = dict(headers or {})
        self.redirects = 0
        self._delivered: int | None = None  # the status of a response handed to the consumer
        self.url = url
        guard.check_url(url)
        self._attempts = Attempts(policy, url, budget)
        self._started = self.deadline = time.monotonic()

    @property
    def tries(self) -> int:
        return self._attempts.tries

    def begin(self) -> float:
        """A try starts now: its deadline, as :func:`time.monotonic` time."""
        self._started = time.monotonic()
        self.deadline = self._started + self._policy.request_timeout
        return self.deadline

    def check_deadline(self) -> None:
        """:raises httpx.ReadTimeout: the try is past its deadline (a body read slowly)."""
        if time.monotonic() >= self.deadline:
            raise httpx.ReadTimeout(self._overdue())

    def on_response(self, response: httpx.Response) -> Step:
        """After a response's head arrived: follow a redirect, retry, or deliver it."""
        self._attempts.count()
        self._delivered = None
        if response.status_code in _REDIRECTS and (location := response.headers.get("Location")):
            self._redirect(urljoin(self.url, location), response.status_code)
            return Step(deliver=False)
        if response.status_code in RETRY_STATUSES:
            self._failed()
        delay = self._attempts.status_delay(response)
        if delay is not None:
            return Step(deliver=False, delay=delay)
        self._delivered = response.status_code
        return _DELIVER

    def on_error(self, error: Exception, arrived: Callable[[], str]) -> Step:
        """After a connection, timeout or protocol error (a truncated body included), or the
        try's deadline. ``arrived`` tells what of a delivered body arrived."""
        status, self._delivered = self._delivered, None
        if status is None:  # no response head arrived: this try is not counted yet
            self._attempts.count()
        self._failed()
        if time.monotonic() >= self.deadline:
            problem = self._overdue()
        else:
            problem = f"{type(error).__name__}: {error}".removesuffix(": ")
        if status is not None:
            problem = f"the body was cut short, {arrived()}: {problem}"
        return Step(deliver=False, delay=self._attempts.retry_delay(problem, status))

    def on_mismatch(self, error: ContentMismatchError) -> Step:
        """After content that did not match its description: retry, then let the error stand."""
        self._delivered = None
        self._failed()
        if self._attempts.spent:
            raise error
        return Step(deliver=False, delay=self._attempts.retry_delay(str(error)))

    def _failed(self) -> None:
        """The try that began last failed: its time is taken from the retry budget."""
        self._budget.spend(time.monotonic() - self._started)

    def _overdue(self) -> str:
        return (f"no whole answer within the request_timeout of "
                f"{self._policy.request_timeout:g} s")

    def _redirect(self, target: str, status: int) -> None:
        self.redirects += 1
        if self.redirects > self._policy.max_redirects:
            raise FetchError(f"more than {self._policy.max_redirects} redirects", url=self.url,
                             status=status, tries=self.tries + 1)
        self._guard.check_url(target)
        self.url = target
        self._attempts = Attempts(self._policy, target, self._budget)
