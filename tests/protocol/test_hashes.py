"""The hash attribute (spec section 7) and digests computed while streaming."""

from __future__ import annotations

import hashlib
import io
import multiprocessing
import random
import threading
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from airflow_provider_resourcesync.errors import ContentMismatchError
from airflow_provider_resourcesync.protocol.hashes import (
    OVERLAP_AFTER,
    Digester,
    DigestingWriter,
    Hashes,
    HashValue,
    stored_digests,
)

DATA = b"The quick brown fox jumps over the lazy dog" * 1000


def test_multi_algorithm_attribute_is_whitespace_delimited() -> None:
    hashes = Hashes.parse("md5:1e0d5cb8ef6ba40c99b14c0237be735e\n      sha-256:854f6129")
    assert hashes.get("md5") == "1e0d5cb8ef6ba40c99b14c0237be735e"
    assert hashes.get("sha-256") == "854f6129"
    assert hashes.get("sha-1") is None
    assert str(hashes) == "md5:1e0d5cb8ef6ba40c99b14c0237be735e sha-256:854f6129"
    assert hashes.problems == []


def test_non_hex_values_are_kept_and_flagged() -> None:
    # Example 27 of the spec.
    hashes = Hashes.parse("sha-256:f40xZX_x_DFGFDgghgdfb6rtSx-iosjF6735432nklj")
    assert hashes.get("sha-256") == "f40xZX_x_DFGFDgghgdfb6rtSx-iosjF6735432nklj"
    assert str(hashes) == "sha-256:f40xZX_x_DFGFDgghgdfb6rtSx-iosjF6735432nklj"
    assert hashes.problems == [
        "sha-256:f40xZX_x_DFGFDgghgdfb6rtSx-iosjF6735432nklj is not a hex-encoded digest"]


def test_token_without_algorithm_is_kept_and_flagged() -> None:
    hashes = Hashes.parse("1584abdf")
    assert hashes.values == (HashValue("", "1584abdf"),)
    assert str(hashes) == "1584abdf"
    assert "no 'algorithm:' prefix" in hashes.problems[0]


def test_algorithm_names_are_case_insensitive() -> None:
    assert Hashes.parse("MD5:abc").get("md5") == "abc"


def test_digester_computes_all_three_while_streaming() -> None:
    digester = Digester()
    for start in range(0, len(DATA), 4096):
        digester.update(DATA[start:start + 4096])
    assert digester.length == len(DATA)
    assert digester.hexdigest("md5") == hashlib.md5(DATA).hexdigest()
    assert digester.hexdigest("sha-1") == hashlib.sha1(DATA).hexdigest()
    assert digester.hexdigest("sha-256") == hashlib.sha256(DATA).hexdigest()
    assert str(digester.hashes()).startswith("md5:")


def test_verify_accepts_matching_content_in_any_hex_case() -> None:
    expected = Hashes.parse(f"md5:{hashlib.md5(DATA).hexdigest().upper()} "
                            f"sha-256:{hashlib.sha256(DATA).hexdigest()}")
    digester = Digester.for_expected(expected)
    digester.update(DATA)
    assert digester.verify("http://example.com/a", hashes=expected, length=len(DATA))


def test_verify_names_url_expected_and_actual() -> None:
    expected = Hashes.parse("md5:" + "0" * 32)
    digester = Digester.for_expected(expected)
    digester.update(DATA)
    with pytest.raises(ContentMismatchError) as caught:
        digester.verify("http://example.com/a", hashes=expected)
    message = str(caught.value)
    assert "http://example.com/a" in message
    assert "0" * 32 in message
    assert hashlib.md5(DATA).hexdigest() in message


def test_verify_checks_length() -> None:
    digester = Digester(())
    digester.update(DATA)
    with pytest.raises(ContentMismatchError, match="length mismatch"):
        digester.verify("http://example.com/a", length=len(DATA) + 1)


def test_non_hex_expected_value_never_matches() -> None:
    expected = Hashes.parse("sha-256:f40xZX_x")
    digester = Digester.for_expected(expected)
    digester.update(DATA)
    with pytest.raises(ContentMismatchError, match="sha-256 hash mismatch"):
        digester.verify("http://example.com/a", hashes=expected)


def test_unknown_algorithms_are_not_computed_or_compared() -> None:
    expected = Hashes.parse("crc32:deadbeef")
    digester = Digester.for_expected(expected)
    digester.update(DATA)
    assert digester.hashes() == Hashes(())
    assert not digester.verify("http://example.com/a", hashes=expected)


def test_sha_512_is_computed_when_expected() -> None:
    expected = Hashes.parse(f"sha-512:{hashlib.sha512(DATA).hexdigest()}")
    digester = Digester.for_expected(expected)
    digester.update(DATA)
    assert digester.verify("http://example.com/a", hashes=expected)


