"""Global recoding: bins, maps and hierarchies against hand figures; unknown levels refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcflow.errors import InputError, Reason
from sdcflow.tasks.recoding.recode import Recoding, load_hierarchy, recode


def test_bins_by_hand():
    ages = pd.Series([17, 18, 40, 64, 65, 90, None])
    done = recode("age", ages, Recoding("bins", edges=(0, 18, 65, np.inf)))
    # [0, 18) [18, 65) [65, inf]; the missing value stays missing
    assert done.values.tolist() == [
        "[0, 18)",
        "[18, 65)",
        "[18, 65)",
        "[18, 65)",
        "[65, inf]",
        "[65, inf]",
        None,
    ]
    assert done.order == ["[0, 18)", "[18, 65)", "[65, inf]"]
    assert done.changed == 6


def test_bins_with_labels_and_a_closed_last_edge():
    done = recode("x", pd.Series([0.0, 5.0, 10.0]), Recoding("bins", (0, 5, 10), ("lo", "hi")))
    assert done.values.tolist() == ["lo", "hi", "hi"]  # 10 falls in the closed last bin


def test_values_outside_the_bins_are_refused():
    with pytest.raises(InputError) as e:
        recode("age", pd.Series([5, 200]), Recoding("bins", edges=(0, 100)))
    assert e.value.code == Reason.RECODING and "200" not in str(e.value)


def test_map_by_hand_and_unknown_level():
    col = pd.Series(["Married-civ-spouse", "Divorced", None, "Never-married"])
    rule = Recoding("map", mapping={"Married-civ-spouse": "Married", "Divorced": "Single"})
    done = recode("marital", col, rule)
    assert done.values.tolist() == ["Married", "Single", None, "Never-married"]
    assert done.changed == 2
    with pytest.raises(InputError) as e:
        recode("marital", col, Recoding("map", mapping={"Widowed": "Single"}))
    assert e.value.code == Reason.RECODING and "Widowed" in str(e.value)


def test_hierarchy_from_a_file(tmp_path):
    path = tmp_path / "country.csv"
    path.write_text(
        "Canada;North-America;America\nMexico;North-America;America\nPeru;South-America;America\n"
    )
    table = load_hierarchy(path)
    col = pd.Series(["Canada", "Peru", "Mexico", None])
    one = recode("c", col, Recoding("hierarchy", hierarchy=table, level=1))
    two = recode("c", col, Recoding("hierarchy", hierarchy=table, level=2))
    assert one.values.tolist() == ["North-America", "South-America", "North-America", None]
    assert two.values.tolist() == ["America", "America", "America", None]
    # a level of the column the hierarchy lacks is refused, without naming the value
    with pytest.raises(InputError) as e:
        recode("c", pd.Series(["Canada", "Chile"]), Recoding("hierarchy", hierarchy=table))
    assert e.value.code == Reason.RECODING and "Chile" not in str(e.value)
    with pytest.raises(InputError) as e:
        recode("c", col, Recoding("hierarchy", hierarchy=table, level=3))
    assert e.value.code == Reason.SPEC_FIELD
