"""Values given to an operator natively (a dict, an ``XComArg`` resolved, a template rendered
with ``render_template_as_native_obj``), or as JSON text (a template ending in ``| tojson``)."""

from __future__ import annotations

import json
from typing import Any

from ..errors import ConfigurationError

__all__ = ["rendered_value"]

#: What a template rendering Python's None (not natively) gives.
_NONE = ("", "None")


def rendered_value(value: Any, what: str) -> Any:
    """``value``; a string is read as JSON (``"None"`` and ``""``, what a template rendering
    nothing gives, are None).

    :raises ConfigurationError: a string that is not JSON (a Python ``repr``, as a template
        rendering a dict gives), naming ``what`` and how to pass it instead.
    """
    if not isinstance(value, str):
        return value
    if value.strip() in _NONE:
        return None
    try:
        return json.loads(value)
    except ValueError:
        raise ConfigurationError(
            f"{what}: not JSON: {value[:200]!r}. Pass the task's output itself (an XComArg, "
            "e.g. baseline.output), end the template with '| tojson', or set "
            "render_template_as_native_obj=True on the DAG") from None
