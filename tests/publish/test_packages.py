"""Change Dump packages cut from a run's changes and written from a directory (spec 13.1,
13.2): windows that follow each other, limits kept, every package readable by our own reader
with its manifest copy beside it, objects written again since the inventory packaged as read
and those gone since left for the next run, and a run made again reusing what it wrote
whole."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from airflow_provider_resourcesync.errors import ConfigurationError, InvalidValueError, PublishError
from airflow_provider_resourcesync.protocol.model import Change
from airflow_provider_resourcesync.protocol.package import open_package
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.validate import has_errors, validate_document
from airflow_provider_resourcesync.publish.bucket import LocalBucket
from airflow_provider_resourcesync.publish.inventory.local import change_token, last_modified
from airflow_provider_resourcesync.publish.packages import (
    PackageSize,
    Planned,
    checked_algorithms,
    cut,
    write_packages,
)
from airflow_provider_resourcesync.publish.run import Publication
from airflow_provider_resourcesync.storage.local import LocalDestination

START = datetime(2026, 1, 1, tzinfo=UTC)
END = START + timedelta(days=1)
SERVED = "https://cdn.example.org/"
CAPABILITY_LIST = "https://example.org/rs/capabilitylist.xml"


def planned(number: int, size: int = 10, change: Change = Change.UPDATED) -> Planned:
    return Planned(f"k{number}", f"{SERVED}k{number}", change,
                   START + timedelta(minutes=number), size)


def windows_of(changes: list[Planned], size: PackageSize) -> list[tuple[datetime, datetime,
                                                                        list[str]]]:
    return [(window.start, window.end, [change.key for change in window.changes])
            for window in cut(changes, size, START, END)]


def at(number: int) -> datetime:
    return START + timedelta(minutes=number)


def test_packages_close_at_their_entries_or_bytes_and_their_windows_follow_each_other() -> None:
    changes = [planned(number) for number in range(1, 6)]
    assert windows_of(changes, PackageSize(entries=2)) == [
        (START, at(2), ["k1", "k2"]), (at(2), at(4), ["k3", "k4"]), (at(4), END, ["k5"])]
    sizes = [planned(1, 40), planned(2, 70), planned(3, 200), planned(4, 10)]
    assert windows_of(sizes, PackageSize(bytes=100)) == [
        (START, at(1), ["k1"]), (at(1), at(2), ["k2"]),
        (at(2), at(3), ["k3"]),  # larger than a package: alone
        (at(3), END, ["k4"])]


def test_changes_not_dated_apart_or_too_large_for_a_reader_are_refused() -> None:
    with pytest.raises(InvalidValueError, match="date changes apart"):
        list(cut([planned(1), planned(1)], PackageSize(), START, END))
    with pytest.raises(InvalidValueError, match="not after"):
        list(cut([planned(0)], PackageSize(), START, END))  # at the window's start
    with pytest.raises(PublishError, match="more than a package member may hold"):
        list(cut([planned(1, 5 * 1024 ** 3)], PackageSize(), START, END))
    for wrong in ({"entries": 0}, {"entries": 50_001}, {"bytes": 0},
                  {"bytes": 11 * 1024 ** 3}):
        with pytest.raises(InvalidValueError):
            PackageSize(**wrong)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "bucket"
    (root / "docs").mkdir(parents=True)
    for number in range(1, 5):
        (root / "docs" / f"k{number}.txt").write_bytes(f"object {number}\n".encode() * number)
    return root


def inventoried(root: Path, number: int, change: Change = Change.UPDATED) -> Planned:
    key = f"docs/k{number}.txt"
    info = (root / key).stat() if change is not Change.DELETED else None
    return Planned(key, SERVED + key, change, at(number), info.st_size if info else 0,
                   change_token(info) if info else "", last_modified(info) if info else None)


def test_packages_from_a_directory_are_read_back_by_our_reader(
        tree: Path, tmp_path: Path) -> None:
    destination = LocalDestination(tmp_path / "published")
    changes = [inventoried(tree, 1, Change.CREATED), inventoried(tree, 2),
               inventoried(tree, 3, Change.DELETED), inventoried(tree, 4)]
    (tree / "docs" / "k3.txt").unlink()
    packages = list(write_packages(cut(changes, PackageSize(entries=3), START, END),
                                   LocalBucket(tree), destination, "dumps/",
                                   destination.object_url, CAPABILITY_LIST, ("sha-256",)))
    assert len(packages) == 2 and all(not package.left for package in packages)
    first = packages[0]
    assert first.entry.md is not None and first.entry.md.from_ == START
    assert first.entry.md.until == at(3) == packages[1].entry.md.from_  # type: ignore[union-attr]
    for package in packages:
        key = package.entry.loc.removeprefix(destination.url)
        copy_key = package.entry.links[0].href.removeprefix(destination.url)
        with open_package(tmp_path / "published" / key, url=package.entry.loc) as opened:
            assert not has_errors(validate_document(opened.manifest))
            copy = read_document(destination.read_bytes(copy_key) or b"")
            assert copy.entries == opened.manifest.entries == package.manifest
            for entry in opened.manifest.entries:
                assert entry.md is not None
                if entry.change is Change.DELETED:
                    assert entry.md.path is None
                    continue
                body = (tree / entry.loc.removeprefix(SERVED)).read_bytes()
                with opened.open(entry.md.path) as member:
                    assert member.read() == body
                assert str(entry.md.hash) == f"sha-256:{hashlib.sha256(body).hexdigest()}"
        assert package.entry.md is not None and package.entry.md.length == (
            tmp_path / "published" / key).stat().st_size
    assert [entry.change for entry in first.manifest] == [
        Change.CREATED, Change.UPDATED, Change.DELETED]


def test_an_object_written_again_since_the_inventory_is_packaged_as_read_one_gone_left(
        tree: Path, tmp_path: Path) -> None:
    """Described by the bytes read, not by the inventory; what was read is reported, so the
    next run compares its inventory with what was published."""
    destination = LocalDestination(tmp_path / "published")
    changes = [inventoried(tree, number) for number in (1, 2, 3)]
    (tree / "docs" / "k2.txt").write_bytes(b"written again since the inventory\n")
    os.utime(tree / "docs" / "k2.txt", ns=(10**18, 10**18))
    (tree / "docs" / "k3.txt").unlink()
    (package,) = write_packages(cut(changes, PackageSize(), START, END), LocalBucket(tree),
                                destination, "dumps/", destination.object_url,
                                CAPABILITY_LIST, ("md5",))
    first, second = package.manifest
    assert first.loc == SERVED + "docs/k1.txt" and first.lastmod == changes[0].modified
    body = (tree / "docs" / "k2.txt").read_bytes()
    assert second.loc == SERVED + "docs/k2.txt" and second.md is not None
    assert (second.md.length, str(second.md.hash)) == (
        len(body), f"md5:{hashlib.md5(body).hexdigest()}")
    assert second.lastmod == datetime.fromtimestamp(10**9, UTC)
    info = (tree / "docs" / "k2.txt").stat()
    assert package.read == {"docs/k2.txt": (len(body), change_token(info))}
    assert package.left == [changes[2]]


def test_a_run_made_again_takes_the_packages_it_wrote_whole(tree: Path, tmp_path: Path) -> None:
    destination = LocalDestination(tmp_path / "published")
    changes = [inventoried(tree, number) for number in range(1, 5)]

    def run() -> list[str]:
        return [package.entry.loc for package in write_packages(
            cut(changes, PackageSize(entries=2), START, END), LocalBucket(tree), destination,
            "dumps/", destination.object_url, CAPABILITY_LIST, ("md5",))]

    urls = run()
    zips = sorted((tmp_path / "published" / "dumps").glob("*.zip"))
    written = {path: path.stat().st_mtime_ns for path in zips}
    copy = zips[1].with_name(zips[1].name.removesuffix(".zip") + "-manifest.xml")
    copy.unlink()  # killed between the second package and its copy
    os.utime(zips[1], ns=(1, 1))
    assert run() == urls
    assert zips[0].stat().st_mtime_ns == written[zips[0]]  # whole: taken as it is
    assert zips[1].stat().st_mtime_ns != 1 and copy.exists()  # written again, with its copy


@pytest.mark.parametrize("algorithms", [("sha1",), ("md5", "crc32"), (), "md5"])
def test_hashes_packages_cannot_compute_are_refused_naming_the_allowed(
        tmp_path: Path, algorithms: tuple[str, ...]) -> None:
    """An unknown algorithm gave every entry ``hash=""`` (issue 27); a plain string would be
    read as one algorithm a letter."""
    if isinstance(algorithms, str):
        assert checked_algorithms(algorithms) == ("md5",)
        return
    with pytest.raises(ConfigurationError, match="choose one or more of md5, sha-1, sha-256, "
                                                 "sha-512"):
        Publication(LocalDestination(tmp_path), base_url="https://h/", algorithms=algorithms)
