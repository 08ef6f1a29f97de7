"""HTTP I/O over httpx: one policy shared by a sync and an async client."""
