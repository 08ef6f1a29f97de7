"""Where fetches may go: the Source's origins and those the connection allows, never private
addresses.

Every request and every redirect hop is checked against the allowed origins (scheme, host and
port): the Source's base URL's and those of ``allowed_hosts``. What a Source lists (a
resource's ``loc``, its ``duplicate`` links, a dump's manifest) adds none. The addresses a host
name resolves to are checked by the connection that uses them (:mod:`.addresses`), so the
address checked is the address connected to.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from ..errors import UnsafeContentError
from .policy import DEFAULT_PORTS, ClientPolicy, Origin, allowed_origins, origin, origin_text

__all__ = ["HostGuard"]

_HOSTS_RULE = ("fetches go only to the Source's origins (scheme, host and port) and the hosts "
              "the connection allows")
_PRIVATE_RULE = "no private, loopback or link-local addresses unless the connection allows them"


class HostGuard:
    """Checks URLs against the allowed origins, and resolved addresses against the private rule.

    :param policy: its ``allowed_hosts`` and ``allow_private``.
    :param source_urls: URLs whose origins are the Source's (the connection's base URL); an
        http one on port 80 allows https on port 443 of its host too (an upgrade redirect).
    """

    def __init__(self, policy: ClientPolicy, source_urls: Iterable[str] = ()) -> None:
        origins: set[Origin] = set()
        for entry in policy.allowed_hosts:
            origins.update(allowed_origins(entry))
        for url in source_urls:
            scheme, host, port = where = origin(url)
            origins.add(where)
            if (scheme, port) == ("http", DEFAULT_PORTS["http"]):
                origins.add(("https", host, DEFAULT_PORTS["https"]))
        #: The origins fetches may go to.
        self.origins = frozenset(origins)
        self._allow_private = policy.allow_private

    def allows(self, url: str) -> bool:
        """Whether ``url`` is on an allowed origin: a resource the Source could list and we
        would fetch (the private-address rule aside)."""
        try:
            self.check_url(url)
        except UnsafeContentError:
            return False
        return True

    def check_url(self, url: str) -> Origin:
        """The URL's origin, if the URL may be fetched.

        :raises UnsafeContentError: naming the URL, the allowed origins and the rule.
        """
        parts = urlsplit(url)
        if parts.scheme.lower() not in DEFAULT_PORTS:
            raise UnsafeContentError(f"{parts.scheme!r} URLs are not fetched", rule=_HOSTS_RULE,
                                     url=url)
        if "@" in parts.netloc:
            raise UnsafeContentError(
                "a URL carrying a user name or password is not fetched", rule=_HOSTS_RULE,
                url=url)
        try:
            where = origin(url)
        except ValueError:
            raise UnsafeContentError("the URL's port is not a number", rule=_HOSTS_RULE,
                                     url=url) from None
        if where not in self.origins:
            text = origin_text(where)
            raise UnsafeContentError(
                f"{text} is not one of the Source's hosts (allowed origins: "
                f"{', '.join(sorted(map(origin_text, self.origins)))}); to fetch from it, add "
                f"{text.partition('://')[2]} to the connection's allowed hosts", rule=_HOSTS_RULE,
                url=url)
        return where

    def check_resolved(self, url: str, addresses: Iterable[str]) -> None:
        """Refuse ``url`` if its host resolved to any non-public address (unless the policy
        allows private addresses). Called with the addresses the connection will use."""
        if self._allow_private:
            return
        for text in addresses:
            address = ipaddress.ip_address(text.split("%", 1)[0])
            if not address.is_global or address.is_multicast:
                raise UnsafeContentError(
                    f"host {urlsplit(url).hostname!r} resolves to the non-public address "
                    f"{address}", rule=_PRIVATE_RULE, url=url)

    def check_addresses(self, url: str) -> None:
        """Resolve the URL's host and check its addresses, for a connection made by someone
        else (a proxy), which may resolve the name again. Blocking: sync client."""
        if not self._allow_private:
            host, port = _host_port(url)
            try:
                infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError:
                return  # the request itself fails with a clear connection error
            self.check_resolved(url, (str(info[4][0]) for info in infos))

    async def acheck_addresses(self, url: str) -> None:
        """:meth:`check_addresses` for the async client."""
        if not self._allow_private:
            host, port = _host_port(url)
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(
                    host, port, type=socket.SOCK_STREAM)
            except OSError:
                return
            self.check_resolved(url, (str(info[4][0]) for info in infos))


def _host_port(url: str) -> tuple[str, int]:
    _, host, port = origin(url)
    return host, port
