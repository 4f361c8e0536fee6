"""The spec's base model: a boolean is no number (sdcflow/spec_model.py)."""

from __future__ import annotations

import re
from typing import Any, Literal

import numpy as np
import pytest
from pydantic import ValidationError

from sdcflow.spec_model import SpecModel


class _Fields(SpecModel):
    count: int | None = None
    share: float | list[float] | None = None
    order: list[str | int | float] | None = None
    label: str | None = None
    switch: bool | int = False
    choice: Literal["a", "b"] | None = None
    anything: dict[str, Any] | None = None


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        ("count", True, ""),
        ("count", np.bool_(False), ""),  # the Python API: numpy's booleans too
        ("share", [0.5, True], " at [1]"),
        ("order", ["x", False], " at [1]"),
    ],
)
def test_a_boolean_is_refused_where_numbers_are_taken(field, value, where):
    with pytest.raises(ValidationError, match=re.escape(f"false{where} as a boolean")) as e:
        _Fields.model_validate({field: value})
    assert ("quote the text" in str(e.value)) is (field == "order")


def test_switches_text_choices_and_free_mappings_keep_their_own_rules():
    got = _Fields.model_validate({"switch": True, "anything": {"x": True}, "count": 3})
    assert (got.switch, got.anything, got.count) == (True, {"x": True}, 3)
    for field in ("label", "choice"):  # pydantic refuses these itself, saying what it takes
        with pytest.raises(ValidationError) as e:
            _Fields.model_validate({field: True})
        assert "as a boolean" not in str(e.value)
