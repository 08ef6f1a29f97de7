"""ZIP dump packages: written streamed, read back verified, hostile packages refused."""

from __future__ import annotations

import hashlib
import io
import stat
import struct
import zipfile
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from airflow_provider_resourcesync.errors import (
    ContentMismatchError,
    DocumentError,
    InvalidValueError,
    UnsafeContentError,
)
from airflow_provider_resourcesync.protocol.hashes import Digester, Hashes
from airflow_provider_resourcesync.protocol.model import (
    Change,
    Document,
    DocumentKind,
    Entry,
    Head,
    Link,
    Metadata,
)
from airflow_provider_resourcesync.protocol.package import (
    MANIFEST_NAME,
    PackageLimits,
    PackageWriter,
    open_package,
)
from airflow_provider_resourcesync.protocol.reader import read_document
from airflow_provider_resourcesync.protocol.validate import validate_document
from airflow_provider_resourcesync.protocol.writer import write_document
from tests.protocol.conftest import EXAMPLES, NS

UP = (Link(rel="up", href="http://example.com/dataset1/capabilitylist.xml"),)
T0 = datetime(2013, 1, 2, tzinfo=UTC)
RESOURCE_HEAD = Head(md=Metadata(capability="resourcedump-manifest", at=T0), links=UP)
CHANGE_HEAD = Head(md=Metadata(capability="changedump-manifest", from_=T0), links=UP)
RESOURCE_MANIFEST = (EXAMPLES / "ex18.xml").read_bytes()


