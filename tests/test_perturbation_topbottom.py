"""Top and bottom coding (sdcflow.core.perturbation.top_bottom_code), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.perturbation import top_bottom_code
from sdcflow.errors import DataError, ParameterError

X = np.array([3.0, 250.0, 40.0, np.nan, 1.0, 900.0, 100.0])


def test_top_with_replacement_as_sdcmicro():
    # sdcMicro: topBotCoding(x, value = 100, replacement = 100, kind = "top"):
    # strictly greater than 100 becomes 100; 100 itself and NA are kept
    np.testing.assert_array_equal(
        top_bottom_code(X, top=100, replacement=100),
        [3.0, 100.0, 40.0, np.nan, 1.0, 100.0, 100.0],
    )


def test_bottom_with_replacement_as_sdcmicro():
    np.testing.assert_array_equal(
        top_bottom_code(X, bottom=3, replacement=0),
        [3.0, 250.0, 40.0, np.nan, 0.0, 900.0, 100.0],
    )


def test_default_replacement_is_the_mean_of_the_replaced_values():
    coded = top_bottom_code(X, top=100, bottom=5)
    # top: (250 + 900) / 2 = 575; bottom: (3 + 1) / 2 = 2
    np.testing.assert_array_equal(coded, [2.0, 575.0, 40.0, np.nan, 2.0, 575.0, 100.0])
    assert np.nansum(coded) == np.nansum(X)  # the total is kept


def test_pair_of_replacements_low_first():
    np.testing.assert_array_equal(
        top_bottom_code(X, top=100, bottom=5, replacement=(5, None)),
        [5.0, 575.0, 40.0, np.nan, 5.0, 575.0, 100.0],
    )


def test_nothing_beyond_the_thresholds_is_a_copy():
    coded = top_bottom_code(X, top=1000, bottom=0)
    np.testing.assert_array_equal(coded, X)
    assert coded is not X


@pytest.mark.parametrize(
    "kwargs,error,field",
    [
        ({}, ParameterError, "top"),
        ({"top": 1, "bottom": 2}, ParameterError, "bottom"),
        ({"top": np.inf}, ParameterError, "top"),
        ({"top": 100, "bottom": 5, "replacement": 3.0}, ParameterError, "replacement"),
        ({"top": 100, "replacement": np.nan}, ParameterError, "replacement"),
    ],
)
def test_bad_parameters_name_the_argument(kwargs, error, field):
    with pytest.raises(error) as info:
        top_bottom_code(X, **kwargs)
    assert info.value.field == field


def test_bad_data():
    with pytest.raises(DataError):
        top_bottom_code(["a", "b"], top=1)
    with pytest.raises(DataError):
        top_bottom_code([1.0, np.inf], top=1)
