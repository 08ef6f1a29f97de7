"""The hash attribute (spec section 7) and digests computed while streaming."""

from __future__ import annotations

import hashlib
import io

import pytest

from airflow_provider_resourcesync.errors import ContentMismatchError
from airflow_provider_resourcesync.protocol.hashes import (
    Digester,
    DigestingWriter,
    Hashes,
    HashValue,
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


def test_a_digesting_writer_passes_every_byte_on_and_digests_it() -> None:
    target = io.BytesIO()
    writer = DigestingWriter(target, ("md5", "sha-256"))
    writer.write(b"first ")
    writer.writelines([b"second ", b"third"])
    assert target.getvalue() == b"first second third"
    assert writer.digester.length == len(b"first second third")
    assert writer.digester.hexdigest("sha-256") == hashlib.sha256(b"first second third").hexdigest()
