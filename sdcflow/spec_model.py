"""The base of every model a release spec is read into.

YAML reads unquoted ``yes``, ``no``, ``on``, ``off``, ``true`` and ``false`` as booleans, and
pydantic turns a boolean into 1 or 0 wherever a number is meant: ``keep_last: yes`` kept one
run's copies (an irreversible drop), ``precision: no`` rounded to integers, and a categorical
``order: [no, yes]`` became ``[0, 1]``. A field that takes numbers and no boolean refuses
one, wherever it sits in the field's lists and mappings (text fields and choices refuse it
already, naming what they take).
"""

from __future__ import annotations

import types
import typing
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationInfo, field_validator


class SpecModel(BaseModel):
    """A pydantic model of the spec whose numeric fields refuse YAML booleans."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is None:
            return value
        leaves = _leaves(field.annotation)
        # text fields and choices refuse a boolean by themselves, naming what they take
        if bool in leaves or Any in leaves or object in leaves or not leaves & {int, float}:
            return value
        at = _boolean_at(value)
        if at is None:
            return value
        text = " or quote the text ('yes')" if str in leaves else ""
        where = f" at {at}" if at else ""
        raise ValueError(
            f"YAML read an unquoted yes/no/on/off/true/false{where} as a boolean, which would "
            f"count as 1 or 0; give a number{text}"
        )


def _is_boolean(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _boolean_at(value: Any, at: str = "") -> str | None:
    """Where in ``value`` (itself, or an item of its lists and mappings) a boolean is: ``""``
    for the value itself, ``[1]``, ``[name][0]``...; None when there is none."""
    if _is_boolean(value):
        return at
    if isinstance(value, (list, tuple)):
        items: Any = enumerate(value)
    elif isinstance(value, dict):
        items = value.items()
    else:
        return None
    for key, item in items:
        found = _boolean_at(item, f"{at}[{key}]")
        if found is not None:
            return found
    return None


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
