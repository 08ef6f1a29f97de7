"""Where the example DAGs are.

The repository keeps them in its top-level ``dags_examples/``; the wheel ships the same files
inside the package, as ``airflow_provider_resourcesync/dags_examples/``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["example_dags_folder"]

_PACKAGE = Path(__file__).resolve().parent
_FOLDER = "dags_examples"


def example_dags_folder() -> Path:
    """The folder of the example DAGs: the package's own in an installed wheel; in a checkout
    (an editable install) the repository's top-level folder."""
    installed = _PACKAGE / _FOLDER
    return installed if installed.is_dir() else _PACKAGE.parent / _FOLDER
