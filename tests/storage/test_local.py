"""The local destination against a real temporary directory."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from urllib.request import url2pathname

import pytest

from airflow_provider_resourcesync.errors import DestinationError, UnstorableKeyError
from airflow_provider_resourcesync.protocol.hashes import Hashes
from airflow_provider_resourcesync.storage.base import ObjectInfo
from airflow_provider_resourcesync.storage.local import LocalDestination

INFO = ObjectInfo(
    uri="https://exämple.org/a b?q=1", length=3,
    hashes=Hashes.parse("md5:900150983cd24fb0d6963f7d28e17f72 sha-256:ba7816bf"),
    lastmod=datetime(2024, 1, 2, 3, 4, 5, 678900, tzinfo=UTC), type="text/plain")


def write(destination: LocalDestination, key: str, data: bytes,
          info: ObjectInfo | None = INFO) -> None:
    with destination.stage(key) as staged:
        staged.file.write(data)
        staged.commit(info or INFO)


def working_files(destination: LocalDestination) -> list[str]:
    """Staging files left in the working area (each process's folder holds its lock file)."""
    tmp = destination.root / ".resourcesync" / "tmp"
    return [path.name for path in tmp.rglob("*") if path.is_file() and path.name != ".lock"]


def test_staged_bytes_are_invisible_until_commit(local: LocalDestination) -> None:
    with local.stage("https/h/a") as staged:
        staged.file.write(b"abc")
        staged.file.flush()
        assert not local.exists("https/h/a")
        assert not (local.root / "https/h/a").exists()
        assert local.info("https/h/a") is None
        staged.commit(INFO)
        assert local.read_bytes("https/h/a") == b"abc"
    assert working_files(local) == []


def test_an_error_in_the_staged_block_keeps_the_old_object(local: LocalDestination) -> None:
    write(local, "https/h/a", b"old")
    with pytest.raises(RuntimeError), local.stage("https/h/a") as staged:
        staged.file.write(b"new, half written")
        raise RuntimeError("fetch failed")
    assert local.read_bytes("https/h/a") == b"old"
    assert local.info("https/h/a") == INFO
    assert working_files(local) == []


def test_closing_without_commit_discards(local: LocalDestination) -> None:
    staged = local.stage("https/h/a")
    staged.file.write(b"abc")
    staged.close()
    assert not local.exists("https/h/a")
    assert working_files(local) == []


def test_a_commit_happens_once(local: LocalDestination) -> None:
    with local.stage("k") as staged:
        staged.commit(INFO)
        with pytest.raises(DestinationError, match="already committed"):
            staged.commit(INFO)


def test_the_description_travels_with_the_object(local: LocalDestination) -> None:
    # Here (Linux, ext4 or tmpfs) in an extended attribute of the file itself.
    write(local, "https/h/a/b", b"abc")
    assert local.info("https/h/a/b") == INFO
    stored = json.loads(os.getxattr(local.root / "https/h/a/b", "user.resourcesync"))
    assert stored["uri"] == INFO.uri
    assert stored["hash"] == str(INFO.hashes)
    assert stored["lastmod"] == "2024-01-02T03:04:05.6789Z"
    assert not (local.root / ".resourcesync/meta").exists()
    info = ObjectInfo("https://h/x", 0, Hashes(()))
    write(local, "https/h/x", b"", info)
    assert local.info("https/h/x") == info


def test_without_extended_attributes_the_description_is_a_file_beside_the_tree(
        local: LocalDestination, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "_xattrs", False)
    write(local, "https/h/a/b", b"abc")
    assert local.info("https/h/a/b") == INFO
    stored = json.loads((local.root / ".resourcesync/meta/https/h/a/b").read_text())
    assert stored["uri"] == INFO.uri
    local.move("https/h/a/b", "https/h/c")
    assert local.info("https/h/c") == INFO
    local.delete("https/h/c")
    assert not (local.root / ".resourcesync/meta/https/h/c").exists()


def test_a_torn_description_reads_as_none_so_the_object_is_fetched_again(
        local: LocalDestination, monkeypatch: pytest.MonkeyPatch) -> None:
    write(local, "https/h/a", b"abc")
    os.setxattr(local.root / "https/h/a", "user.resourcesync", b'{"uri": "https://h/a", "len')
    assert local.info("https/h/a") is None


def test_write_bytes_keeps_no_stale_metadata(local: LocalDestination) -> None:
    write(local, "k", b"abc")
    local.write_bytes("k", b"<x/>", "application/xml")
    assert local.read_bytes("k") == b"<x/>"
    assert local.info("k") is None
    assert local.read_bytes("missing") is None
    with pytest.raises(DestinationError, match="missing"):
        local.open("missing")


def test_metadata_clash_across_suffixes_is_impossible(local: LocalDestination) -> None:
    # a ".json" suffix would make the metadata of "a" and of "a.json/b" clash
    write(local, "https/h/a", b"1")
    write(local, "https/h/a.json/b", b"2")
    assert local.info("https/h/a") == local.info("https/h/a.json/b") == INFO


@pytest.mark.parametrize(("first", "second"), [("https/h/x", "https/h/x/y"),
                                               ("https/h/x/y", "https/h/x")])
def test_file_and_directory_clash_is_refused_and_nothing_is_lost(
        local: LocalDestination, first: str, second: str) -> None:
    write(local, first, b"first")
    with pytest.raises(DestinationError) as caught:
        write(local, second, b"second")
    assert repr(first) in str(caught.value) and repr(second) in str(caught.value)
    assert local.read_bytes(first) == b"first"
    assert local.info(first) == INFO
    assert not local.exists(second)
    assert list(local.keys()) == [first]
    assert working_files(local) == []


def test_keys_walk_the_tree_without_the_reserved_prefix(local: LocalDestination) -> None:
    for key in ("https/h/b", "https/h/a/1", "https/h/a/2", "https/h/ab", "http/g/c"):
        write(local, key, b"x")
    local.write_bytes(".resourcesync/resourcelist.xml", b"<x/>", "application/xml")
    assert sorted(local.keys()) == ["http/g/c", "https/h/a/1", "https/h/a/2", "https/h/ab",
                                    "https/h/b"]
    assert sorted(local.keys("https/h/a")) == ["https/h/a/1", "https/h/a/2", "https/h/ab"]
    assert sorted(local.keys("https/h/a/")) == ["https/h/a/1", "https/h/a/2"]
    assert list(local.keys("nothing/here")) == []
    # the reserved prefix when asked for; the working area (staging, metadata) never
    with local.stage("https/h/pending") as staged:
        staged.file.write(b"x")
        assert list(local.keys(".resourcesync/")) == [".resourcesync/resourcelist.xml"]
        assert "https/h/pending" not in list(local.keys())


def test_keys_skip_symbolic_links(local: LocalDestination, tmp_path: Path) -> None:
    write(local, "https/h/a", b"x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    (local.root / "https/h/link").symlink_to(outside)
    (local.root / "https/h/file-link").symlink_to(outside / "secret")
    assert list(local.keys()) == ["https/h/a"]


def test_delete_removes_object_metadata_and_empty_directories(local: LocalDestination) -> None:
    write(local, "https/h/a/b/c", b"x")
    write(local, "https/h/keep", b"x")
    local.delete("https/h/a/b/c")
    assert not local.exists("https/h/a/b/c")
    assert not (local.root / "https/h/a").exists()
    assert not (local.root / ".resourcesync/meta/https/h/a").exists()
    assert local.exists("https/h/keep")
    local.delete("https/h/keep")
    assert sorted(os.listdir(local.root)) == [".resourcesync"]
    local.delete("https/h/never-was")  # nothing to do


def test_move_creates_parents_and_carries_metadata(local: LocalDestination) -> None:
    write(local, "a/1", b"one")
    local.write_bytes("b/deep/2", b"stale", "text/plain")
    local.move("a/1", "b/deep/2")
    assert local.read_bytes("b/deep/2") == b"one"
    assert local.info("b/deep/2") == INFO
    assert not local.exists("a/1") and local.info("a/1") is None
    assert not (local.root / "a").exists()
    local.write_bytes("c", b"no info", "text/plain")
    local.move("c", "b/deep/2")
    assert local.info("b/deep/2") is None  # no stale metadata follows the new object
    with pytest.raises(DestinationError, match="no object"):
        local.move("missing", "x")


def test_move_onto_a_clash_keeps_both(local: LocalDestination) -> None:
    write(local, "a", b"a")
    write(local, "x/y", b"y")
    with pytest.raises(DestinationError, match="'x'"):
        local.move("a", "x")
    assert local.read_bytes("a") == b"a" and local.read_bytes("x/y") == b"y"


@pytest.mark.parametrize("key", [
    "", "/etc/passwd", "../outside", "a/../../outside", "a/./b", "a//b", "a/", ".",
    "nul\x00byte", ".resourcesync/tmp/x", ".resourcesync/meta/x", ".resourcesync/tmp",
    "https/../x",
])
def test_escape_attempts_are_refused(local: LocalDestination, key: str) -> None:
    for attempt in (lambda: local.stage(key), lambda: local.open(key),
                    lambda: local.exists(key), lambda: local.delete(key),
                    lambda: local.write_bytes(key, b"x", "text/plain"),
                    lambda: local.object_url(key), lambda: local.move(key, "ok"),
                    lambda: local.info(key)):
        with pytest.raises(DestinationError):
            attempt()
    assert sorted(os.listdir(local.root)) == [".resourcesync"]


def test_symbolic_links_in_the_way_are_refused(local: LocalDestination, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    (local.root / "link").symlink_to(outside)
    (local.root / "file-link").symlink_to(outside / "secret")
    for key in ("link/secret", "link/new", "file-link"):
        with pytest.raises(DestinationError, match="outside"):
            local.open(key)
        with pytest.raises(DestinationError, match="outside"):
            local.info(key)
        with pytest.raises(DestinationError, match="outside"):
            write(local, key, b"overwrite")
    assert (outside / "secret").read_bytes() == b"secret"
    assert sorted(os.listdir(outside)) == ["secret"]


def test_a_link_planted_at_a_key_after_its_check_is_never_written_through(
        local: LocalDestination, tmp_path: Path) -> None:
    """A commit right after info() found nothing at its key does not look for a link there
    again (one system call less per fetched resource): the rename replaces a link planted
    meanwhile, never what it points to."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    write(local, "https/h/other", b"x")
    assert local.info("https/h/planted") is None
    (local.root / "https/h/planted").symlink_to(outside / "secret")
    with contextlib.suppress(DestinationError):
        write(local, "https/h/planted", b"overwrite")
    assert (outside / "secret").read_bytes() == b"secret"
    assert sorted(os.listdir(outside)) == ["secret"]


def test_info_of_a_key_that_is_a_directory_or_missing_is_none(local: LocalDestination) -> None:
    write(local, "dir/object", b"x")
    assert local.info("dir") is None
    assert local.info("missing") is None
    assert local.info("object/under/a/file") is None
    assert local.info("dir/object") is not None


def assert_unstorable_and_quoted_short(error: BaseException, *keys: str) -> None:
    """Unstorable: a re-run cannot help, so the message says what to change instead, and quotes
    each long key by its first 100 characters and its length, not whole."""
    assert isinstance(error, UnstorableKeyError) and not error.rerun_helps
    message = str(error)
    assert "re-run" not in message and "key_prefixes" in message
    for key in keys:
        assert f"{key[:100]!r}... ({len(key)} characters)" in message and key not in message
    assert len(message) < 600


@pytest.mark.parametrize("key", [
    "https/h/" + "x" * 300,  # a name longer than the filesystem's 255 bytes
    "https/h/" + "/".join(["y" * 200] * 25),  # a path longer than 4096 bytes, of short names
])
def test_a_key_too_long_for_the_disk_is_unstorable(local: LocalDestination, key: str) -> None:
    write(local, "https/h/kept", b"kept")
    with pytest.raises(DestinationError, match="cannot write") as caught:
        write(local, key, b"x")
    assert_unstorable_and_quoted_short(caught.value, key)
    assert working_files(local) == []
    assert not local.exists(key) and local.info(key) is None
    local.delete(key)  # nothing there: nothing to do
    assert list(local.keys()) == ["https/h/kept"]


@pytest.mark.parametrize(("first", "second"), [("https/h/x", "https/h/x/" + "y" * 150),
                                               ("https/h/x/" + "y" * 150, "https/h/x")])
def test_a_file_and_directory_clash_is_unstorable(local: LocalDestination, first: str,
                                                  second: str) -> None:
    write(local, first, b"first")
    with pytest.raises(DestinationError) as caught:
        write(local, second, b"second")
    long = max(first, second, key=len)
    assert_unstorable_and_quoted_short(caught.value, long)
    assert "'https/h/x'" in str(caught.value)
    assert local.read_bytes(first) == b"first"


def test_object_url_is_a_file_url_of_the_object(local: LocalDestination) -> None:
    write(local, "https/h/a%2Fb c", b"x")
    url = local.object_url("https/h/a%2Fb c")
    assert url.startswith("file:///") and url.startswith(local.url)
    assert Path(url2pathname(url[len("file://"):])).read_bytes() == b"x"
    assert local.url == local.root.as_uri() + "/"


def test_concurrent_writes_and_deletes_in_shared_directories(local: LocalDestination) -> None:
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(40):
                key = f"https/h/{i % 4}/{worker}-{i}"
                write(local, key, f"{worker}-{i}".encode())
                if i % 2:
                    local.delete(key)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(list(local.keys())) == 8 * 20
    assert working_files(local) == []
