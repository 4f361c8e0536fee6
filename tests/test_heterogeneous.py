"""Heterogeneous microaggregation (Domingo-Ferrer & Torra 2005) on a hand-computed file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcflow.tasks.measures.anonymity import k_anonymity
from sdcflow.tasks.methods import METHODS
from sdcflow.tasks.methods.keys import Key
from sdcflow.tasks.methods.mixed import mask_keys
from sdcflow.tasks.microaggregation.heterogeneous import (
    MixedKeys,
    group_representatives,
    heterogeneous_groups,
)

# x numeric; o ordinal with 3 categories (ranks 0..2); c nominal (A = 0, B = 1)
X = np.array([[1.0], [2.0], [3.0], [10.0], [11.0], [12.0]])
RANKS = np.array([[0], [0], [1], [2], [2], [1]])
C = np.array([[0], [0], [1], [1], [1], [0]])


def test_groups_and_representatives_by_hand():
    # n = 6 < 3k: one step of MDAV-generic, then the rest. Scaled: z = (x - 6.5) / 4.5735
    # (population sd), ordinal rank / 3. Centroid: z 0, median rank 1/3, mode A (a 3-3 tie
    # goes to the lowest code). Squared distances to it: 1.557, 1.079, 1.586, 1.697, 2.079,
    # 1.446: record 4 is the farthest. Its nearest: itself, record 3 (0.048), record 5
    # (0.048 + 0.111 + 1 = 1.159) before record 2 (3.171): groups {3, 4, 5} and {0, 1, 2}.
    keys = MixedKeys.build(numeric=X, ordinal=RANKS, levels=np.array([3]), nominal=C)
    labels = heterogeneous_groups(keys, 3)
    assert labels.tolist() == [1, 1, 1, 0, 0, 0]
    rep = group_representatives(keys, labels)
    # {0, 1, 2}: mean 2, lower median of ranks (0, 0, 1) = 0, mode A
    # {3, 4, 5}: mean 11, median of (2, 2, 1) = 2, mode B
    assert rep.numeric[:, 0].tolist() == [2, 2, 2, 11, 11, 11]
    assert rep.ordinal[:, 0].tolist() == [0, 0, 0, 2, 2, 2]
    assert rep.nominal[:, 0].tolist() == [0, 0, 0, 1, 1, 1]


def test_missing_values_stay_missing_and_means_use_the_values_present():
    Xm = X.copy()
    Xm[1, 0] = np.nan  # record 1 has no x: grouped on o and c only
    Cm = C.copy()
    Cm[4, 0] = -1
    keys = MixedKeys.build(numeric=Xm, ordinal=RANKS, levels=np.array([3]), nominal=Cm)
    labels = heterogeneous_groups(keys, 3)
    rep = group_representatives(keys, labels)
    assert np.isnan(rep.numeric[1, 0]) and rep.nominal[4, 0] == -1
    g = labels[1]
    present = [i for i in range(6) if labels[i] == g and i != 1]
    assert rep.numeric[present[0], 0] == pytest.approx(X[present, 0].mean())
    assert np.bincount(labels).min() >= 3


def test_an_all_missing_categorical_key_is_released_missing():
    rng = np.random.default_rng(0)
    n = 60
    frame = pd.DataFrame(
        {"a": rng.integers(0, 100, n), "s": rng.choice(["x", "y"], n), "gone": [None] * n}
    )
    keys = [Key("a", "numeric", decimals=0, integer=True), Key("s", "nominal")]
    keys.append(Key("gone", "nominal"))
    for method in ({"name": "mdav", "k": 5}, {"name": "heterogeneous", "k": 5}):
        params = METHODS[method["name"]].params.model_validate(method)
        result = mask_keys(frame, keys, params, rng)
        assert result.masked["gone"].isna().all()
        assert k_anonymity(result.released_identifiers) >= 5


@pytest.mark.parametrize("categorical", ["mode", "suppress"])
def test_the_method_releases_every_key_k_anonymously(categorical):
    rng = np.random.default_rng(0)
    n = 240
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "sex": rng.choice(["F", "M"], n).astype(object),
            "edu": rng.choice(["primary", "secondary", "tertiary"], n).astype(object),
        }
    )
    frame.loc[rng.random(n) < 0.1, "sex"] = None
    keys = [
        Key("age", "numeric", decimals=0, integer=True),
        Key("sex", "nominal"),
        Key("edu", "ordinal", order=("primary", "secondary", "tertiary")),
    ]
    params = METHODS["heterogeneous"].params.model_validate(
        {"name": "heterogeneous", "k": 4, "categorical": categorical}
    )
    result = mask_keys(frame, keys, params, rng)
    released = result.released_identifiers
    assert list(released.columns) == ["age", "sex", "edu"]
    assert k_anonymity(released) >= 4
    assert result.promises == {"k_anonymity": 4.0}
    assert str(released["age"].dtype) == "Int64"  # integers published as integers
    assert released["sex"].isna().sum() >= frame["sex"].isna().sum()  # missing stays missing
    changed = result.details["categorical_values_changed"]
    suppressed = result.details["categorical_values_suppressed"]
    if categorical == "suppress":
        assert changed == suppressed  # every change is a suppression
        kept = released["edu"].notna()
        assert (released.loc[kept, "edu"] == frame.loc[kept, "edu"]).all()
    else:
        assert sum(suppressed.values()) == 0
