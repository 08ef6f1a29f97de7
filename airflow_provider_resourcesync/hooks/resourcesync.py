"""The ResourceSync hook: an Airflow connection -> a client for one ResourceSync Source."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import SplitResult, urlsplit, urlunsplit

from ..client.async_client import AsyncResourceSyncClient
from ..client.discover import Discovery, discover
from ..client.options import check_base_url, policy_from_options
from ..client.policy import ClientPolicy
from ..client.sync_client import ResourceSyncClient
from ..compat import BaseHook, aextra_dejson, get_async_connection
from ..errors import ConfigurationError, ResourceSyncError
from ..protocol.model import Capability
from .form import form_widgets, ui_field_behaviour

__all__ = ["EXTRA_FIELDS", "ResourceSyncHook", "base_url_from_connection",
           "policy_from_connection"]

#: The connection's extra fields (see ``get_provider_info``'s ``conn-fields``).
EXTRA_FIELDS = frozenset({
    "token", "headers", "user_agent", "connect_timeout", "read_timeout", "request_timeout",
    "retry_budget", "max_tries", "concurrency", "max_document_bytes", "allowed_hosts",
    "allow_private", "verify_tls",
})
#: A watch's cap on a document (a sensor's poke, a trigger's poll) where the connection sets
#: none: a quarter of a run's, as a watch reads its documents at every poll (issue 29: an
#: endless Change List cost the whole 1 GiB cap each time).
WATCH_MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


class ConnectionLike(Protocol):
    """What :func:`policy_from_connection` reads of an Airflow ``Connection``."""

    host: str | None
    schema: str | None
    port: int | None
    login: str | None
    password: str | None

    @property
    def extra_dejson(self) -> dict[str, Any]: ...


class ResourceSyncHook(BaseHook):
    """Talk to a ResourceSync Source (ANSI/NISO Z39.99-2017) through an Airflow connection.

    The connection's **host** is the Source's base URL: a full URL such as
    ``https://example.org/dataset1/`` (what the connection form asks for), or a bare host name
    with **schema** as the URL scheme (``http`` or ``https``, default ``https``) and **port**.
    With a full URL, **port** may repeat the URL's own (443 for the example): Airflow 3.3's
    Test button in the connection list needs a port stored.
    **login**/**password** are basic auth; the extra fields are listed in :data:`EXTRA_FIELDS`.
    Credentials and extra headers are sent to the base URL's origin only.

    :param resourcesync_conn_id: the connection to use.
    :param logger_name: the hook's logger name (see ``BaseHook``).
    """

    conn_name_attr = "resourcesync_conn_id"
    default_conn_name = "resourcesync_default"
    conn_type = "resourcesync"
    hook_name = "ResourceSync"

    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """The form's extra fields, where Airflow asks the hook (before 3.2)."""
        return form_widgets()

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """The form's hidden fields, labels and placeholders, where Airflow asks the hook."""
        return ui_field_behaviour()

    def __init__(self, *, resourcesync_conn_id: str = default_conn_name,
                 logger_name: str | None = None, watch: bool = False) -> None:
        super().__init__(logger_name=logger_name)
        self.resourcesync_conn_id = resourcesync_conn_id
        self.watch = watch  # a watch's clients: see policy_from_connection
        self._settings: tuple[str, ClientPolicy] | None = None
        self._client: ResourceSyncClient | None = None

    @property
    def base_url(self) -> str:
        """The Source's base URL, from the connection."""
        return self._connection_settings()[0]

    @property
    def policy(self) -> ClientPolicy:
        """The client policy built from the connection."""
        return self._connection_settings()[1]

    def get_conn(self) -> ResourceSyncClient:
        """The client for the connection's Source, created once per hook; :meth:`close` ends it.

        :raises ConfigurationError: a connection field is wrong (the message names it).
        """
        if self._client is None:
            base_url, policy = self._connection_settings()
            self.log.info("Connecting to the ResourceSync Source at %s", base_url)
            self._client = ResourceSyncClient(policy, source_urls=[base_url])
        return self._client

    def close(self) -> None:
        """Close the client of :meth:`get_conn`, if one was made."""
        if self._client is not None:
            self._client.close()
            self._client = None

    async def get_async_client(self) -> AsyncResourceSyncClient:
        """A new async client for the connection's Source, for triggers: the connection is read
        without blocking the event loop. The caller closes it (``async with``).

        :raises ConfigurationError: a connection field is wrong (the message names it).
        """
        connection = await get_async_connection(self.resourcesync_conn_id)
        extra = await aextra_dejson(connection)
        base_url, policy = policy_from_connection(connection, extra=extra, watch=self.watch)
        self._warn_unknown(extra)
        return AsyncResourceSyncClient(policy, source_urls=[base_url])

    def discover(self, *, url: str | None = None) -> Discovery:
        """Find the Source's Source Description and Capability Lists (spec 6.3).

        :param url: where to start, on the Source's hosts; defaults to the connection's base
            URL.
        """
        start = url or self.base_url
        self.log.info("Discovering the ResourceSync Source from %s", start)
        found = discover(self.get_conn(), start)
        self.log.info("Found %d Capability List(s) by %s", len(found.capability_lists),
                      found.route)
        return found

    def test_connection(self) -> tuple[bool, str]:
        """Discover the Source from the base URL, as a baseline does; the message says what was
        found and what a baseline would read, or why not: it passes only where a baseline
        would find something to read."""
        try:
            base_url, policy = self._connection_settings()
            with ResourceSyncClient(policy, source_urls=[base_url]) as client:
                found = discover(client, base_url)
        except (ResourceSyncError, ValueError) as error:
            return False, str(error)
        return _verdict(found, base_url)

    def _connection_settings(self) -> tuple[str, ClientPolicy]:
        if self._settings is None:
            connection = self.get_connection(self.resourcesync_conn_id)
            extra = connection.extra_dejson
            self._settings = policy_from_connection(connection, extra=extra, watch=self.watch)
            self._warn_unknown(extra)
        return self._settings

    def _warn_unknown(self, extra: Mapping[str, Any]) -> None:
        unknown = sorted(set(extra) - EXTRA_FIELDS)
        if unknown:
            self.log.warning("Connection %s: ignoring unknown extra fields %s (known: %s)",
                             self.resourcesync_conn_id, ", ".join(unknown),
                             ", ".join(sorted(EXTRA_FIELDS)))


def _summary(found: Discovery) -> str:
    """What discovery found, in one line."""
    description = found.source_description or "none"
    return (f"ResourceSync Source found at {found.start_url} by {found.route}: "
            f"Source Description {description}, "
            f"{len(found.capability_lists)} Capability List(s)")


def _verdict(found: Discovery, base_url: str) -> tuple[bool, str]:
    """Whether a baseline from the connection would find something to read, and the test's
    message: what was found, what a baseline would read, the documents refused (a host not
    allowed) and a Capability List found outside the connection's path (a typo in it)."""
    refused = [step for step in found.steps if " -> refused: " in step]
    told = f"; refused: {' ; '.join(refused)}" if refused else ""
    if not found.capability_lists:
        return False, (f"{_summary(found)}: a baseline would find no Capability List to read"
                       f"{told}")
    chosen = found.capability_lists[0]
    listing = chosen.capabilities.get(Capability.RESOURCE_LIST) \
        or chosen.capabilities.get(Capability.RESOURCE_DUMP)
    if listing is None:
        return False, (f"{_summary(found)}: the Capability List {chosen.url} offers no Resource "
                       f"List or Resource Dump to baseline from (spec 9){told}")
    message = (f"{_summary(found)}; a baseline would read {listing} , from the Capability "
               f"List {chosen.url}{told}")
    path = urlsplit(base_url).path.rstrip("/") + "/"
    if not urlsplit(chosen.url).path.startswith(path):
        message += (f". Warning: that Capability List is not under the connection's path "
                    f"{path} : check the path (a typo mirrors what discovery found instead)")
    return True, message


def base_url_from_connection(connection: ConnectionLike) -> str:
    """The base URL: ``host`` as a full URL, or ``schema://host:port`` from a bare host name.

    :raises ConfigurationError: naming the field at fault.
    """
    host = (connection.host or "").strip()
    schema = (connection.schema or "").strip().lower()
    if not host:
        raise ConfigurationError(
            "host: the connection has no base URL (write the Source's URL in host, "
            "e.g. https://example.org/dataset1/)")
    if "://" in host:
        if schema and schema != urlsplit(host).scheme.lower():
            raise ConfigurationError(f"schema {connection.schema!r}: host is already a full URL; "
                             "leave schema empty (in a connection URI, URL-encode the whole "
                             "base URL as the host)")
        url = host
    elif schema in {"", "http", "https"}:
        url = f"{schema or 'https'}://{host}"
    else:
        raise ConfigurationError(
            f"schema {connection.schema!r}: with a bare host name, schema is the "
            "URL scheme (http or https); or write the full URL in host")
    if connection.port:  # None or 0: no port
        url = _on_port(url, connection.port)
    try:
        return check_base_url(url)
    except ValueError as error:
        raise ConfigurationError(f"host: {error}") from None


def _on_port(url: str, port: int) -> str:
    """``url`` on ``port``: unchanged where ``port`` is already its port, named or its scheme's
    default (a port stored for the Test button of Airflow 3.3's connection list, issue 29).

    :raises ConfigurationError: the URL names another port.
    """
    parts = urlsplit(url)
    named = _port(parts)
    if port == (named or _DEFAULT_PORTS.get(parts.scheme.lower())):
        return url
    if named is not None:
        raise ConfigurationError(f"port {port}: host names port {named}; leave port empty or "
                                 "give the same")
    return urlunsplit(parts._replace(netloc=f"{parts.netloc}:{port}"))


def _port(parts: SplitResult) -> int | None:
    try:
        return parts.port
    except ValueError:  # not a number: check_base_url says so
        return None


def policy_from_connection(connection: ConnectionLike, *, extra: Mapping[str, Any] | None = None,
                           watch: bool = False) -> tuple[str, ClientPolicy]:
    """``(base_url, policy)`` from a connection; pure, so it is testable without Airflow's
    secrets.

    :param connection: an Airflow ``Connection`` (or anything with its fields).
    :param extra: the connection's extra, already decoded (triggers decode it asynchronously);
        defaults to ``connection.extra_dejson``.
    :param watch: for a watch: :data:`WATCH_MAX_DOCUMENT_BYTES` where the connection sets no
        ``max_document_bytes``.
    :raises ConfigurationError: naming the field at fault.
    """
    extra = connection.extra_dejson if extra is None else extra
    base_url = base_url_from_connection(connection)
    cap = _number(extra, "max_document_bytes", int)
    policy = policy_from_options(
        base_url=base_url,
        username=connection.login or None,
        password=connection.password or None,
        token=_text(extra, "token"),
        headers=_headers(extra),
        user_agent=_text(extra, "user_agent"),
        connect_timeout=_number(extra, "connect_timeout", float),
        read_timeout=_number(extra, "read_timeout", float),
        request_timeout=_number(extra, "request_timeout", float),
        retry_budget=_number(extra, "retry_budget", float),
        max_tries=_number(extra, "max_tries", int),
        concurrency=_number(extra, "concurrency", int),
        max_document_bytes=WATCH_MAX_DOCUMENT_BYTES if watch and cap is None else cap,
        allowed_hosts=_hosts(extra),
        allow_private=_flag(extra, "allow_private", default=False),
        verify_tls=_flag(extra, "verify_tls", default=True),
    )
    return base_url, policy


def _given(extra: Mapping[str, Any], name: str) -> Any:
    """The field's value; None when missing or empty (forms store empty fields as "" or null)."""
    value = extra.get(name)
    return None if value is None or (isinstance(value, str) and not value.strip()) else value


def _text(extra: Mapping[str, Any], name: str) -> str | None:
    value = _given(extra, name)
    if value is not None and not isinstance(value, str):
        raise ConfigurationError(
            f"extra field {name!r} must be a string, not {type(value).__name__}")
    return value


def _number(extra: Mapping[str, Any], name: str, kind: type[int] | type[float]
            ) -> Any:
    value = _given(extra, name)
    if value is None:
        return None
    noun = "an integer" if kind is int else "a number"
    if isinstance(value, str):
        try:
            value = kind(value.strip())
        except ValueError:
            raise ConfigurationError(
                f"extra field {name!r} must be {noun}, not {value!r}") from None
    allowed = (int,) if kind is int else (int, float)
    if isinstance(value, bool) or not isinstance(value, allowed):
        raise ConfigurationError(f"extra field {name!r} must be {noun}, not {value!r}")
    return value


def _flag(extra: Mapping[str, Any], name: str, *, default: bool) -> bool:
    value = _given(extra, name)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigurationError(f"extra field {name!r} must be true or false, not {value!r}")


def _headers(extra: Mapping[str, Any]) -> dict[str, str]:
    value = _given(extra, "headers")
    problem = ValueError('extra field "headers" must be a JSON object of header names to '
                         'values, e.g. {"X-Api-Key": "..."}')
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise problem from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise problem
    return value


def _hosts(extra: Mapping[str, Any]) -> list[str]:
    value = _given(extra, "allowed_hosts")
    if value is None:
        return []
    if isinstance(value, str):
        return [host for host in value.split(",") if host.strip()]
    if isinstance(value, list) and all(isinstance(host, str) for host in value):
        return value
    raise ConfigurationError("extra field 'allowed_hosts' must be host names (or host:port) "
                             "separated by commas")
