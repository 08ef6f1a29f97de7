"""The publication's URLs are checked (issue 27, item 7): a run fetches a few objects at
``base_url`` plus their keys over HTTP and compares them with the bucket's bytes, and the
Source Description at ``publish_url`` with the stored one, before it writes; ``base_url`` and
``publish_url`` are the publication's for life; ``publish_url`` is required off a local folder.
Objects served by a real :class:`SourceServer` (a :class:`ServedDirectory`), buckets by moto's
S3 server over HTTP."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.errors import ConfigurationError, PublishError
from airflow_provider_resourcesync.publish.bucket import LocalBucket, S3Bucket
from airflow_provider_resourcesync.publish.inventory import list_bucket, walk_directory
from airflow_provider_resourcesync.publish.run import Publication, Published, publish
from airflow_provider_resourcesync.publish.urls import UrlCheck
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.storage.s3 import S3Destination
from airflow_provider_resourcesync.testing import ServedDirectory, SourceServer

from .test_guards import stored
from .test_publish_run import write

PRIVATE = ClientPolicy(allow_private=True, max_tries=1)


def files(out: Path) -> dict[str, bytes | None]:
    """What the publication at ``out`` holds, our own records too."""
    return stored(LocalDestination(out))


class Served:
    """A directory at ``root`` (objects under ``plus/``), served under ``/bucket/``, published
    to ``out`` (served under ``/pub/`` after each run)."""

    def __init__(self, web: SourceServer, root: Path, out: Path) -> None:
        self.web, self.root, self.out = web, root, out
        for number in range(5):
            write(root, f"plus/{number}.txt", f"object {number}\n".encode())
        self.objects = ServedDirectory(web, root, "/bucket/")
        self.publication = ServedDirectory(web, out, "/pub/")
        self.objects.refresh()

    def run(self, base: str, *, publish_url: str | None = None, count: int = 3,
            when: datetime | None = None) -> Published:
        publication = Publication(LocalDestination(self.out), base_url=self.web.url(base),
                                  publish_url=self.web.url(publish_url or "/pub/"),
                                  url_check=UrlCheck(count, PRIVATE))
        try:
            return publish(publication, walk_directory(self.root), when or datetime.now(UTC),
                           LocalBucket(self.root))
        finally:
            self.publication.refresh()


def test_right_urls_are_fetched_and_compared_and_the_run_publishes(tmp_path: Path) -> None:
    with SourceServer(max_lifetime=120) as web:
        served = Served(web, tmp_path / "bucket", tmp_path / "out")
        old = datetime.now(UTC) - timedelta(days=3)
        for number in (3, 1, 4):  # the oldest three are the ones checked
            path = served.root / f"plus/{number}.txt"
            stamp = (old + timedelta(hours=number)).timestamp()
            os.utime(path, (stamp, stamp))
        assert served.run("/bucket/").changes == 5
        assert sorted(record.path for record in web.requests
                      if record.path.startswith("/bucket/")) == [
            "/bucket/plus/1.txt", "/bucket/plus/3.txt", "/bucket/plus/4.txt"]
        web.reset_log()
        write(served.root, "plus/0.txt", b"changed\n")
        served.objects.refresh()
        done = served.run("/bucket/", when=datetime.now(UTC) + timedelta(seconds=1))
        assert done.changes == 1
        assert web.count("/pub/description.xml") == 1  # publish_url checked, once it serves


@pytest.mark.parametrize("base, says", [
    ("/bucket/plus/", "the key starts with 'plus/' and the URL it is joined to ends with it"),
    ("/other/", "must be where the bucket's root is served"),
])
def test_a_base_url_not_serving_the_objects_fails_the_run_before_it_writes(
        tmp_path: Path, base: str, says: str) -> None:
    """The prefix doubled (``/bucket/plus/plus/0.txt``, 404) or another folder: the run fails
    naming the URL and the key, and writes nothing; with the right ``base_url`` it publishes."""
    with SourceServer(max_lifetime=120) as web:
        served = Served(web, tmp_path / "bucket", tmp_path / "out")
        with pytest.raises(PublishError) as caught:
            served.run(base)
        message = str(caught.value)
        assert web.url(base) + "plus/" in message and "answers HTTP 404" in message
        assert "the object 'plus/" in message and says in message
        assert files(served.out) == {}
        assert served.run("/bucket/").changes == 5


def test_a_url_serving_other_bytes_fails_the_run(tmp_path: Path) -> None:
    """Another bucket with the same keys (or a stale cache): the length or hash differs."""
    with SourceServer(max_lifetime=120) as web:
        served = Served(web, tmp_path / "bucket", tmp_path / "out")
        for number in range(5):
            web.put(f"/other/plus/{number}.txt", f"another {number}\n".encode())
        with pytest.raises(PublishError, match=r"serves other bytes than the object 'plus/"
                                               r".*its length is 10 .*, not 9"):
            served.run("/other/")
        assert files(served.out) == {}


def test_a_private_address_is_refused_unless_the_policy_allows_it(tmp_path: Path) -> None:
    root, out = tmp_path / "bucket", tmp_path / "out"
    write(root, "a.txt", b"a\n")
    with SourceServer(max_lifetime=120) as web:
        ServedDirectory(web, root, "/bucket/").refresh()
        publication = Publication(LocalDestination(out), base_url=web.url("/bucket/"),
                                  url_check=UrlCheck())
        with pytest.raises(PublishError, match="allow_private"):
            publish(publication, walk_directory(root), datetime.now(UTC), LocalBucket(root))
        assert web.count() == 0 and files(out) == {}


def test_a_changed_base_url_or_publish_url_is_refused_and_nothing_written(
        tmp_path: Path) -> None:
    """Changing either would mix old and new URLs, and never delete the old ones."""
    with SourceServer(max_lifetime=120) as web:
        served = Served(web, tmp_path / "bucket", tmp_path / "out")
        served.run("/bucket/")
        web.put("/copy/plus/0.txt", b"object 0\n")
        before = files(served.out)
        later = datetime.now(UTC) + timedelta(seconds=1)
        with pytest.raises(PublishError, match=r"base_url is '.*/copy/', but the publication "
                                               r"at .* was made with '.*/bucket/'"):
            served.run("/copy/", when=later)
        with pytest.raises(PublishError, match=r"publish_url is .*/elsewhere/'.*publish from "
                                               r"scratch to a new publish_to"):
            served.run("/bucket/", publish_url="/elsewhere/", when=later)
        assert files(served.out) == before
        write(served.root, "plus/new.txt", b"new\n")
        served.objects.refresh()
        assert served.run("/bucket/", when=later).changes == 1


def test_a_publish_url_not_serving_the_publication_fails_the_next_run(tmp_path: Path) -> None:
    with SourceServer(max_lifetime=120) as web:
        served = Served(web, tmp_path / "bucket", tmp_path / "out")
        served.run("/bucket/", publish_url="/pub/pub/")  # nothing to check yet
        before = files(served.out)
        with pytest.raises(PublishError, match=r"/pub/pub/description.xml \(publish_url plus "
                                               r"the key\) answers HTTP 404"):
            served.run("/bucket/", publish_url="/pub/pub/",
                       when=datetime.now(UTC) + timedelta(seconds=1))
        assert files(served.out) == before


def test_a_bucket_publication_needs_a_publish_url_and_checks_its_urls_on_moto(
        s3_client: Any, bucket: str) -> None:
    """``s3://`` links in public documents are refused; a bucket served by moto over HTTP
    is checked: its prefix doubled in ``base_url`` fails, the bucket's root publishes."""
    endpoint = s3_client.meta.endpoint_url
    for number in range(3):
        s3_client.put_object(Bucket=bucket, Key=f"plus/{number}.txt", Body=b"x" * number)
    destination = S3Destination(s3_client, bucket, "pub/")
    with pytest.raises(ConfigurationError, match=f"publish_url: none given for s3://{bucket}/"):
        Publication(destination, base_url=f"{endpoint}/{bucket}/")

    def run(base: str) -> Published:
        publication = Publication(destination, base_url=base,
                                  publish_url=f"{endpoint}/{bucket}/pub/",
                                  url_check=UrlCheck(3, PRIVATE))
        return publish(publication, list_bucket(s3_client, bucket, "plus/",
                                                exclude_prefix="pub/"),
                       datetime.now(UTC), S3Bucket(s3_client, bucket))

    s3_client.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
            "Resource": f"arn:aws:s3:::{bucket}/*"}]}))
    with pytest.raises(PublishError, match=f"{bucket}/plus/plus/1.txt .*answers HTTP 404"):
        run(f"{endpoint}/{bucket}/plus/")
    assert list(destination.keys("")) == []
    assert run(f"{endpoint}/{bucket}/").changes == 3
