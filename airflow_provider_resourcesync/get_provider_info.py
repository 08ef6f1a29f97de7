"""Provider metadata that Airflow reads through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

from airflow_provider_resourcesync import __version__

_INTEGRATION = "ResourceSync"
_HOOK_MODULE = "airflow_provider_resourcesync.hooks.resourcesync"
_OPERATOR_MODULES = [
    "airflow_provider_resourcesync.operators.baseline",
    "airflow_provider_resourcesync.operators.incremental",
    "airflow_provider_resourcesync.operators.audit",
    "airflow_provider_resourcesync.operators.publish",
]
_SENSOR_MODULES = ["airflow_provider_resourcesync.sensors.changelist"]
_TRIGGER_MODULES = [
    "airflow_provider_resourcesync.triggers.changelist",
    "airflow_provider_resourcesync.triggers.event",
]

#: The connection's extra fields; defaults are ``ClientPolicy``'s (a test keeps them equal).
_CONN_FIELDS: dict[str, Any] = {
    "token": {
        "label": "Bearer token",
        "description": "Sent as 'Authorization: Bearer ...' to the base URL's origin only. "
        "Use this or login/password, not both.",
        "schema": {"type": ["string", "null"], "format": "password"},
    },
    "headers": {
        "label": "Extra headers",
        "description": "A JSON object of request headers (e.g. an API key), sent to the base "
        "URL's origin only.",
        "schema": {"type": ["object", "null"]},
    },
    "user_agent": {
        "label": "User-Agent",
        "description": "The User-Agent header (default: airflow-provider-resourcesync).",
        "schema": {"type": ["string", "null"]},
    },
    "connect_timeout": {
        "label": "Connect timeout (s)",
        "description": "Seconds to open a connection.",
        "schema": {"type": ["number", "null"], "default": 10.0, "exclusiveMinimum": 0},
    },
    "read_timeout": {
        "label": "Read timeout (s)",
        "description": "Seconds to wait for any bytes of a response.",
        "schema": {"type": ["number", "null"], "default": 60.0, "exclusiveMinimum": 0},
    },
    "request_timeout": {
        "label": "Request timeout (s)",
        "description": "Seconds for a whole request, its head and its body; a slower try is "
        "cut off and counts as failed. Raise it for very large resources.",
        "schema": {"type": ["number", "null"], "default": 900.0, "exclusiveMinimum": 0},
    },
    "retry_budget": {
        "label": "Retry budget (s)",
        "description": "Seconds a run may spend on retries: the waits between tries and the "
        "failed tries themselves. Once spent, nothing more is retried in that run.",
        "schema": {"type": ["number", "null"], "default": 900.0, "exclusiveMinimum": 0},
    },
    "max_tries": {
        "label": "Tries per request",
        "description": "Attempts per request, the first included (429, 5xx and network errors "
        "are retried with backoff).",
        "schema": {"type": ["integer", "null"], "default": 5, "minimum": 1},
    },
    "max_document_bytes": {
        "label": "Document size cap (bytes)",
        "description": "The largest ResourceSync document read (as served, and once "
        "decompressed); a larger one fails naming it. Watches (sensors, triggers) read theirs at "
        "every poll: where this is empty they cap at 256 MiB.",
        "schema": {"type": ["integer", "null"], "default": 1073741824, "minimum": 1},
    },
    "concurrency": {
        "label": "Concurrency per host",
        "description": "Requests in flight to one host at once.",
        "schema": {"type": ["integer", "null"], "default": 16, "minimum": 1},
    },
    "allowed_hosts": {
        "label": "Allowed hosts",
        "description": "Hosts, separated by commas, that may be fetched from besides the base "
        "URL's origin (e.g. a CDN): a name means that host on ports 80 and 443, name:port that "
        "port. Resources and their duplicate links elsewhere are not fetched. No credentials "
        "go there.",
        "schema": {"type": ["string", "null"]},
    },
    "allow_private": {
        "label": "Allow private addresses",
        "description": "Allow private, loopback and link-local addresses (intranet Sources, "
        "127.0.0.1). Off: such addresses are refused.",
        "schema": {"type": ["boolean", "null"], "default": False},
    },
    "verify_tls": {
        "label": "Verify TLS certificates",
        "description": "Verify the Source's TLS certificates.",
        "schema": {"type": ["boolean", "null"], "default": True},
    },
}


def get_provider_info() -> dict[str, Any]:
    """Describe this provider to Airflow's ProvidersManager."""
    return {
        "package-name": "airflow-provider-resourcesync",
        "name": "ResourceSync",
        "description": "Mirror and publish web collections with ResourceSync "
        "(ANSI/NISO Z39.99-2017): discovery, baseline and incremental sync, audit, Change Dumps.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": _INTEGRATION,
                "external-doc-url": "https://www.niso.org/publications/z3999-2017-resourcesync",
                "tags": ["protocol"],
            }
        ],
        "operators": [{"integration-name": _INTEGRATION, "python-modules": _OPERATOR_MODULES}],
        "sensors": [{"integration-name": _INTEGRATION, "python-modules": _SENSOR_MODULES}],
        "triggers": [{"integration-name": _INTEGRATION, "python-modules": _TRIGGER_MODULES}],
        "hooks": [{"integration-name": _INTEGRATION, "python-modules": [_HOOK_MODULE]}],
        "connection-types": [
            {
                "connection-type": "resourcesync",
                "hook-class-name": f"{_HOOK_MODULE}.ResourceSyncHook",
                "hook-name": "ResourceSync",
                "ui-field-behaviour": {
                    "hidden-fields": ["schema"],
                    "relabeling": {
                        "host": "Base URL",
                        "port": "Port (the base URL's)",
                        "login": "User name (basic auth)",
                        "password": "Password (basic auth)",
                    },
                    "placeholders": {
                        "host": "https://example.org/dataset1/",
                        "port": "443 for https, 80 for http: the Test button needs it",
                        "login": "optional",
                        "password": "optional",
                        "token": "optional; instead of basic auth",
                        "headers": '{"X-Api-Key": "..."}',
                        "allowed_hosts": "cdn.example.org, mirror.example.net:8443",
                    },
                },
                "conn-fields": _CONN_FIELDS,
            }
        ],
    }
