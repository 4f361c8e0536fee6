"""The base of every model a release spec is read into.

YAML reads unquoted ``yes``, ``no``, ``on``, ``off``, ``true`` and ``false`` as booleans, and
pydantic turns a boolean into 1 or 0 wherever a number is meant: ``keep_last: yes`` kept one
run's copies (an irreversible drop), ``precision: no`` rounded to integers, and a categorical
``order: [no, yes]`` became ``[0, 1]``. A field that does not take a boolean refuses one,
wherever it sits in the field's lists and mappings.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationInfo, field_validator


class SpecModel(BaseModel):
    """A pydantic model of the spec whose numeric and text fields refuse YAML booleans."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is None or not _holds_a_boolean(value):
            return value
        leaves = _leaves(field.annotation)
        if bool in leaves or Any in leaves or object in leaves:
            return value
        if leaves & {int, float, str}:
            raise ValueError(
                "YAML read an unquoted yes/no/on/off/true/false here as a boolean, and this "
                "field takes no boolean; give a number, or quote the text ('yes')"
            )
        return value


def _holds_a_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_a_boolean(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_a_boolean(v) for v in value.values())
    return False


def _leaves(annotation: Any) -> set[Any]:
    """Every type a value inside a field of this annotation may take: the members of its
    unions and the items of its lists, tuples and mappings (a nested model is one leaf:
    its own fields refuse booleans themselves)."""
    origin = typing.get_origin(annotation)
    if origin is None:
        return {annotation}
    if origin is typing.Annotated:
        return _leaves(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return {type(a) for a in typing.get_args(annotation)}
    args = typing.get_args(annotation)
    if origin is dict or (isinstance(origin, type) and issubclass(origin, dict)):
        args = args[1:]  # the values; keys are text
    found: set[Any] = set()
    for arg in args:
        if arg is not Ellipsis:
            found |= _leaves(arg)
    if origin not in (typing.Union, types.UnionType) and not args:
        found.add(origin)
    return found
