"""Values given to an operator as they are, or as a template rendered them."""

from __future__ import annotations

import ast
import json
from typing import Any

from ..errors import ConfigurationError

__all__ = ["rendered_value"]


def rendered_value(value: Any, what: str) -> Any:
    """``value``; a string is read as JSON, else as a Python literal (``{{ ti.xcom_pull(...) }}``
    renders a dict or a list as its ``repr``).

    :raises ConfigurationError: a string that is neither, naming ``what``.
    """
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ConfigurationError(f"{what}: not JSON nor a Python literal: {value[:200]!r}"
                                     ) from None
