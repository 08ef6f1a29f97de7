"""The connection form on the Airflow releases that build it from the hook (before 3.2, which
reads ``conn-fields`` and ``ui-field-behaviour`` from the provider info instead): the same
fields, labels, descriptions, defaults and placeholders, made from that provider info."""

from __future__ import annotations

from typing import Any

from ..get_provider_info import get_provider_info

__all__ = ["form_widgets", "ui_field_behaviour"]


def _connection_type() -> dict[str, Any]:
    (connection_type,) = get_provider_info()["connection-types"]
    return dict(connection_type)


def form_widgets() -> dict[str, Any]:
    """A wtforms field per extra field: a check box for a flag, an integer field for a count, a
    password field for a secret, a text field for the rest (numbers and the JSON of headers,
    which the hook reads from text)."""
    # Airflow's UI before 3.2 (FAB) has these; Airflow skips the form where they are missing
    from flask_appbuilder.fieldwidgets import BS3PasswordFieldWidget, BS3TextFieldWidget
    from wtforms import BooleanField, IntegerField, PasswordField, StringField
    from wtforms.validators import Optional

    widgets: dict[str, Any] = {}
    for name, field in _connection_type()["conn-fields"].items():
        schema = field["schema"]
        kinds = set(schema["type"]) - {"null"}
        common = {"label": field["label"], "description": field["description"]}
        if "boolean" in kinds:
            widgets[name] = BooleanField(default=schema.get("default"), **common)
        elif schema.get("format") == "password":
            widgets[name] = PasswordField(widget=BS3PasswordFieldWidget(), **common)
        elif "integer" in kinds:
            widgets[name] = IntegerField(widget=BS3TextFieldWidget(), validators=[Optional()],
                                         default=schema.get("default"), **common)
        else:
            widgets[name] = StringField(widget=BS3TextFieldWidget(),
                                        default=schema.get("default"), **common)
    return widgets


def ui_field_behaviour() -> dict[str, Any]:
    """The provider info's ``ui-field-behaviour``, with the keys the hook method returns."""
    behaviour = _connection_type()["ui-field-behaviour"]
    return {key.replace("-", "_"): value for key, value in behaviour.items()}
