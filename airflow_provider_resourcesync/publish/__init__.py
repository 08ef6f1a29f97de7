"""Publishing a bucket (or a directory) as a ResourceSync Source: its inventories, and the
changes between two of them. Below the Airflow shell: no Airflow imports."""

from __future__ import annotations

from .diff import Change, ChangeKind, changes
from .inventory import InventoryObject

__all__ = ["Change", "ChangeKind", "InventoryObject", "changes"]
