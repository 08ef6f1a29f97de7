"""The one policy both clients follow: timeouts, retries, limits, credentials, reachable hosts."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..errors import ConfigurationError

__all__ = ["DEFAULT_PORTS", "ClientPolicy", "Credentials", "Origin", "allowed_origins", "origin",
           "origin_text"]

#: ``(scheme, host, port)``: where a request goes (RFC 6454), host lower case.
Origin = tuple[str, str, int]
DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> Origin:
    """``(scheme, host, port)`` of a URL, with the scheme's default port filled in.

    :raises ValueError: the port is not a number.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or DEFAULT_PORTS.get(scheme, 0)
    return scheme, (parts.hostname or "").lower(), port


def origin_text(where: Origin) -> str:
    """An origin as a URL prefix: ``https://example.org:8443``."""
    scheme, host, port = where
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"


def allowed_origins(entry: str) -> tuple[Origin, ...]:
    """The origins an ``allowed_hosts`` entry stands for: ``name`` that host on http port 80
    and https port 443; ``name:port`` (``[v6]:port``) that host on that port, either scheme.

    :raises ConfigurationError: the entry is not a host name, an IP address or one with a port.
    """
    text = entry.strip().lower()
    host, port = text, None
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            host = ""
        port = rest[1:] if rest else None
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    if (not host or any(c in host for c in "/@?#[] ") or (":" in host and not _is_ip(host))
            or (port is not None and not (port.isdigit() and 0 < int(port) < 65536))):
        raise ConfigurationError(
            f"allowed_hosts: {entry!r} is not a host name (write a name like cdn.example.org, "
            "or with a port, cdn.example.org:8443; no scheme or path)")
    if port is None:
        return tuple((scheme, host, number) for scheme, number in DEFAULT_PORTS.items())
    return tuple((scheme, host, int(port)) for scheme in DEFAULT_PORTS)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Credentials:
    """Basic auth, a bearer token and extra headers, sent only to the origin they belong to.

    Extra headers travel with the credentials because they often carry secrets too (API keys).

    :param origin_url: any URL on the origin (scheme, host, port) the credentials are for.
    """

    origin_url: str
    username: str | None = None
    password: str | None = None
    token: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.token is not None and self.username is not None:
            raise ConfigurationError("credentials are basic auth or a bearer token, not both")

    def __repr__(self) -> str:  # never print secrets in logs
        kind = ("bearer" if self.token is not None
                else f"basic user={self.username!r}" if self.username is not None else "headers")
        return f"Credentials({kind}, origin={self.origin_url!r})"


@dataclass(frozen=True, slots=True)
class ClientPolicy:
    """How the clients talk to a Source.

    :param connect_timeout: seconds to open a connection.
    :param read_timeout: seconds to wait for any bytes of a response.
    :param request_timeout: seconds for a whole request, its head and its body; a try that
        takes longer is cut off and counts as failed.
    :param max_tries: attempts per request, the first included.
    :param backoff: first retry delay in seconds; doubles each retry, with full jitter.
    :param max_backoff: cap of one retry delay, and of an honoured ``Retry-After``; a server
        asking for longer ends the request with an error.
    :param retry_budget: seconds a client may spend over its life (one run) on retries: the
        waits between tries and the failed tries themselves; once spent, nothing is retried.
    :param concurrency_per_host: requests in flight to one host at once.
    :param max_document_bytes: size cap of a ResourceSync document.
    :param max_resource_bytes: size cap of a downloaded resource or package.
    :param verify: verify TLS certificates.
    :param user_agent: the ``User-Agent`` header.
    :param credentials: auth and extra headers, sent only to their own origin.
    :param allowed_hosts: hosts fetched from besides the Source's own origin: ``name`` (ports
        80 and 443) or ``name:port`` (see :func:`allowed_origins`).
    :param allow_private: allow private, loopback and link-local addresses (off by default).
    :param max_redirects: redirects followed per request.
    """

    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    request_timeout: float = 900.0
    max_tries: int = 5
    backoff: float = 0.5
    max_backoff: float = 60.0
    retry_budget: float = 900.0
    concurrency_per_host: int = 16
    max_document_bytes: int = 1024 * 1024 * 1024
    max_resource_bytes: int = 10 * 1024 * 1024 * 1024
    verify: bool = True
    user_agent: str = "airflow-provider-resourcesync"
    credentials: Credentials | None = None
    allowed_hosts: frozenset[str] = frozenset()
    allow_private: bool = False
    max_redirects: int = 5

    def __post_init__(self) -> None:
        if self.max_tries < 1 or self.concurrency_per_host < 1:
            raise ConfigurationError("max_tries and concurrency_per_host must be at least 1")
        if min(self.connect_timeout, self.read_timeout, self.request_timeout,
               self.retry_budget) <= 0 or self.backoff < 0:
            raise ConfigurationError(
                "timeouts and the retry budget must be above 0 and backoff not below 0")
        for entry in self.allowed_hosts:
            allowed_origins(entry)
