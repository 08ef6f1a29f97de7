"""Scratch SQLite databases: the indexes one run keeps (the mirror's state, an audit's book).

Each is SQLite's private temporary database: its file is unlinked as soon as it is opened, so
nothing is left behind, not even by a run that was killed; past its page cache it spills to that
file, so memory stays flat however many rows it holds.
"""

from __future__ import annotations

import sqlite3

__all__ = ["CACHE_KIB", "scratch_database"]

#: Page cache of one scratch database, in KiB; what does not fit spills to its file.
CACHE_KIB = 16_000


def scratch_database(schema: str, *, shared: bool = False) -> sqlite3.Connection:
    """A new private temporary database holding ``schema``, in autocommit mode (transactions
    are the caller's). ``shared``: usable from any thread (the caller serialises the calls)."""
    database = sqlite3.connect("", check_same_thread=not shared, isolation_level=None)
    database.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    database.execute("PRAGMA temp_store = FILE")
    database.executescript(schema)
    return database
