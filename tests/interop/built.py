"""A Source as resync builds one: files on disk, described by ``resync-build`` (and, for the
Resource Dump document that ``resync-build`` does not write, by resync's own library), all
served by our loopback server under ``/src/``."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from airflow_provider_resourcesync.testing import SourceServer

from .resync import Resync

__all__ = ["ResyncBuiltSource"]

_PREFIX = "/src/"
_DUMP_DOCUMENT = """
import sys
from resync import Resource, ResourceDump
url, package, up, out = sys.argv[1:5]
import hashlib
data = open(package, "rb").read()
dump = ResourceDump(md={"at": "2026-03-01T00:00:00Z"}, ln=[{"rel": "up", "href": up}])
dump.add(Resource(uri=url, length=len(data), md5=hashlib.md5(data).hexdigest(),
                  mime_type="application/zip"))
open(out, "w", encoding="utf-8").write(dump.as_xml())
"""


class ResyncBuiltSource:
    """Files under ``work/files`` published at ``/src/<name>``; resync's documents of them
    built in ``work`` and served at ``/src/.rs/<document>``.

    :param spec_version: the ``--spec-version`` resync builds Change Lists for.
    """

    def __init__(self, resync: Resync, server: SourceServer, work: Path,
                 spec_version: str = "1.1") -> None:
        self.resync = resync
        self.server = server
        self.work = work
        self.files = work / "files"
        self.files.mkdir(parents=True)
        self.spec_version = spec_version
        self.base = server.url(_PREFIX)
        self.capability_list_url = self._document_url("capabilitylist.xml")
        self._served: set[str] = set()
        self._capabilities: dict[str, str] = {}

    # -- the files -------------------------------------------------------------------------------

    def write(self, name: str, body: bytes) -> None:
        path = self.files / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)

    def delete(self, name: str) -> None:
        (self.files / name).unlink()

    def uri(self, name: str) -> str:
        """The URI resync gives ``name`` (as it writes it: not percent-encoded)."""
        return self.base + name

    def state(self) -> dict[str, bytes]:
        """URI -> bytes of every file."""
        return {self.uri(path.relative_to(self.files).as_posix()): path.read_bytes()
                for path in sorted(self.files.rglob("*")) if path.is_file()}

    # -- resync's documents ----------------------------------------------------------------------

    def build_resource_list(self) -> Path:
        """``resync-build --write-resourcelist`` of the files, served; also what a later Change
        List is computed against."""
        return self._build("resourcelist", "resourcelist.xml", "--write-resourcelist",
                           "--hash", "md5", "--hash", "sha-256")

    def build_change_list(self, reference: Path) -> Path:
        """``resync-build --write-changelist`` of the files against ``reference`` (a Resource
        List built before), served."""
        return self._build("changelist", "changelist.xml", "--write-changelist",
                           "--reference", str(reference), "--hash", "md5",
                           "--spec-version", self.spec_version)

    def build_resource_dump(self) -> Path:
        """``resync-build --write-resourcedump`` of the files (one package), and a Resource
        Dump document listing it written with resync's library; both served."""
        self.resync.run("resync-build", "--write-resourcedump", "--outfile",
                        str(self.work / "dump"), self._mapping(), cwd=self.work)
        package = self.work / "dump00000.zip"
        self._serve(package, "dump00000.zip", "application/zip")
        document = self.work / "resourcedump.xml"
        self.resync.python_code(_DUMP_DOCUMENT, self._document_url("dump00000.zip"),
                                str(package), self.capability_list_url, str(document),
                                cwd=self.work)
        self._serve(document, "resourcedump.xml")
        self._capabilities["resourcedump"] = self._document_url("resourcedump.xml")
        self._build_capability_list()
        return package

    def publish_files(self) -> None:
        """Serve every file at its URI, and answer 404 for the ones deleted."""
        served = set()
        for uri, body in self.state().items():
            path = _PREFIX + quote(uri.removeprefix(self.base))
            self.server.put(path, body, "text/plain")
            served.add(path)
        for gone in self._served - served:
            self.server.remove(gone)
        self._served = served

    def _build(self, capability: str, name: str, *options: str) -> Path:
        out = self.work / f"{len(list(self.work.glob('*.xml'))):02d}-{name}"
        self.resync.run("resync-build", *options, "--capabilitylist-link",
                        self.capability_list_url, "--outfile", str(out), self._mapping(),
                        cwd=self.work)
        self._serve(out, name)
        self._capabilities[capability] = self._document_url(name)
        self._build_capability_list()
        return out

    def _build_capability_list(self) -> None:
        out = self.work / "capabilitylist.xml"
        capabilities = ",".join(f"{name}={url}" for name, url in self._capabilities.items())
        self.resync.run("resync-build", "--write-capabilitylist", capabilities,
                        "--outfile", str(out), cwd=self.work)
        self._serve(out, "capabilitylist.xml")

    def _mapping(self) -> str:
        return f"{self.base}={self.files}"

    def _document_url(self, name: str) -> str:
        return self.server.url(f"{_PREFIX}.rs/{name}")

    def _serve(self, path: Path, name: str, content_type: str = "application/xml") -> None:
        self.server.put(f"{_PREFIX}.rs/{name}", path.read_bytes(), content_type)
