"""The shell's inventory factory: a publication never publishes itself, however ``publish_to``
is reached (issue 27: through a symbolic link, runs with nothing new published the
publication's own documents)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from airflow_provider_resourcesync.hooks.inventory import LIST, inventory_of
from airflow_provider_resourcesync.publish.inventory import Skipped
from airflow_provider_resourcesync.publish.run import Publication, publish
from airflow_provider_resourcesync.storage.local import LocalDestination
from tests.publish.test_publish_run import write

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def test_publish_to_through_a_link_into_the_source_is_left_out(tmp_path: Path) -> None:
    source = tmp_path / "collection"
    for name in ("a.txt", "b/c.txt"):
        write(source, name, name.encode())
    (source / "pub").mkdir()
    link = tmp_path / "publication"
    link.symlink_to(source / "pub")
    publication = Publication(LocalDestination(link), base_url="https://objects.example.org/")
    counts = []
    for day in range(3):
        listed = inventory_of(str(source), LIST, str(link), aws_conn_id=None,
                              skipped=Skipped())
        assert listed.excluded == "pub/"
        counts.append(publish(publication, listed.objects, T0 + timedelta(days=day),
                              listed.bucket).changes)
    assert counts == [2, 0, 0]
    assert (source / "pub" / "resourcelist.xml").is_file()
