"""Where fetches may go: the Source's hosts and declared mirrors, never private addresses.

Host names are checked before every request and every redirect; the addresses a name resolves to
are checked too (once per host), so a public name pointing at a private or link-local address is
refused unless the policy allows private addresses.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
from collections.abc import Iterable
from urllib.parse import urlsplit

from ..errors import UnsafeContentError
from .policy import ClientPolicy

__all__ = ["HostGuard"]

_SCHEMES = frozenset({"http", "https"})
_HOSTS_RULE = "fetches go only to the Source's hosts and declared mirrors"
_PRIVATE_RULE = "no private, loopback or link-local addresses unless the connection allows them"


class HostGuard:
    """Checks URLs against the allowed hosts, and host names against the addresses they resolve to.

    :param policy: its ``allowed_hosts`` and ``allow_private``.
    :param source_urls: URLs whose hosts belong to the Source (the connection's base URL).
    """

    def __init__(self, policy: ClientPolicy, source_urls: Iterable[str] = ()) -> None:
        self._hosts = {host.lower() for host in policy.allowed_hosts}
        self._hosts.update(_host(url) for url in source_urls)
        self._allow_private = policy.allow_private
        self._verdicts: dict[str, str | None] = {}
        self._lock = threading.Lock()

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset(self._hosts)

    def allow(self, url: str) -> None:
        """Add the host of ``url`` (a Source found by discovery, a declared mirror)."""
        with self._lock:
            self._hosts.add(_host(url))

    def check_url(self, url: str, also: Iterable[str] = ()) -> str:
        """The URL's host, if the URL may be fetched; ``also``: mirror URLs allowed for this call.

        :raises UnsafeContentError: naming the URL and the rule.
        """
        parts = urlsplit(url)
        if parts.scheme.lower() not in _SCHEMES:
            raise UnsafeContentError(f"{parts.scheme!r} URLs are not fetched", rule=_HOSTS_RULE,
                                     url=url)
        host = _host(url)
        if host not in self._hosts and host not in {_host(u) for u in also}:
            raise UnsafeContentError(
                f"host {host!r} is not one of the Source's hosts {sorted(self._hosts)} "
                "(add it to the connection's allowed hosts)", rule=_HOSTS_RULE, url=url)
        return host

    def check_addresses(self, url: str) -> None:
        """Resolve the URL's host (once) and refuse private addresses. Blocking: sync client."""
        host = _host(url)
        if self._needs_lookup(host):
            self._record(host, self._verdict(host, _resolve(host, _port(url))))
        self._raise_if_refused(host, url)

    async def acheck_addresses(self, url: str) -> None:
        """:meth:`check_addresses` for the async client."""
        host = _host(url)
        if self._needs_lookup(host):
            loop = asyncio.get_running_loop()
            try:
                infos = await loop.getaddrinfo(host, _port(url), type=socket.SOCK_STREAM)
            except OSError:
                infos = []  # the request itself will fail with a clear connection error
            self._record(host, self._verdict(host, [info[4][0] for info in infos]))
        self._raise_if_refused(host, url)

    def _needs_lookup(self, host: str) -> bool:
        return not self._allow_private and host not in self._verdicts

    def _record(self, host: str, verdict: str | None) -> None:
        with self._lock:
            self._verdicts[host] = verdict

    def _raise_if_refused(self, host: str, url: str) -> None:
        problem = None if self._allow_private else self._verdicts.get(host)
        if problem is not None:
            raise UnsafeContentError(problem, rule=_PRIVATE_RULE, url=url)

    @staticmethod
    def _verdict(host: str, addresses: Iterable[str]) -> str | None:
        for text in addresses:
            address = ipaddress.ip_address(text.split("%", 1)[0])
            if not address.is_global or address.is_multicast:
                return f"host {host!r} resolves to the non-public address {address}"
        return None


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def _port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme.lower() == "https" else 80)


def _resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return []  # the request itself will fail with a clear connection error
    return [str(info[4][0]) for info in infos]
