"""One logical request as a plan both clients follow: redirects, retries, reachable hosts.

The clients own the I/O (send, sleep, resolve); this module decides what happens after each
outcome, so the sync and the async client cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx

from ..errors import ContentMismatchError, FetchError
from .guard import HostGuard
from .policy import ClientPolicy
from .retry import Attempts

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

    :param mirrors: further URLs whose hosts this exchange may reach (declared mirrors).
    """

    def __init__(self, policy: ClientPolicy, guard: HostGuard, url: str, *,
                 headers: Mapping[str, str] | None = None, mirrors: Iterable[str] = ()) -> None:
        self._policy = policy
        self._guard = guard
        self._also = tuple(mirrors)
        self.headers = dict(headers or {})
        self.redirects = 0
        self._delivered = False
        self.url = url
        guard.check_url(url, self._also)
        self._attempts = Attempts(policy, url)

    @property
    def tries(self) -> int:
        return self._attempts.tries

    def on_response(self, response: httpx.Response) -> Step:
        """After a response's head arrived: follow a redirect, retry, or deliver it."""
        self._attempts.count()
        self._delivered = False
        location = response.headers.get("Location")
        if response.status_code in _REDIRECTS and location:
            self._redirect(urljoin(self.url, location), response.status_code)
            return Step(deliver=False)
        delay = self._attempts.status_delay(response)
        if delay is not None:
            return Step(deliver=False, delay=delay)
        self._delivered = True
        return _DELIVER

    def on_error(self, error: httpx.TransportError) -> Step:
        """After a connection, timeout or protocol error (a truncated body included)."""
        if not self._delivered:  # no response head arrived: this try is not counted yet
            self._attempts.count()
        self._delivered = False
        return Step(deliver=False, delay=self._attempts.retry_delay(
            f"{type(error).__name__}: {error}"))

    def on_mismatch(self, error: ContentMismatchError) -> Step:
        """After content that did not match its description: retry, then let the error stand."""
        self._delivered = False
        if self._attempts.spent:
            raise error
        return Step(deliver=False, delay=self._attempts.retry_delay(str(error)))

    def _redirect(self, target: str, status: int) -> None:
        self.redirects += 1
        if self.redirects > self._policy.max_redirects:
            raise FetchError(f"more than {self._policy.max_redirects} redirects", url=self.url,
                             status=status, tries=self.tries + 1)
        self._guard.check_url(target, self._also)
        self.url = target
        self._attempts = Attempts(self._policy, target)
