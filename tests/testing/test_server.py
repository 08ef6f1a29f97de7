"""The loopback server over real sockets, seen from httpx: content, conditional GETs, faults."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime

import httpx
import pytest

from airflow_provider_resourcesync.testing.server import SourceServer

BODY = b"The quick brown fox jumps over the lazy dog.\n"


@pytest.fixture
def server() -> Iterator[SourceServer]:
    with SourceServer(max_lifetime=60) as started:
        started.put("/a.txt", BODY, "text/plain")
        yield started


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as opened:
        yield opened


def test_a_200_carries_length_etag_and_last_modified(
        server: SourceServer, client: httpx.Client) -> None:
    when = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    server.put("/dated", b"dated", "text/plain", last_modified=when)
    response = client.get(server.url("/a.txt"))
    assert response.status_code == 200
    assert response.content == BODY
    assert response.headers["content-length"] == str(len(BODY))
    assert response.headers["content-type"] == "text/plain"
    etag = response.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"') and not etag.startswith("W/")
    assert parsedate_to_datetime(response.headers["last-modified"]) <= datetime.now(UTC)
    dated = client.get(server.url("/dated"))
    assert parsedate_to_datetime(dated.headers["last-modified"]) == when
    assert dated.headers["etag"] != etag


def test_the_etag_follows_the_body(server: SourceServer, client: httpx.Client) -> None:
    first = client.get(server.url("/a.txt")).headers["etag"]
    server.put("/a.txt", BODY + b"more", "text/plain")
    assert client.get(server.url("/a.txt")).headers["etag"] != first
    server.put("/a.txt", BODY, "text/plain")
    assert client.get(server.url("/a.txt")).headers["etag"] == first


def test_if_none_match_gets_304_without_body(server: SourceServer, client: httpx.Client) -> None:
    etag = client.get(server.url("/a.txt")).headers["etag"]
    response = client.get(server.url("/a.txt"), headers={"If-None-Match": etag})
    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["etag"] == etag
    other = client.get(server.url("/a.txt"), headers={"If-None-Match": '"other"'})
    assert other.status_code == 200 and other.content == BODY


def test_if_modified_since_gets_304_unless_modified(
        server: SourceServer, client: httpx.Client) -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    server.put("/dated", b"dated", last_modified=when)
    since = {"If-Modified-Since": format_datetime(when, usegmt=True)}
    assert client.get(server.url("/dated"), headers=since).status_code == 304
    before = {"If-Modified-Since": format_datetime(when - timedelta(seconds=1), usegmt=True)}
    assert client.get(server.url("/dated"), headers=before).status_code == 200


def test_head_has_the_headers_and_no_body(server: SourceServer, client: httpx.Client) -> None:
    response = client.head(server.url("/a.txt"))
    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["content-length"] == str(len(BODY))
    assert server.count("/a.txt", method="HEAD") == 1
    assert server.count("/a.txt") == 0


@pytest.mark.parametrize("status", [404, 410])
def test_removed_content_answers_404_or_410(
        server: SourceServer, client: httpx.Client, status: int) -> None:
    server.remove("/a.txt", status=status)
    assert client.get(server.url("/a.txt")).status_code == status
    with pytest.raises(KeyError):
        server.get_body("/a.txt")
    server.put("/a.txt", b"back")
    assert client.get(server.url("/a.txt")).content == b"back"
    assert client.get(server.url("/never")).status_code == 404


def test_a_query_matches_its_own_content_first_then_the_path(
        server: SourceServer, client: httpx.Client) -> None:
    server.put("/a.txt?v=2", b"second version")
    assert client.get(server.url("/a.txt?v=2")).content == b"second version"
    assert client.get(server.url("/a.txt?v=3")).content == BODY
    assert [r.path for r in server.requests] == ["/a.txt?v=2", "/a.txt?v=3"]
    assert server.count("/a.txt") == 2
    assert server.count("/a.txt?v=3") == 1


def test_extra_headers_go_with_the_content(server: SourceServer, client: httpx.Client) -> None:
    link = '<http://example.org/capabilitylist.xml>; rel="resourcesync"'
    server.put("/page", b"page", "text/html", headers={"Link": link})
    assert client.get(server.url("/page")).headers["link"] == link


def test_a_429_carries_retry_after_and_is_consumed_after_times(
        server: SourceServer, client: httpx.Client) -> None:
    server.fail("/a.txt", 429, times=2, headers={"Retry-After": "1"})
    statuses = [client.get(server.url("/a.txt")) for _ in range(3)]
    assert [r.status_code for r in statuses] == [429, 429, 200]
    assert statuses[0].headers["retry-after"] == "1"
    assert server.count("/a.txt", status=429) == 2


def test_faults_are_consumed_in_order(server: SourceServer, client: httpx.Client) -> None:
    server.fail("/a.txt", 503)
    server.fail("/a.txt", 500)
    server.fail("/a.txt", 410)
    statuses = [client.get(server.url("/a.txt")).status_code for _ in range(4)]
    assert statuses == [503, 500, 410, 200]


def test_a_fault_only_touches_its_path(server: SourceServer, client: httpx.Client) -> None:
    server.put("/b.txt", b"b")
    server.fail("/a.txt", 500)
    assert client.get(server.url("/b.txt")).status_code == 200
    assert client.get(server.url("/a.txt?x=1")).status_code == 500


def test_a_truncated_body_is_a_protocol_error(server: SourceServer, client: httpx.Client) -> None:
    server.truncate("/a.txt")
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(server.url("/a.txt"))
    assert client.get(server.url("/a.txt")).content == BODY


def test_a_wrong_length_is_a_short_read(server: SourceServer, client: httpx.Client) -> None:
    server.wrong_length("/a.txt")
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(server.url("/a.txt"))
    assert client.get(server.url("/a.txt")).content == BODY


def test_a_corrupt_body_differs_by_one_byte(server: SourceServer, client: httpx.Client) -> None:
    etag = client.get(server.url("/a.txt")).headers["etag"]
    server.corrupt("/a.txt")
    response = client.get(server.url("/a.txt"))
    assert response.status_code == 200
    assert response.headers["etag"] == etag
    assert len(response.content) == len(BODY)
    assert sum(a != b for a, b in zip(response.content, BODY, strict=True)) == 1
    assert client.get(server.url("/a.txt")).content == BODY


def test_a_redirect_stays_until_cleared(server: SourceServer, client: httpx.Client) -> None:
    server.put("/moved.txt", b"moved")
    server.redirect("/a.txt", server.url("/moved.txt"), status=301)
    for _ in range(3):
        response = client.get(server.url("/a.txt"))
        assert response.status_code == 301
        assert response.headers["location"] == server.url("/moved.txt")
    assert client.get(server.url("/a.txt"), follow_redirects=True).content == b"moved"
    server.clear_faults()
    assert client.get(server.url("/a.txt")).content == BODY


def test_a_counted_redirect(server: SourceServer, client: httpx.Client) -> None:
    server.redirect("/a.txt", "/elsewhere", times=1)
    assert client.get(server.url("/a.txt")).headers["location"] == "/elsewhere"
    assert client.get(server.url("/a.txt")).status_code == 200


def test_a_dropped_connection_gets_no_response(
        server: SourceServer, client: httpx.Client) -> None:
    server.drop("/a.txt")
    with pytest.raises(httpx.TransportError):
        client.get(server.url("/a.txt"))
    assert client.get(server.url("/a.txt")).status_code == 200
    assert [r.status for r in server.requests] == [None, 200]


def test_a_stall_delays_the_answer(server: SourceServer, client: httpx.Client) -> None:
    server.stall("/a.txt", 0.3)
    started = time.monotonic()
    assert client.get(server.url("/a.txt")).content == BODY
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    client.get(server.url("/a.txt"))
    assert time.monotonic() - started < 0.3


def test_a_stall_outlasting_the_client_timeout(server: SourceServer) -> None:
    server.stall("/a.txt", 2)
    with pytest.raises(httpx.ReadTimeout), httpx.Client(timeout=0.2) as impatient:
        impatient.get(server.url("/a.txt"))


def test_a_drip_sends_the_answer_a_byte_at_a_time_and_counts_it(
        server: SourceServer, client: httpx.Client) -> None:
    server.drip("/a.txt", 0.001)
    server.drip("/a.txt", 0.001, head=True)
    for _ in range(2):  # the whole answer, however it was sent
        assert client.get(server.url("/a.txt")).content == BODY
    server.reset_log()
    server.drip("/a.txt", 0.001, endless=True, seconds=0.3)
    with client.stream("GET", server.url("/a.txt")) as response:
        assert "Content-Length" not in response.headers
        received = b"".join(response.iter_raw())  # the body again and again, until the close
    assert len(received) > len(BODY) and received.startswith(BODY + BODY[:1])
    assert server.body_bytes_sent("/a.txt") == len(received)


def test_faults_need_a_positive_count(server: SourceServer) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        server.fail("/a.txt", 500, times=0)


def test_the_log_records_requests_and_counts_them(
        server: SourceServer, client: httpx.Client) -> None:
    client.get(server.url("/a.txt"), headers={"Authorization": "Bearer token",
                                              "User-Agent": "tester/1"})
    client.get(server.url("/missing"))
    client.head(server.url("/a.txt"))
    first = server.requests[0]
    assert (first.method, first.path, first.status) == ("GET", "/a.txt", 200)
    assert first.headers["authorization"] == "Bearer token"
    assert first.headers["user-agent"] == "tester/1"
    assert first.headers["host"] == server.base_url.removeprefix("http://")
    assert server.count() == 2
    assert server.count(method=None) == 3
    assert server.count("/a.txt", method=None) == 2
    assert server.count(status=404) == 1
    server.requests.clear()  # a copy
    assert len(server.requests) == 3
    server.reset_log()
    assert server.requests == []


def test_the_conditional_headers_are_logged(server: SourceServer, client: httpx.Client) -> None:
    client.get(server.url("/a.txt"), headers={
        "If-None-Match": '"x"', "If-Modified-Since": "Thu, 01 Jan 2026 00:00:00 GMT"})
    logged = server.requests[0].headers
    assert logged["if-none-match"] == '"x"'
    assert logged["if-modified-since"] == "Thu, 01 Jan 2026 00:00:00 GMT"


def test_the_delay_applies_to_every_request(server: SourceServer, client: httpx.Client) -> None:
    server.delay = 0.2
    started = time.monotonic()
    client.get(server.url("/a.txt"))
    client.get(server.url("/missing"))
    assert time.monotonic() - started >= 0.4
    server.delay = 0
    started = time.monotonic()
    client.get(server.url("/a.txt"))
    assert time.monotonic() - started < 0.2


def test_the_server_stops_by_itself() -> None:
    server = SourceServer(max_lifetime=0.5).start()
    server.put("/x", b"x")
    assert httpx.get(server.url("/x")).status_code == 200
    deadline = time.monotonic() + 5
    while server.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not server.running
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url("/x"))
    server.stop()  # idempotent


def test_running_holds_until_the_port_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stop that is slow to close the listening socket (a loaded machine) is not "stopped" yet."""
    server = SourceServer(max_lifetime=0.2).start()
    server.put("/x", b"x")
    shutdown = server._httpd.shutdown

    def slow_shutdown() -> None:
        time.sleep(0.3)
        shutdown()

    monkeypatch.setattr(server._httpd, "shutdown", slow_shutdown)
    deadline = time.monotonic() + 5
    while server.running and time.monotonic() < deadline:
        time.sleep(0.005)
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url("/x"))


