"""A Resource Dump beside each Resource List of a publication (issue 15, Deliver 4; spec 11.1,
11.2): our baseline operator's engine baselines from it over HTTP and equals the collection; a
compaction replaces it whole; an object written again since the inventory is dumped as read,
one gone since is left out of it, and the next run publishes their changes; turned off, it is
deleted."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from airflow_provider_resourcesync.protocol.package import open_package
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.publish.bucket import LocalBucket
from airflow_provider_resourcesync.publish.inventory import walk_directory
from airflow_provider_resourcesync.publish.packages import PackageSize
from airflow_provider_resourcesync.publish.run import publish
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.incremental import run_incremental
from airflow_provider_resourcesync.testing import SourceServer
from tests.sync.conftest import client_for, held

from .test_publish_run import Publishing, validate_all, write


def dump_packages(out: Path) -> list[str]:
    """The package names the Resource Dump lists, each checked: on disk, read by our reader
    as a Resource Dump Manifest whose copy beside it is the same manifest."""
    dump = read_document((out / "resourcedump.xml").read_bytes())
    assert dump.head.md is not None and dump.head.md.capability == "resourcedump"
    names = []
    for entry in dump.entries:
        name = entry.loc.rpartition("/")[2]
        with open_package(out / "resourcedump" / name) as opened:
            assert opened.manifest.head.md is not None
            assert opened.manifest.head.md.at == dump.head.md.at
            copy = read_document((out / "resourcedump" / name.replace(
                ".zip", "-manifest.xml")).read_bytes())
            assert [e.loc for e in copy.entries] == [e.loc for e in opened.manifest.entries]
        names.append(name)
    return names


def test_a_resource_dump_beside_each_resource_list_is_baselined_from_over_http(
        tmp_path: Path) -> None:
    root, out = tmp_path / "bucket", tmp_path / "published"
    for number in range(12):
        write(root, f"docs/{number}.txt", f"first {number}\n".encode())
    write(root, "a b/é%.txt", b"needs percent-encoding\n")
    with SourceServer(max_lifetime=300) as web, client_for(web) as reader:
        publishing = Publishing(web, root, out, size=PackageSize(entries=5),
                                resource_dump=True)
        capability_list = publishing.capability_list
        publishing.run()
        capabilities = read_document((out / "capabilitylist.xml").read_bytes()).entries
        assert web.url("/pub/resourcedump.xml") in [entry.loc for entry in capabilities]
        first = dump_packages(out)
        assert len(first) == 3  # 13 objects, five a package
        validate_all(out)
        mirror = LocalDestination(tmp_path / "from-dump")
        standing = run_baseline(reader, mirror, capability_list_url=capability_list,
                                method="resourcedump")
        assert held(mirror) == publishing.bucket.files()

        # a compaction (three changes in 13, past a tenth): a new dump; the old one's packages
        # stay while a cache may serve the old resourcedump.xml (test_caches.py)
        write(root, "docs/0.txt", b"second\n")
        (root / "docs" / "1.txt").unlink()
        write(root, "new.txt", b"new\n")
        publishing.run()
        second = dump_packages(out)
        assert not set(first) & set(second)
        assert sorted(path.name for path in (out / "resourcedump").glob("*.zip")) == sorted(
            first + second)
        validate_all(out)
        again = LocalDestination(tmp_path / "from-second-dump")
        run_baseline(reader, again, capability_list_url=capability_list, method="resourcedump")
        assert held(again) == publishing.bucket.files()
        run_incremental(reader, mirror, capability_list_url=capability_list,
                        checkpoint=standing, method="changelist")
        assert held(mirror) == publishing.bucket.files()

        # one change in 13: no compaction, the dump stays as it was
        write(root, "docs/2.txt", b"third\n")
        publishing.run()
        assert dump_packages(out) == second


def test_an_object_written_again_since_the_inventory_is_dumped_as_read_one_gone_left_out(
        tmp_path: Path) -> None:
    """The Resource List lists both as the inventory saw them; the dump holds the one written
    again as it reads it (described by the bytes read), and leaves out the one gone, which the
    log says; the next run publishes their changes, and a Destination that baselined from the
    dump and follows the Change List ends equal to the directory."""
    root, out = tmp_path / "bucket", tmp_path / "published"
    for name in ("a.txt", "b.txt", "c.txt"):
        write(root, name, name.encode())
    with SourceServer(max_lifetime=300) as web, client_for(web) as reader:
        publishing = Publishing(web, root, out, resource_dump=True)
        inventory = list(walk_directory(root))
        write(root, "a.txt", b"a, overwritten since the inventory")
        (root / "b.txt").unlink()
        lines: list[str] = []
        publish(publishing.publication, inventory, datetime.now(UTC), LocalBucket(root),
                log=lines.append)
        for directory in publishing.served:
            directory.refresh()
        listed = read_document((out / "resourcelist.xml").read_bytes()).entries
        assert [entry.loc.rpartition("/")[2] for entry in listed] == ["a.txt", "b.txt", "c.txt"]
        (package,) = dump_packages(out)
        with open_package(out / "resourcedump" / package) as opened:
            dumped = opened.manifest.entries
            assert [entry.loc.rpartition("/")[2] for entry in dumped] == ["a.txt", "c.txt"]
            assert dumped[0].md is not None and dumped[0].md.length == len(
                b"a, overwritten since the inventory")
        left_out = [line for line in lines if "left out of the Resource Dump" in line]
        assert len(left_out) == 1 and "b.txt" in left_out[0]
        mirror = LocalDestination(tmp_path / "mirror")
        standing = run_baseline(reader, mirror, capability_list_url=publishing.capability_list,
                                method="resourcedump")
        publishing.run()
        run_incremental(reader, mirror, capability_list_url=publishing.capability_list,
                        checkpoint=standing, method="changelist")
        assert held(mirror) == publishing.bucket.files()
        validate_all(out)


def test_a_resource_dump_turned_off_is_deleted_and_turned_on_comes_with_the_next_snapshot(
        tmp_path: Path) -> None:
    root, out = tmp_path / "bucket", tmp_path / "published"
    for number in range(20):
        write(root, f"{number}.txt", b"%d" % number)
    with SourceServer(max_lifetime=300) as web:
        Publishing(web, root, out, resource_dump=True).run()
        assert (out / "resourcedump.xml").is_file()
        write(root, "0.txt", b"changed")
        Publishing(web, root, out).run()
        assert not (out / "resourcedump.xml").exists() and not list(out.glob("resourcedump/*"))
        capabilities = read_document((out / "capabilitylist.xml").read_bytes()).entries
        assert not [entry for entry in capabilities if "resourcedump" in entry.loc]
        write(root, "1.txt", b"changed")  # one change in twenty: no compaction, no dump yet
        on = Publishing(web, root, out, resource_dump=True)
        on.run()
        assert not (out / "resourcedump.xml").exists()
        for number in range(2, 6):  # past a tenth of the snapshot: a compaction, and a dump
            write(root, f"{number}.txt", b"changed")
        on.run()
        assert len(dump_packages(out)) == 1
        validate_all(out)
