"""Apache Airflow provider for ResourceSync (ANSI/NISO Z39.99-2017)."""

from __future__ import annotations

__version__ = "0.1.0"