def test_stop_closes_kept_alive_connections(client: httpx.Client) -> None:
    server = SourceServer().start()
    server.put("/x", b"x")
    assert client.get(server.url("/x")).status_code == 200
    server.stop()
    server.stop()
    with pytest.raises(httpx.TransportError):
        client.get(server.url("/x"))
    with pytest.raises(RuntimeError):
        server.start()


def test_two_servers_are_two_origins(client: httpx.Client) -> None:
    with SourceServer() as first, SourceServer() as second:
        first.put("/x", b"first")
        second.put("/x", b"second")
        assert first.base_url != second.base_url
        assert first.base_url.startswith("http://127.0.0.1:")
        first.redirect("/go", second.url("/x"))
        response = client.get(first.url("/go"), follow_redirects=True)
        assert response.content == b"second"
        assert second.requests[0].headers["host"] == second.base_url.removeprefix("http://")
        assert first.count("/x") == 0


def test_url_needs_an_absolute_path(server: SourceServer) -> None:
    assert server.url("/a") == server.base_url + "/a"
    with pytest.raises(ValueError):
        server.url("a")


def test_requests_and_faults_write_nothing_to_stderr(
        server: SourceServer, client: httpx.Client, capfd: pytest.CaptureFixture[str]) -> None:
    client.get(server.url("/a.txt"))
    client.get(server.url("/missing"))
    server.drop("/a.txt")
    server.truncate("/a.txt")
    for _ in range(2):
        with pytest.raises(httpx.TransportError):
            client.get(server.url("/a.txt"))
    assert capfd.readouterr().err == ""
