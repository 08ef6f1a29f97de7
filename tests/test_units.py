"""Amounts in log lines as a person reads them (issue 16): ``15.6 MiB``, not ``16384000
bytes``."""

from __future__ import annotations

import pytest

from airflow_provider_resourcesync.units import byte_size, counted


@pytest.mark.parametrize(("amount", "shown"), [
    (0, "0 B"), (150, "150 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (16_384_000, "15.6 MiB"), (1024**2 - 1, "1.0 MiB"), (int(1.25 * 1024**3), "1.2 GiB"),
    (3 * 1024**4, "3.0 TiB"), (2048 * 1024**5, "2048.0 PiB"), (2.5 * 1024**2, "2.5 MiB"),
])
def test_bytes_are_shown_in_the_largest_binary_unit_they_fill(amount: float, shown: str) -> None:
    assert byte_size(amount) == shown


def test_a_runs_counts_show_its_bytes_in_units() -> None:
    assert counted({"fetched": 12, "failed": 0, "bytes": 16_384_000}) == (
        "12 fetched, 0 failed, 15.6 MiB")
