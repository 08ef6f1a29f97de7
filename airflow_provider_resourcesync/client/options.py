"""Plain options -> :class:`ClientPolicy`: shared by the Airflow connection and the command line.

Callers parse their own input (a connection's fields, command-line flags) into plain values; this
module checks them and builds the policy, naming the option at fault in every
``ConfigurationError``.
``None`` leaves the policy's default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar
from urllib.parse import urlsplit

from ..errors import ConfigurationError
from .policy import ClientPolicy, Credentials, allowed_origins

__all__ = ["check_base_url", "check_host", "policy_from_options"]

T = TypeVar("T")

_SCHEMES = frozenset({"http", "https"})


def check_base_url(url: str) -> str:
    """``url`` if it is an absolute http(s) URL with a host and no user info; otherwise a
    ConfigurationError (whose message never repeats a password)."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        raise ConfigurationError(
            f"base URL of host {parts.netloc.rpartition('@')[2]!r} carries a user "
            "name or password: give them as credentials, not in the URL")
    try:
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as error:
        raise ConfigurationError(f"base URL {url!r} is not a URL: {error}") from None
    if parts.scheme.lower() not in _SCHEMES or not parts.hostname:
        raise ConfigurationError(f"base URL {url!r} must be an http:// or https:// URL with a host")
    return url


def check_host(name: str) -> str:
    """An ``allowed_hosts`` entry, lower case: a host name or IP address, with or without a
    port (``cdn.example.org``, ``cdn.example.org:8443``, ``[::1]:8080``); ConfigurationError
    for a URL or a name with a path."""
    allowed_origins(name)
    return name.strip().lower()


def policy_from_options(
    *,
    base_url: str,
    username: str | None = None,
    password: str | None = None,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    user_agent: str | None = None,
    connect_timeout: float | None = None,
    read_timeout: float | None = None,
    request_timeout: float | None = None,
    retry_budget: float | None = None,
    max_tries: int | None = None,
    concurrency: int | None = None,
    max_document_bytes: int | None = None,
    allowed_hosts: Iterable[str] = (),
    allow_private: bool = False,
    verify_tls: bool = True,
) -> ClientPolicy:
    """The policy for a Source at ``base_url``; credentials and headers bound to its origin.

    :param base_url: the Source's base URL (http or https).
    :param username: basic auth user; ``password`` goes with it.
    :param password: basic auth password.
    :param token: bearer token (instead of basic auth, not with it).
    :param headers: extra request headers, sent to the base URL's origin only.
    :param user_agent: the ``User-Agent`` header.
    :param connect_timeout: seconds to open a connection (> 0).
    :param read_timeout: seconds to wait for any bytes of a response (> 0).
    :param request_timeout: seconds for a whole request, head and body (> 0).
    :param retry_budget: seconds a run may spend on retries, waits and failed tries (> 0).
    :param max_tries: attempts per request, the first included (>= 1).
    :param concurrency: requests in flight to one host at once (>= 1).
    :param max_document_bytes: the size cap of a ResourceSync document (>= 1), as served or
        once decompressed.
    :param allowed_hosts: hosts besides the base URL's origin that may be fetched from (a CDN):
        ``name`` (ports 80 and 443) or ``name:port``.
    :param allow_private: allow private, loopback and link-local addresses.
    :param verify_tls: verify TLS certificates.
    :raises ConfigurationError: naming the option at fault.
    """
    check_base_url(base_url)
    if username and token:
        raise ConfigurationError("login and token: use basic auth or a bearer token, not both")
    if password and not username:
        raise ConfigurationError(
            "password: a password needs a login (for a bearer token use token)")
    for name, value in (("connect_timeout", connect_timeout), ("read_timeout", read_timeout),
                        ("request_timeout", request_timeout), ("retry_budget", retry_budget)):
        if value is not None and not value > 0:
            raise ConfigurationError(f"{name} must be a number of seconds above 0, not {value!r}")
    for name, count in (("max_tries", max_tries), ("concurrency", concurrency),
                        ("max_document_bytes", max_document_bytes)):
        if count is not None and count < 1:
            raise ConfigurationError(f"{name} must be at least 1, not {count!r}")
    header_pairs = tuple(_check_headers(headers or {}))
    credentials = None
    if username or token or header_pairs:
        credentials = Credentials(base_url, username=username or None,
                                  password=password if username else None,
                                  token=token or None, headers=header_pairs)
    default = ClientPolicy()
    return ClientPolicy(
        connect_timeout=_given(connect_timeout, default.connect_timeout),
        read_timeout=_given(read_timeout, default.read_timeout),
        request_timeout=_given(request_timeout, default.request_timeout),
        retry_budget=_given(retry_budget, default.retry_budget),
        max_tries=_given(max_tries, default.max_tries),
        concurrency_per_host=_given(concurrency, default.concurrency_per_host),
        max_document_bytes=_given(max_document_bytes, default.max_document_bytes),
        user_agent=user_agent or default.user_agent,
        verify=verify_tls,
        credentials=credentials,
        allowed_hosts=frozenset(check_host(host) for host in allowed_hosts),
        allow_private=allow_private,
    )


def _given(value: T | None, default: T) -> T:
    """``value``, or ``default`` where the option was not given."""
    return default if value is None else value


def _check_headers(headers: Mapping[str, str]) -> Iterable[tuple[str, str]]:
    for name, value in headers.items():
        if not isinstance(name, str) or not name.strip() or not isinstance(value, str):
            raise ConfigurationError(
                f"headers: {name!r}: {value!r} is not a header name and a string "
                "value")
        if any(c in name + value for c in "\r\n") or any(c in name for c in " :"):
            raise ConfigurationError(f"headers: {name!r} has a character a header cannot carry")
        yield name.strip(), value
