"""The one policy both clients follow: timeouts, retries, limits, credentials, reachable hosts."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from ..errors import ConfigurationError

__all__ = ["ClientPolicy", "Credentials", "origin"]


def origin(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of a URL, with the scheme's default port filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme, 0)
    return scheme, (parts.hostname or "").lower(), port


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
    :param max_tries: attempts per request, the first included.
    :param backoff: first retry delay in seconds; doubles each retry, with full jitter.
    :param max_backoff: cap of one retry delay, and of an honoured ``Retry-After``; a server
        asking for longer ends the request with an error.
    :param concurrency_per_host: requests in flight to one host at once.
    :param max_document_bytes: size cap of a ResourceSync document.
    :param max_resource_bytes: size cap of a downloaded resource or package.
    :param verify: verify TLS certificates.
    :param user_agent: the ``User-Agent`` header.
    :param credentials: auth and extra headers, sent only to their own origin.
    :param allowed_hosts: hosts fetched from besides the Source's own and its declared mirrors.
    :param allow_private: allow private, loopback and link-local addresses (off by default).
    :param max_redirects: redirects followed per request.
    """

    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    max_tries: int = 5
    backoff: float = 0.5
    max_backoff: float = 60.0
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
        if min(self.connect_timeout, self.read_timeout) <= 0 or self.backoff < 0:
            raise ConfigurationError("timeouts must be above 0 and backoff not below 0")