def test_the_strongest_listed_algorithm_is_the_one_verified() -> None:
    """Section 7 lets one attribute carry several digests of the same bytes: the strongest we
    can compute proves them, whatever else is listed (or written wrong) beside it."""
    md5, sha256 = hashlib.md5(DATA).hexdigest(), hashlib.sha256(DATA).hexdigest()
    assert Hashes.parse(f"md5:{md5} sha-256:{sha256}").strongest() == ("sha-256",)
    assert Hashes.parse(f"crc32:00 sha-1:ab MD5:{md5}").strongest() == ("sha-1",)
    assert Hashes.parse("crc32:00").strongest() == ()
    assert stored_digests(Hashes.parse(f"md5:{md5}")) == ("sha-256", "md5")
    assert stored_digests(Hashes.parse(f"sha-256:{sha256} md5:{md5}")) == ("sha-256",)
    assert stored_digests(None) == ("sha-256",)
    wrong_md5 = Hashes.parse(f"md5:{'0' * 32} sha-256:{sha256}")
    digester = Digester.for_expected(wrong_md5)
    digester.update(DATA)
    assert digester.verify("http://example.com/a", hashes=wrong_md5)
    wrong_sha = Hashes.parse(f"md5:{md5} sha-256:{'0' * 64}")
    digester = Digester.for_expected(wrong_sha)
    digester.update(DATA)
    with pytest.raises(ContentMismatchError, match="sha-256 hash mismatch"):
        digester.verify("http://example.com/a", hashes=wrong_sha)


def test_a_digesting_writer_passes_every_byte_on_and_digests_it() -> None:
    target = io.BytesIO()
    writer = DigestingWriter(target, ("md5", "sha-256"))
    writer.write(b"first ")
    writer.writelines([b"second ", b"third"])
    assert target.getvalue() == b"first second third"
    assert writer.digester.length == len(b"first second third")
    assert writer.digester.hexdigest("sha-256") == hashlib.sha256(b"first second third").hexdigest()


# -- large streams: digests on helper threads, overlapping the caller's work -----------------------


def _helper_cpu_ticks() -> int:
    """CPU time (clock ticks) the digest helper threads have used so far."""
    ticks = 0
    for thread in threading.enumerate():
        if thread.name.startswith("resourcesync-digest") and thread.native_id is not None:
            try:
                stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
            except FileNotFoundError:  # the thread ended
                continue
            fields = stat.rpartition(")")[2].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks


def _digested_on_helpers(megabytes: int) -> bool:
    """Whether a stream of ``megabytes`` MiB in 64 KiB chunks was digested (rightly) on the
    helper threads rather than the caller's."""
    block = random.Random(5).randbytes(64 * 1024)
    chunks = [bytes([number % 256]) + block[1:] for number in range(16 * megabytes)]
    before = _helper_cpu_ticks()
    digester = Digester(("md5", "sha-256"))
    md5, sha256 = hashlib.md5(), hashlib.sha256()
    for chunk in chunks:
        digester.update(chunk)
        md5.update(chunk)
        sha256.update(chunk)
    assert digester.length == len(chunks) * len(block)
    assert digester.hexdigest("md5") == md5.hexdigest()
    assert digester.hexdigest("sha-256") == sha256.hexdigest()
    return _helper_cpu_ticks() > before


def test_a_large_stream_is_digested_on_helper_threads() -> None:
    """Past OVERLAP_AFTER the digests leave the caller's thread, so a large resource's
    receiving and writing overlap its hashing on another core."""
    assert _digested_on_helpers(128)


def test_a_stream_abandoned_half_way_frees_the_helpers() -> None:
    """A failed try drops its digester mid-stream; the next large stream still gets the
    helpers."""
    for _ in range(4):
        Digester(("md5", "sha-256")).update(bytes(3 * OVERLAP_AFTER))
    assert _digested_on_helpers(64)


def test_a_stream_in_one_algorithm_is_digested_on_the_caller_s_thread() -> None:
    """Handing one digest over would only add waits for the interpreter's lock: no helper
    works beside another (docs/design.md, "Large resources")."""
    before = _helper_cpu_ticks()
    digester = Digester(("sha-256",))
    for _ in range(64):
        digester.update(bytes(OVERLAP_AFTER))
    assert digester.hexdigest("sha-256") == hashlib.sha256(bytes(64 * OVERLAP_AFTER)).hexdigest()
    assert _helper_cpu_ticks() == before


def test_a_reused_buffer_is_digested_as_it_was_when_passed() -> None:
    """A caller may refill its buffer as soon as update returns (shutil's copy loops do)."""
    digester = Digester(("md5", "sha-256"))
    expected = hashlib.md5()
    buffer = bytearray(256 * 1024)
    for number in range(3 * OVERLAP_AFTER // len(buffer)):
        buffer[:] = bytes([number % 256]) * len(buffer)
        digester.update(buffer)
        expected.update(buffer)
    assert digester.hexdigest("md5") == expected.hexdigest()


def _digest_in_child(pipe: Connection) -> None:
    digester = Digester(("md5", "sha-256"))
    for _ in range(4):
        digester.update(bytes(OVERLAP_AFTER))
    pipe.send(digester.hexdigest("sha-256"))


def test_a_forked_child_digests_large_streams() -> None:
    """A child forked after the helpers started (the parent's threads are not in it) starts
    its own instead of waiting for ever."""
    Digester(("md5", "sha-256")).update(bytes(2 * OVERLAP_AFTER))  # helpers run in this process
    ours, theirs = multiprocessing.Pipe()
    child = multiprocessing.get_context("fork").Process(target=_digest_in_child, args=(theirs,))
    child.start()
    try:
        assert ours.poll(60), "the child did not finish digesting"
        assert ours.recv() == hashlib.sha256(bytes(4 * OVERLAP_AFTER)).hexdigest()
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()
            child.join()
