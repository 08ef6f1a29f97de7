"""No change lost to an imperfect Change List (issue 13, item 1). resync 2.0.1's ``resync-build``
writes Change Lists with no ``from`` (12.1 makes it mandatory), no ``datetime``, and each deletion
dated by the file's old ``lastmod``, before the baseline's ``at``; other Sources list changes out
of order. The incremental run applies every change such a list cannot prove old, deletes a
doubtful deletion only where the mirror's copy is not newer, and says what was wrong."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.protocol.datetimes import format_datetime
from airflow_provider_resourcesync.protocol.model import (
    RS_NS,
    SITEMAP_NS,
    Document,
    Entry,
    Head,
    Metadata,
)
from airflow_provider_resourcesync.protocol.writer import document_bytes
from airflow_provider_resourcesync.storage.base import Destination
from airflow_provider_resourcesync.sync.audit import run_audit
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import SourceServer

from .conftest import described, held

OLD = datetime(2026, 1, 5, tzinfo=UTC)  # when the files were last modified before the baseline
AT = datetime(2026, 2, 1, tzinfo=UTC)  # the baseline's Resource List
NEW = AT + timedelta(days=1)


class _Source:
    """A Source with a Resource List at ``AT`` and one Change List, both as given."""

    def __init__(self, server: SourceServer) -> None:
        self.server = server
        self.bodies: dict[str, bytes] = {}
        self.zone = "Z"

    def uri(self, name: str) -> str:
        return self.server.url(f"/rs/{name}")

    def serve(self, name: str, body: bytes | None) -> None:
        if body is None:
            self.bodies.pop(name)
        else:
            self.server.put(f"/rs/{name}", body, "text/plain")
            self.bodies[name] = body

    def resource_list(self, lastmod: dict[str, datetime]) -> None:
        entries = [Entry(self.uri(name), lastmod=lastmod[name], md=described(body))
                   for name, body in self.bodies.items()]
        self._put("rl.xml", Document(Head(md=Metadata(capability="resourcelist", at=AT)),
                                     entries))

    def change_list(self, changes: list[tuple[str, str, datetime]], *, datetime_md: bool = False,
                    from_: datetime | None = None, zone: str = "Z") -> str:
        """A Change List of ``(name, change, when)`` as written, in the order given (our writer
        refuses a list out of order): dated by ``lastmod`` (resync's 1.0 mode), and by
        ``datetime`` too with ``datetime_md`` (its 1.1 mode); ``from_`` only if given; times
        end with ``zone`` (CORE writes none)."""
        self.zone = zone
        entries = "".join(self._change(name, kind, when, datetime_md)
                          for name, kind, when in changes)
        head = f' from="{self._time(from_)}"' if from_ is not None else ""
        self.server.put("/rs/cl.xml", (
            f'<urlset xmlns="{SITEMAP_NS}" xmlns:rs="{RS_NS}">'
            f'<rs:md capability="changelist"{head}/>{entries}</urlset>').encode(),
            "application/xml")
        caps = Document(Head(md=Metadata(capability="capabilitylist")), [
            Entry(self.server.url("/rs/rl.xml"), md=Metadata(capability="resourcelist")),
            Entry(self.server.url("/rs/cl.xml"), md=Metadata(capability="changelist"))])
        self._put("caps.xml", caps)
        return self.server.url("/rs/caps.xml")

    def _change(self, name: str, kind: str, when: datetime, datetime_md: bool) -> str:
        body = self.bodies.get(name)
        md = described(body) if body is not None and kind != "deleted" else None
        fixity = f' hash="{md.hash}" length="{md.length}"' if md is not None else ""
        stamp = f' datetime="{self._time(when)}"' if datetime_md else ""
        return (f"<url><loc>{self.uri(name)}</loc><lastmod>{self._time(when)}</lastmod>"
                f'<rs:md change="{kind}"{fixity}{stamp}/></url>')

    def _time(self, when: datetime) -> str:
        return format_datetime(when).removesuffix("Z") + self.zone

    def _put(self, name: str, document: Document) -> None:
        self.server.put(f"/rs/{name}", document_bytes(document), "application/xml")


@pytest.fixture
def source(server: SourceServer) -> _Source:
    return _Source(server)


@pytest.mark.parametrize("datetime_md", [False, True], ids=["resync-1.0", "resync-1.1"])
def test_a_list_with_no_from_loses_no_deletion_dated_before_the_baseline(
        client: ResourceSyncClient, destination: Destination, source: _Source,
        datetime_md: bool, caplog: pytest.LogCaptureFixture) -> None:
    for name in ("a", "b", "c", "keep"):
        source.serve(name, f"{name} v1\n".encode())
    source.resource_list(dict.fromkeys(source.bodies, OLD))
    caps = source.change_list([])
    checkpoint = run_baseline(client, destination, capability_list_url=caps)

    source.serve("a", b"a v2\n")
    source.serve("d", b"d v1\n")
    for name in "bc":
        source.serve(name, None)
    caps = source.change_list([("a", "updated", NEW), ("d", "created", NEW),
                               ("b", "deleted", OLD), ("c", "deleted", OLD)],
                              datetime_md=datetime_md)  # no from, and out of order too
    with caplog.at_level(logging.WARNING):
        run_incremental(client, destination, capability_list_url=caps, checkpoint=checkpoint)

    assert held(destination) == {source.uri(name): body for name, body in source.bodies.items()}
    warned = [r.getMessage() for r in caplog.records if "has no from" in r.getMessage()]
    assert len(warned) == 1 and source.server.url("/rs/cl.xml") in warned[0]
    assert "2 of its changes are dated before" in warned[0]
    assert run_audit(client, destination, capability_list_url=caps, deep=True).clean


def test_a_doubtful_deletion_keeps_a_copy_the_mirror_got_later(
        client: ResourceSyncClient, destination: Destination, source: _Source) -> None:
    """``x`` was deleted at OLD and created again before the baseline: a list with no ``from``
    that still names the old deletion cannot take the newer copy away."""
    source.serve("x", b"x again\n")
    source.resource_list({"x": AT - timedelta(days=1)})
    checkpoint = run_baseline(client, destination, capability_list_url=source.change_list([]))
    caps = source.change_list([("x", "deleted", OLD)])
    run_incremental(client, destination, capability_list_url=caps, checkpoint=checkpoint)
    assert held(destination) == {source.uri("x"): b"x again\n"}
    assert run_audit(client, destination, capability_list_url=caps).clean  # it agrees


def test_a_list_out_of_order_across_the_baseline_loses_no_change(
        client: ResourceSyncClient, destination: Destination, source: _Source,
        caplog: pytest.LogCaptureFixture) -> None:
    """A list that began before the baseline lists a deletion dated before ``at`` after a
    change dated after it: its times cannot say the deletion is old, so it is applied."""
    for name in ("a", "b"):
        source.serve(name, f"{name} v1\n".encode())
    source.resource_list(dict.fromkeys(source.bodies, OLD))
    checkpoint = run_baseline(client, destination, capability_list_url=source.change_list([]))
    source.serve("a", b"a v2\n")
    source.serve("b", None)
    caps = source.change_list([("a", "updated", NEW), ("b", "deleted", AT - timedelta(hours=1))],
                              datetime_md=True, from_=OLD)
    with caplog.at_level(logging.WARNING):
        run_incremental(client, destination, capability_list_url=caps, checkpoint=checkpoint)
    assert held(destination) == {source.uri("a"): b"a v2\n"}
    assert any("out of order" in r.getMessage() for r in caplog.records)


def test_a_list_in_order_across_the_baseline_still_skips_what_the_baseline_had(
        client: ResourceSyncClient, destination: Destination, source: _Source) -> None:
    """The time rule stays where the list can be trusted: a deletion dated before the baseline,
    in order, of a resource created again since, is not applied."""
    source.serve("a", b"a again\n")
    source.resource_list({"a": AT - timedelta(hours=1)})
    checkpoint = run_baseline(client, destination, capability_list_url=source.change_list([]))
    caps = source.change_list([("a", "deleted", AT - timedelta(hours=2))], datetime_md=True,
                              from_=OLD)
    run_incremental(client, destination, capability_list_url=caps, checkpoint=checkpoint)
    assert held(destination) == {source.uri("a"): b"a again\n"}


def test_times_without_a_zone_are_read_as_utc_and_said_so(
        client: ResourceSyncClient, destination: Destination, source: _Source,
        caplog: pytest.LogCaptureFixture) -> None:
    """CORE writes ``from="2020-06-02T00:00:00"`` (no zone, spec 7): the run reads it as UTC."""
    source.serve("a", b"a v1\n")
    source.resource_list({"a": OLD})
    checkpoint = run_baseline(client, destination, capability_list_url=source.change_list([]))
    source.serve("a", b"a v2\n")
    caps = source.change_list([("a", "updated", NEW)], datetime_md=True, from_=AT, zone="")
    with caplog.at_level(logging.WARNING):
        run_incremental(client, destination, capability_list_url=caps, checkpoint=checkpoint)
    assert held(destination) == {source.uri("a"): b"a v2\n"}
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "gives its from with no time zone" in warned
    assert "dates 1 of its changes with no time zone" in warned
