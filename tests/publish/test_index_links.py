"""A publication's Change Lists and Change Dumps link to their indexes (spec 12.1, 13.1: a
recommended ``<rs:ln rel="index">``), so a follower holding one, fetched over HTTP, finds the
rest: by the link, and by discovery from it (6.2)."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_resourcesync.client.discover import discover
from airflow_provider_resourcesync.protocol.model import Capability
from airflow_provider_resourcesync.testing import SourceServer
from tests.publish.test_publish_run import Publishing, validate_all, write
from tests.sync.conftest import client_for

SERIES = {"changes": "changelist.xml", "changedumps": "changedump.xml"}


def test_a_follower_holding_one_change_list_or_change_dump_finds_its_index(
        tmp_path: Path) -> None:
    root, out = tmp_path / "bucket", tmp_path / "published"
    write(root, "a.txt", b"a\n")
    with SourceServer(max_lifetime=120) as web, client_for(web) as reader:
        publishing = Publishing(web, root, out)
        publishing.run()
        for number in range(3):
            write(root, f"n{number}.txt", f"{number}\n".encode())
            publishing.run()
        for folder, index in SERIES.items():
            index_url = web.url(f"/pub/{index}")
            listed = [entry.loc for entry in reader.read_document(index_url)]
            assert len(listed) == 3, folder
            for url in listed:
                held = reader.read_document(url)
                assert held.head.index == index_url, url
                assert held.head.up == publishing.capability_list, url
            found = discover(reader, listed[1])
            assert found.route == "document" and [
                (info.url, info.capabilities[Capability(index.removesuffix(".xml"))])
                for info in found.capability_lists] == [(publishing.capability_list, index_url)]
    validate_all(out)
