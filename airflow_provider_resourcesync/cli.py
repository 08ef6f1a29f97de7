"""``airflow-resourcesync``: discover a Source, validate a document, list its entries.

Plain text for scripts: data on stdout, errors on stderr. Exit status 0 on success, 1 when
``validate`` finds errors, 2 when a document cannot be fetched or read (or the options are wrong).
Airflow is never imported: the command builds its client directly, and starts fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence

from . import __version__
from .client.discover import discover
from .client.navigate import (
    change_dump_packages_after,
    changes_after,
    resource_dump_packages,
    resource_list,
)
from .client.options import policy_from_options
from .client.policy import ClientPolicy
from .client.sync_client import ResourceSyncClient
from .errors import ResourceSyncError
from .protocol.datetimes import format_datetime
from .protocol.model import Capability, Entry
from .protocol.position import ChangePosition
from .protocol.validate import Severity, validate_source

__all__ = ["main"]

OK, FOUND_ERRORS, FAILED = 0, 1, 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run  # each command's set_defaults
    try:
        return run(args)
    except ResourceSyncError as error:
        print(f"airflow-resourcesync: {error}", file=sys.stderr)
        return FAILED
    except _UsageError as error:
        parser.error(str(error))
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as ``ls`` would
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13  # SIGPIPE
    except KeyboardInterrupt:
        return 128 + 2  # SIGINT


def _parser() -> argparse.ArgumentParser:
    defaults = ClientPolicy()
    http = argparse.ArgumentParser(add_help=False)
    group = http.add_argument_group("HTTP options")
    group.add_argument("--allow-private", action="store_true",
                       help="allow private and loopback addresses (127.0.0.1, intranet Sources)")
    group.add_argument("--token", help="bearer token, sent to the URL's origin only")
    group.add_argument("--user", help="basic auth user name, sent to the URL's origin only")
    group.add_argument("--password", help="basic auth password (with --user)")
    group.add_argument("--header", action="append", default=[], metavar="NAME:VALUE",
                       type=_header, help="extra request header for the URL's origin "
                       "(repeatable)")
    group.add_argument("--allowed-host", action="append", default=[], metavar="HOST[:PORT]",
                       help="another host that may be fetched from, e.g. a CDN; without a "
                       "port, ports 80 and 443 (repeatable)")
    group.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                       help=f"connect and read timeout (default: {defaults.connect_timeout:g} "
                       f"to connect, {defaults.read_timeout:g} to read)")
    group.add_argument("--request-timeout", type=_seconds, metavar="SECONDS",
                       help="seconds for a whole request, head and body (default: "
                       f"{defaults.request_timeout:g})")
    group.add_argument("--retry-budget", type=_seconds, metavar="SECONDS",
                       help="seconds the command may spend on retries, waits and failed tries "
                       f"(default: {defaults.retry_budget:g})")
    group.add_argument("--tries", type=_tries, metavar="N", help="attempts per request, the "
                       f"first included (default: {defaults.max_tries})")

    parser = argparse.ArgumentParser(
        prog="airflow-resourcesync",
        description="ResourceSync (ANSI/NISO Z39.99-2017) from the command line.",
        epilog="Exit status: 0 success, 1 validate found errors, 2 cannot fetch or read.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    found = commands.add_parser(
        "discover", parents=[http], help="find a Source's Source Description and Capability "
        "Lists from any URL of it", description="Find a Source from any URL of it (spec 6.3) "
        "and print what was found and how.")
    found.add_argument("url", metavar="URL")
    found.set_defaults(run=_discover)

    check = commands.add_parser(
        "validate", parents=[http], help="check a document against the spec",
        description="Print the validator's findings, one per line, then a summary.")
    check.add_argument("source", metavar="URL|FILE")
    check.set_defaults(run=_validate)

    listing = commands.add_parser(
        "ls", parents=[http], help="list a document's entries, following an index",
        description="Print each entry as LOC<TAB>TIME<TAB>CHANGE (TIME: the change's datetime, "
        "else lastmod; empty fields when absent), reading every part of an index.")
    listing.add_argument("url", metavar="URL")
    listing.set_defaults(run=_ls)
    return parser


def _header(text: str) -> tuple[str, str]:
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME:VALUE")
    return name.strip(), value.strip()


def _seconds(text: str) -> float:
    problem = argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    try:
        value = float(text)
    except ValueError:
        raise problem from None
    if not value > 0:
        raise problem
    return value


def _tries(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


class _UsageError(Exception):
    """Options that cannot work together, or a URL that is not one."""


def _client(args: argparse.Namespace, url: str) -> ResourceSyncClient:
    if args.token and args.user:
        raise _UsageError("--token and --user: use a bearer token or basic auth, not both")
    if args.password and not args.user:
        raise _UsageError("--password needs --user")
    try:
        policy = policy_from_options(
            base_url=url, username=args.user, password=args.password, token=args.token,
            headers=dict(args.header), connect_timeout=args.timeout, read_timeout=args.timeout,
            request_timeout=args.request_timeout, retry_budget=args.retry_budget,
            max_tries=args.tries, allowed_hosts=args.allowed_host,
            allow_private=args.allow_private)
    except ValueError as error:  # names the option at fault
        raise _UsageError(str(error)) from None
    return ResourceSyncClient(policy, source_urls=[url])


def _is_url(text: str) -> bool:
    return text.lower().startswith(("http://", "https://"))


def _discover(args: argparse.Namespace) -> int:
    with _client(args, args.url) as client:
        found = discover(client, args.url)
    print(f"start\t{found.start_url}")
    print(f"route\t{found.route}")
    for step in found.steps:
        print(f"step\t{step}")
    print(f"source-description\t{found.source_description or ''}")
    for capability_list in found.capability_lists:
        print(f"capability-list\t{capability_list.url}")
        for capability, url in capability_list.capabilities.items():
            print(f"capability\t{capability}\t{url}")
    return OK


def _validate(args: argparse.Namespace) -> int:
    if _is_url(args.source):
        with _client(args, args.source) as client:
            fetched = client.fetch_document(args.source)
            findings = validate_source(fetched.path, url=fetched.url)
    else:
        findings = validate_source(args.source, url=args.source)
    for finding in findings:
        print(finding)
    errors = sum(1 for finding in findings if finding.severity is Severity.ERROR)
    warnings = len(findings) - errors
    verdict = "not valid" if errors else "valid"
    print(f"{args.source} : {verdict}: {_count(errors, 'error')}, {_count(warnings, 'warning')}")
    return FOUND_ERRORS if errors else OK


def _ls(args: argparse.Namespace) -> int:
    with _client(args, args.url) as client:
        for entry in _entries(client, args.url):
            print(_line(entry))
    return OK


def _resources(client: ResourceSyncClient, url: str) -> Iterator[Entry]:
    with resource_list(client, url) as walk:
        yield from walk


def _changes(client: ResourceSyncClient, url: str) -> Iterator[Entry]:
    return (item.entry for item in changes_after(client, url, ChangePosition()))


def _change_dumps(client: ResourceSyncClient, url: str) -> Iterator[Entry]:
    return change_dump_packages_after(client, url, None)


#: Documents that may be an index, and how to walk them across their parts.
_WALKS: dict[Capability, Callable[[ResourceSyncClient, str], Iterable[Entry]]] = {
    Capability.RESOURCE_LIST: _resources,
    Capability.CHANGE_LIST: _changes,
    Capability.RESOURCE_DUMP: resource_dump_packages,
    Capability.CHANGE_DUMP: _change_dumps,
}


def _entries(client: ResourceSyncClient, url: str) -> Iterator[Entry]:
    """The document's entries; a list's or a dump's across the parts of its index."""
    with client.open_document(url) as reader:
        capability = reader.head.capability
        walk = _WALKS.get(capability) if capability is not None else None
        if walk is None:  # Source Description, Capability List, manifests: entries as they are
            yield from reader
            return
    yield from walk(client, url)


def _line(entry: Entry) -> str:
    when = entry.change_time
    change = entry.md.change if entry.md is not None and entry.md.change is not None else ""
    return f"{entry.loc}\t{format_datetime(when) if when is not None else ''}\t{change}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


if __name__ == "__main__":
    sys.exit(main())