def zip_bytes(members: Iterable[tuple[str | zipfile.ZipInfo, bytes]],
              compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A ZIP of the given members, built with zipfile as any producer would."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def ex18_package(*extra: tuple[str | zipfile.ZipInfo, bytes]) -> bytes:
    """Example 18's manifest with both of its bitstreams, plus ``extra`` members."""
    return zip_bytes([(MANIFEST_NAME, RESOURCE_MANIFEST), ("resources/res1", b"one"),
                      ("resources/res2", b"two"), *extra])


def patch_central(data: bytes, name: str, offset: int, fmt: str, value: int) -> bytes:
    """Overwrite one field of ``name``'s central directory record (APPNOTE 4.3.12)."""
    wanted = name.encode()
    record = data.index(b"PK\x01\x02")
    while data[record + 46:record + 46 + struct.unpack_from("<H", data, record + 28)[0]] != wanted:
        record = data.index(b"PK\x01\x02", record + 4)
    patched = bytearray(data)
    struct.pack_into(fmt, patched, record + offset, value)
    return bytes(patched)


def manifest(capability: str, body: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>\n'
        f'<rs:md capability="{capability}" at="2013-01-03T09:00:00Z" '
        f'from="2013-01-03T09:00:00Z"/>\n{body}\n</urlset>\n'
    ).encode()


class NonSeekable(io.RawIOBase):
    """A write-only pipe: no seek, no tell."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        raise io.UnsupportedOperation("tell")

    def seek(self, offset: int, whence: int = 0) -> int:
        raise io.UnsupportedOperation("seek")

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.chunks.append(bytes(data))
        return len(data)


def entry(loc: str, change: str | None = None, **md: object) -> Entry:
    return Entry(loc, md=Metadata(change=change, datetime=T0 if change else None, **md))


# -- round trips -----------------------------------------------------------------------------------


def test_resource_dump_round_trip() -> None:
    bitstreams = {
        "http://example.com/res1": b"<html>one</html>",
        "http://example.com/dir/res2.pdf": b"%PDF" + bytes(range(256)) * 40,
        "http://example.com/": b"home",
    }
    buffer = io.BytesIO()
    with PackageWriter(buffer, RESOURCE_HEAD) as writer:
        res1 = writer.add(entry("http://example.com/res1", type="text/html"),
                          bitstreams["http://example.com/res1"])
        pdf = bitstreams["http://example.com/dir/res2.pdf"]
        writer.add(entry("http://example.com/dir/res2.pdf"), (pdf[:100], pdf[100:]))
        writer.add(entry("http://example.com/"), io.BytesIO(bitstreams["http://example.com/"]))
    assert res1.md is not None
    assert res1.md.type == "text/html"
    assert res1.md.length == 16
    assert res1.md.hash is not None
    assert res1.md.hash.get("md5") == hashlib.md5(b"<html>one</html>").hexdigest()
    assert res1.md.hash.get("sha-256") == hashlib.sha256(b"<html>one</html>").hexdigest()

    with open_package(io.BytesIO(buffer.getvalue()), url="dump.zip") as package:
        assert package.kind is DocumentKind.RESOURCE_DUMP_MANIFEST
        assert package.manifest.head.up == UP[0].href
        read = [(e.loc, e.md.path if e.md else None, opener) for e, opener in package.entries()]
        assert [(loc, path) for loc, path, _ in read] == [
            ("http://example.com/res1", "/resources/example.com/res1"),
            ("http://example.com/dir/res2.pdf", "/resources/example.com/dir/res2.pdf"),
            ("http://example.com/", "/resources/example.com/index"),
        ]
        for e, _ in package.entries():
            assert b"".join(package.read_verified(e)) == bitstreams[e.loc]
        _, _, opener = read[0]
        assert opener is not None
        with opener() as stream:
            assert stream.read() == b"<html>one</html>"
        assert package.open("/resources/example.com/index").read() == b"home"
        assert validate_document(package.manifest) == []


def test_change_dump_round_trip_with_a_resource_changed_twice_and_a_delete() -> None:
    buffer = io.BytesIO()
    with PackageWriter(buffer, CHANGE_HEAD) as writer:
        writer.add(entry("http://example.com/res7.html", "created", type="text/html"), b"v1")
        writer.add(entry("http://example.com/res9.pdf", "updated"), b"pdf")
        gone = writer.add_deleted(entry("http://example.com/res5.tiff", "deleted"))
        writer.add(entry("http://example.com/res7.html", "updated"), [b"v", b"2"])
    assert gone.md is not None
    assert gone.md.path is None

    with open_package(io.BytesIO(buffer.getvalue())) as package:
        assert package.kind is DocumentKind.CHANGE_DUMP_MANIFEST
        listed = list(package.entries())
        assert [(e.loc, e.change, e.md.path if e.md else None) for e, _ in listed] == [
            ("http://example.com/res7.html", Change.CREATED, "/changes/example.com/res7.html"),
            ("http://example.com/res9.pdf", Change.UPDATED, "/changes/example.com/res9.pdf"),
            ("http://example.com/res5.tiff", Change.DELETED, None),
            ("http://example.com/res7.html", Change.UPDATED,
             "/changes/example.com/res7-v2.html"),
        ]
        assert listed[2][1] is None
        contents = [b"".join(package.read_verified(e)) for e, opener in listed if opener]
        assert contents == [b"v1", b"pdf", b"v2"]
        assert validate_document(package.manifest) == []
        with pytest.raises(DocumentError, match="deleted change has no bitstream"):
            list(package.read_verified(listed[2][0]))
        names = [info.filename for info in zipfile.ZipFile(buffer).infolist()]
        assert names[-1] == MANIFEST_NAME


def test_writing_to_a_non_seekable_stream() -> None:
    pipe = NonSeekable()
    with PackageWriter(pipe, RESOURCE_HEAD) as writer:
        writer.add(entry("http://example.com/a"), b"alpha" * 1000)
        writer.add(entry("http://example.com/b", length=4), b"beta")
    data = b"".join(pipe.chunks)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.testzip() is None
        assert all(info.flag_bits & 0x08 for info in archive.infolist())  # data descriptors
    with open_package(io.BytesIO(data)) as package:
        assert [b"".join(package.read_verified(e)) for e, _ in package.entries()] == [
            b"alpha" * 1000, b"beta"]


def test_written_packages_are_reproducible() -> None:
    def write() -> bytes:
        buffer = io.BytesIO()
        with PackageWriter(buffer, CHANGE_HEAD) as writer:
            writer.add(entry("http://example.com/x", "created"), b"x")
        return buffer.getvalue()

    assert write() == write()
    bitstream, manifest_member = zipfile.ZipFile(io.BytesIO(write())).infolist()
    assert bitstream.date_time == manifest_member.date_time == (1980, 1, 1, 0, 0, 0)
    assert bitstream.compress_type == zipfile.ZIP_STORED
    assert manifest_member.filename == "manifest.xml"
    assert manifest_member.compress_type == zipfile.ZIP_DEFLATED


def test_what_we_write_our_reader_accepts_even_highly_compressible_content() -> None:
    zeros = bytes(4 * 1024 * 1024)  # deflated, this would exceed the default ratio cap
    buffer = io.BytesIO()
    with PackageWriter(buffer, RESOURCE_HEAD) as writer:
        writer.add(entry("http://example.com/zeros"), zeros)
    with open_package(io.BytesIO(buffer.getvalue())) as package:
        [(recorded, _)] = package.entries()
        assert b"".join(package.read_verified(recorded)) == zeros


@pytest.mark.parametrize(("locs", "paths"), [
    (["http://example.com/a/../b"], ["/resources/example.com/a/__/b"]),
    (["http://u:pw@Example.COM:8080/x y/%2e%2e/z?q=1"], ["/resources/example.com_8080/x_y/__/z"]),
    (["http://example.com/a%2Fb/./c"], ["/resources/example.com/a_b/_/c"]),
    (["urn:isbn:123"], ["/resources/_/isbn_123"]),
    (["http://example.com/a b", "http://example.com/a_b"],
     ["/resources/example.com/a_b", "/resources/example.com/a_b-v2"]),
    (["http://example.com/R.txt", "http://example.com/r.txt", "http://example.com/r.txt"],
     ["/resources/example.com/R.txt", "/resources/example.com/r-v2.txt",
      "/resources/example.com/r-v3.txt"]),
    (["http://example.com/.htaccess"], ["/resources/example.com/.htaccess"]),
    (["https://Example.ORG:8443/d01/o-1_a.b"], ["/resources/example.org_8443/d01/o-1_a.b"]),
    ([f"https://example.com/{'a' * 100}/{'b' * 101}"],
     [f"/resources/example.com/{'a' * 100}/{'b' * 100}"]),
    (["https://example.com", "https://example.com/d/", "https://example.com/d//e/..."],
     ["/resources/example.com/index", "/resources/example.com/d/index",
      "/resources/example.com/d/e/___"]),
    (["https://example.com/a#f", "https://example.com/a?q"],
     ["/resources/example.com/a", "/resources/example.com/a-v2"]),
])
def test_paths_are_safe_and_unique(locs: list[str], paths: list[str]) -> None:
    buffer = io.BytesIO()
    with PackageWriter(buffer, RESOURCE_HEAD) as writer:
        written = [writer.add(entry(loc), b"data") for loc in locs]
    assert [e.md.path if e.md else None for e in written] == paths
    open_package(io.BytesIO(buffer.getvalue())).close()


def test_a_manifest_lists_each_entry_as_the_document_writer_writes_it() -> None:
    """An entry's line is made before its bitstream is written and finished after (its hash,
    length and path): the same bytes as a Change Dump Manifest written whole."""
    namespaced = {"{http://example.org/ns}a": 'x&"y', "{http://example.net/other}b": "1"}
    entries = [
        Entry("http://example.com/a?x=1&y=2", lastmod=T0, changefreq="daily",
              md=Metadata(change="created", datetime=T0, type="text/plain", encoding="gzip",
                          extra=namespaced),
              links=(Link(rel="duplicate", href="http://mirror.example.com/a", pri=1),),
              extra=('<ex:note xmlns:ex="http://example.org/ns">n</ex:note>',)),
        Entry("http://example.com/b", md=Metadata(change="updated",
                                                  datetime=T0 + timedelta(microseconds=5),
                                                  length=4, hash=_md5(b"data"))),
        Entry("http://example.com/c", md=Metadata(change="deleted", datetime=T0 + timedelta(1))),
    ]
    head = Head(md=CHANGE_HEAD.md, links=UP, namespaces={"ex": "http://example.org/ns"})
    buffer = io.BytesIO()
    with PackageWriter(buffer, head, ("md5", "sha-256")) as writer:
        recorded = [writer.add(item, b"data") if item.change is not Change.DELETED
                    else writer.add_deleted(item) for item in entries]
    whole = io.BytesIO()
    write_document(Document(head, recorded), whole)
    assert writer.manifest_bytes == whole.getvalue()
    assert read_document(writer.manifest_bytes).entries == recorded


def test_writer_checks_what_it_is_given() -> None:
    with pytest.raises(DocumentError, match="not capability 'resourcelist'"):
        PackageWriter(io.BytesIO(), Head(md=Metadata(capability="resourcelist")))
    writer = PackageWriter(io.BytesIO(), RESOURCE_HEAD)
    with pytest.raises(DocumentError, match="only a Change Dump Manifest lists deletes"):
        writer.add_deleted(entry("http://example.com/gone", "deleted"))
    with pytest.raises(ContentMismatchError, match=r"http://example.com/x : length mismatch"):
        writer.add(entry("http://example.com/x", length=3), b"four")
    with pytest.raises(ContentMismatchError, match="md5 hash mismatch"):
        writer.add(entry("http://example.com/y", hash=_md5(b"other")), b"data")
    changes = PackageWriter(io.BytesIO(), CHANGE_HEAD)
    with pytest.raises(DocumentError, match="add deletes with add_deleted"):
        changes.add(entry("http://example.com/gone", "deleted"), b"")
    changes.close()
    with pytest.raises(DocumentError, match="already closed"):
        changes.add(entry("http://example.com/late", "created"), b"")


def test_a_change_dump_refuses_a_change_out_of_order_before_writing_it() -> None:
    buffer = io.BytesIO()
    with PackageWriter(buffer, CHANGE_HEAD) as writer:
        writer.add(change("http://example.com/b", 2), b"b")
        with pytest.raises(InvalidValueError, match=r"^http://example.com/a : 2013-01-02T01:00:00Z "
                           r"is earlier than the previous entry's 2013-01-02T02:00:00Z"):
            writer.add(change("http://example.com/a", 1), b"a")
        with pytest.raises(InvalidValueError, match=r"^http://example.com/gone : .* is earlier"):
            writer.add_deleted(change("http://example.com/gone", 0, "deleted"))
        with pytest.raises(InvalidValueError, match=r"^the entry for http://example\.com/naive : "):
            writer.add(Entry("http://example.com/naive", md=Metadata(
                change="created", datetime=datetime(2013, 1, 3))), b"n")  # no time zone
        writer.add(change("http://example.com/c", 2), b"c")  # equal times are in order
    with open_package(io.BytesIO(buffer.getvalue())) as package:
        assert [e.loc for e in package.manifest] == ["http://example.com/b",
                                                     "http://example.com/c"]
        assert validate_document(package.manifest) == []
    assert len(zipfile.ZipFile(buffer).infolist()) == 3  # two bitstreams and the manifest


def change(loc: str, hours: int, kind: str = "updated") -> Entry:
    return Entry(loc, md=Metadata(change=kind, datetime=T0 + timedelta(hours=hours)))


def _md5(data: bytes) -> Hashes:
    return Hashes.of(md5=hashlib.md5(data).hexdigest())


# -- the spec's manifests --------------------------------------------------------------------------


@pytest.mark.parametrize(("example", "kind"), [
    ("ex05", DocumentKind.RESOURCE_DUMP_MANIFEST),
    ("ex18", DocumentKind.RESOURCE_DUMP_MANIFEST),
    ("ex23", DocumentKind.CHANGE_DUMP_MANIFEST),
])
def test_spec_manifests_open(example: str, kind: DocumentKind, tmp_path: Path) -> None:
    text = (EXAMPLES / f"{example}.xml").read_bytes()
    paths = [e.md.path for e in read_document(text) if e.md and e.md.path]
    members = [(path[1:], path.encode()) for path in paths]
    package_file = tmp_path / "package.zip"
    package_file.write_bytes(zip_bytes([(MANIFEST_NAME, text), *members]))
    with open_package(package_file, url=str(package_file)) as package:
        assert package.kind is kind
        served = {e.md.path: opener().read() for e, opener in package.entries()
                  if opener and e.md and e.md.path}
        assert served == {path: path.encode() for path in paths}
        deleted = [e.loc for e, opener in package.entries() if opener is None]
        assert deleted == (["http://example.com/res5.tiff"] if example == "ex23" else [])


def test_a_missing_manifest_path_is_refused_naming_it() -> None:
    data = zip_bytes([(MANIFEST_NAME, RESOURCE_MANIFEST), ("resources/res1", b"one")])
    with pytest.raises(DocumentError, match=r"dump.zip!/manifest.xml line 17 : path "
                       r"'/resources/res2' names no file in the package \(spec section 11.2\)"):
        open_package(io.BytesIO(data), url="dump.zip")


@pytest.mark.parametrize(("body", "problem"), [
    ("<url><loc>http://e.com/a</loc><rs:md length='1'/></url>", "has no <rs:md path>"),
    ("<url><loc>http://e.com/a</loc></url>", "has no <rs:md path>"),
    ("<url><loc>http://e.com/a</loc><rs:md path='x/../a'/></url>", "has a '..' segment"),
    ("<url><loc>http://e.com/a</loc><rs:md path='../a'/></url>", "has a '..' segment"),
    ("<url><loc>http://e.com/a</loc><rs:md path='/x/../a'/></url>", "has a '..' segment"),
    ("<url><loc>http://e.com/a</loc><rs:md path='//a'/></url>", "is an absolute path"),
    ("<url><loc>http://e.com/a</loc><rs:md path='/d'/></url>", "names no file"),
])
def test_bad_manifest_paths_are_refused(body: str, problem: str) -> None:
    data = zip_bytes([(MANIFEST_NAME, manifest("resourcedump-manifest", body)), ("a", b"a"),
                      ("d/", b"")])
    with pytest.raises(DocumentError, match=problem) as caught:
        open_package(io.BytesIO(data))
    assert caught.value.line == 4
    assert caught.value.section == "11.2"


def test_a_path_without_its_leading_slash_is_read_from_the_root_and_warned_of() -> None:
    """resync 2.0.1 writes ``path="a"``; 11.2 asks for ``/a``, which names the same member."""
    body = ("<url><loc>http://e.com/a</loc><rs:md path='a'/></url>"
            "<url><loc>http://e.com/b</loc><rs:md path='d/b'/></url>"
            "<url><loc>http://e.com/c</loc><rs:md path='/c'/></url>")
    data = zip_bytes([(MANIFEST_NAME, manifest("resourcedump-manifest", body)), ("a", b"A"),
                      ("d/b", b"B"), ("c", b"C")])
    with open_package(io.BytesIO(data)) as package:
        assert [opener().read() for _, opener in package.entries() if opener] == [b"A", b"B", b"C"]
        assert package.warnings == ("2 of its manifest paths lack the leading '/' that spec "
                                    "section 11.2 asks for: each was read from the package's root",)


def test_a_deleted_change_may_have_a_path_but_serves_no_bitstream() -> None:
    body = ("<url><loc>http://e.com/a</loc><rs:md change='deleted' path='/gone'/></url>"
            "<url><loc>http://e.com/b</loc><rs:md change='created' path='/b'/></url>")
    data = zip_bytes([(MANIFEST_NAME, manifest("changedump-manifest", body)), ("b", b"b")])
    with open_package(io.BytesIO(data)) as package:
        assert [opener is None for _, opener in package.entries()] == [True, False]


def test_a_change_without_path_is_refused_unless_deleted() -> None:
    body = "<url><loc>http://e.com/a</loc><rs:md change='updated'/></url>"
    data = zip_bytes([(MANIFEST_NAME, manifest("changedump-manifest", body))])
    with pytest.raises(DocumentError, match=r"has no <rs:md path>.*\(spec section 13.2\)"):
        open_package(io.BytesIO(data))


# -- hostile and broken packages -------------------------------------------------------------------


def symlink(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def fifo(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFIFO | 0o644) << 16
    return info


@pytest.mark.parametrize(("member", "problem"), [
    ("../evil", "has a '..' segment"),
    ("/etc/passwd", "is an absolute path"),
    ("a/../../b", "has a '..' segment"),
    ("dir\\evil", "contains a backslash"),
    ("\\evil", "is an absolute path"),
    ("C:/evil", "is an absolute path"),
    ("a//b", "has a '' segment"),
    (symlink("resources/link"), "is a symbolic link"),
    (fifo("resources/pipe"), "is not a regular file"),
])
def test_unsafe_members_are_refused(member: str | zipfile.ZipInfo, problem: str) -> None:
    name = member.filename if isinstance(member, zipfile.ZipInfo) else member
    with pytest.raises(UnsafeContentError, match=problem) as caught:
        open_package(io.BytesIO(ex18_package((member, b"x"))), url="evil.zip")
    assert str(caught.value).startswith(f"evil.zip : member {name!r}")


def test_a_nul_in_a_member_name_is_refused() -> None:
    data = ex18_package(("aXb", b"x")).replace(b"aXb", b"a\x00b")
    with pytest.raises(UnsafeContentError, match="contains a NUL character"):
        open_package(io.BytesIO(data))


def test_an_encrypted_member_is_refused() -> None:
    data = patch_central(ex18_package(), "resources/res2", 8, "<H", 0x1)
    with pytest.raises(UnsafeContentError, match="'resources/res2' is encrypted"):
        open_package(io.BytesIO(data))


def test_a_duplicate_member_is_refused() -> None:
    with pytest.warns(UserWarning, match="Duplicate name"):
        data = ex18_package(("resources/res1", b"other"))
    with pytest.raises(UnsafeContentError, match="'resources/res1' appears twice"):
        open_package(io.BytesIO(data))


def test_an_unsupported_compression_method_is_refused() -> None:
    data = zip_bytes([(MANIFEST_NAME, RESOURCE_MANIFEST), ("resources/res1", b"one"),
                      ("resources/res2", b"two")], compression=zipfile.ZIP_BZIP2)
    with pytest.raises(UnsafeContentError, match="uses compression method 12"):
        open_package(io.BytesIO(data))


@pytest.mark.parametrize(("limits", "rule"), [
    (PackageLimits(max_members=3), "member count cap"),
    (PackageLimits(max_total_size=1000), "total size cap"),
    (PackageLimits(max_member_size=100), "member size cap"),
])
def test_caps_are_checked_on_the_central_directory(limits: PackageLimits, rule: str) -> None:
    data = ex18_package(("resources/big", b"b" * 500), ("resources/more", b"m" * 500))
    with pytest.raises(UnsafeContentError, match=rule):
        open_package(io.BytesIO(data), limits=limits)
    open_package(io.BytesIO(data)).close()


def test_a_compression_bomb_is_refused() -> None:
    data = ex18_package(("resources/zeros", bytes(2 * 1024 * 1024)))
    with pytest.raises(UnsafeContentError, match="'resources/zeros' inflates .* to 2097152, a "
                       r"ratio above 100 \[refused by rule: compression ratio cap\]"):
        open_package(io.BytesIO(data))
    open_package(io.BytesIO(data), limits=PackageLimits(max_ratio=10_000)).close()


def test_a_member_inflating_beyond_its_declared_size_fails_its_crc_while_read() -> None:
    # zipfile stops at the declared 10 bytes; their CRC is not the whole member's.
    data = patch_central(ex18_package(("resources/res3", b"x" * 1000)), "resources/res3",
                         24, "<I", 10)
    with open_package(io.BytesIO(data)) as package:
        stream = package.open("/resources/res3")
        with pytest.raises(UnsafeContentError, match="'resources/res3' is corrupt: Bad CRC-32"
                           ) as caught:
            stream.read()
    assert caught.value.rule == "ZIP members match their central directory"


def test_a_member_shorter_than_declared_is_refused_while_read() -> None:
    data = patch_central(ex18_package(("resources/res3", b"x" * 1000)), "resources/res3",
                         24, "<I", 2000)
    with open_package(io.BytesIO(data)) as package:
        stream = package.open("/resources/res3")
        with pytest.raises(UnsafeContentError, match="ends at 1000 of its declared 2000 bytes"):
            stream.read()


def test_a_manifest_longer_than_one_document_may_be_is_refused_without_reading_it_all() -> None:
    # 400,000 deletes make a 25 MB manifest in a 1 MB ZIP; its end is not even well-formed, so
    # reading it whole would fail otherwise.
    entries = "".join(f'<url><loc>http://a/{n}</loc><rs:md change="deleted"/></url>\n'
                      for n in range(400_000))
    text = manifest("changedump-manifest", entries).replace(b"</urlset>", b"<broken")
    data = zip_bytes([(MANIFEST_NAME, text)])
    assert len(data) < 2 * 1024 * 1024
    with pytest.raises(UnsafeContentError, match=r"^big.zip!/manifest.xml line 50004 : more than "
                       r"50000 entries in the manifest \[refused by rule: manifest entry cap\]"):
        open_package(io.BytesIO(data), url="big.zip")
    with pytest.raises(UnsafeContentError, match="more than 3 entries"):
        open_package(io.BytesIO(data), limits=PackageLimits(max_manifest_entries=3))


def test_a_package_without_manifest_is_refused() -> None:
    data = zip_bytes([("dump/manifest.xml", RESOURCE_MANIFEST), ("resources/res1", b"one")])
    with pytest.raises(DocumentError, match=r"dump.zip : no manifest.xml at the top level"):
        open_package(io.BytesIO(data), url="dump.zip")


def test_a_manifest_of_another_kind_is_refused() -> None:
    data = zip_bytes([(MANIFEST_NAME, (EXAMPLES / "ex01.xml").read_bytes())])
    with pytest.raises(DocumentError, match=r"dump.zip!/manifest.xml : manifest.xml is not a "
                       r"Resource Dump Manifest .*capability 'resourceList' on <urlset>"):
        open_package(io.BytesIO(data), url="dump.zip")


def test_a_manifest_that_is_not_xml_is_refused() -> None:
    data = zip_bytes([(MANIFEST_NAME, b"PK not xml")])
    with pytest.raises(DocumentError, match=r"dump.zip!/manifest.xml"):
        open_package(io.BytesIO(data), url="dump.zip")


def test_what_is_not_a_seekable_zip_is_refused() -> None:
    with pytest.raises(DocumentError, match="not a readable ZIP file"):
        open_package(io.BytesIO(b"<urlset/>"), url="dump.zip")
    with pytest.raises(DocumentError, match="seekable file"):
        open_package(NonSeekable())


# -- verification ----------------------------------------------------------------------------------


def test_read_verified_checks_with_the_digester_it_is_given() -> None:
    """A caller that keeps digests of its own (the mirror keeps sha-256) passes its digester:
    the bytes are digested once, and checked by what it computes."""
    with open_package(io.BytesIO(ex18_package())) as package:
        res1 = package.manifest.entries[0]
        res1.md.length = None  # type: ignore[union-attr]
        with pytest.raises(ContentMismatchError, match="md5 hash mismatch"):
            list(package.read_verified(res1, digester=Digester(("sha-256", "md5"))))
        digester = Digester(("sha-256",))  # no md5: the listed one (wrong here) is not checked
        body = b"".join(package.read_verified(res1, digester=digester))
        assert digester.hexdigest("sha-256") == hashlib.sha256(body).hexdigest()
        assert digester.length == len(body) > 0


def test_read_verified_detects_a_hash_mismatch() -> None:
    with open_package(io.BytesIO(ex18_package())) as package:
        res1 = package.manifest.entries[0]
        with pytest.raises(ContentMismatchError, match=r"^http://example.com/res1 : length"):
            list(package.read_verified(res1))
        res1.md.length = None  # type: ignore[union-attr]
        with pytest.raises(ContentMismatchError, match=r"^http://example.com/res1 : md5 hash "
                           r"mismatch: expected 1584abdf8ebdc9802ac0c6a7402c03b6"):
            list(package.read_verified(res1))


def test_a_package_left_by_an_error_is_ended_without_a_manifest_while_its_stream_is_open() -> None:
    """An error leaves the package unfinished: no manifest.xml, so no reader takes it for a dump
    package (11.2). Its ZIP was ended only when collected, by then writing to a closed stream
    (an unraisable ValueError in the suite's warnings); it is ended as the block is left."""
    buffer = io.BytesIO()
    with pytest.raises(RuntimeError, match="the Source went away"), \
            PackageWriter(buffer, RESOURCE_HEAD) as writer:
        writer.add(entry("http://example.com/res1"), b"one")
        raise RuntimeError("the Source went away")
    ended = buffer.getvalue()
    buffer.close()  # a collected writer now writes nothing more
    assert zipfile.ZipFile(io.BytesIO(ended)).namelist() == ["resources/example.com/res1"]
    with pytest.raises(DocumentError, match="manifest"):
        open_package(io.BytesIO(ended), url="dump.zip")
