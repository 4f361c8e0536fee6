"""Data shuffling (Muralidhar and Sarathy 2006) against sdcMicro 5.8.1's ``shuffle``
(``method = "ds"``), and as the ``shuffle`` method of a release (issue 44, item 1)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata, spearmanr
from survey import EXAMPLE, QIS, write_release

import sdcflow
from sdcflow.core.perturbation.shuffle import average_ranks, ds_conditional, reverse_map, shuffle
from sdcflow.errors import DataError, InputError

# The file and figures of sdcMicro 5.8.1 (R 4.2.2):
#   d <- data.frame(y1 = Y[, 1], y2 = Y[, 2], s = S)
#   set.seed(7); r <- sdcMicro:::shuffleWORK(d, y1 + y2 ~ s, method = "ds", gadp = FALSE)
# r$perturbed is Y* (its random part drawn by R), r$shuffled the released values; MEAN and
# SIGMA are the lines of shuffleWORK before the draw (Ystar1, Sigma), printed from R.
Y = np.array(
    [
        [12, 5.5], [7, 2.0], [30, 9.1], [18, 4.4], [25, 8.0],
        [3, 1.2], [14, 6.3], [9, 2.9], [21, 7.7], [16, 3.8],
    ]
)  # fmt: skip
S = np.array([40, 22, 61, 38, 57, 15, 33, 25, 52, 47.0])[:, None]
PERTURBED = np.array(
    [
        [0.53815923712096, 1.11408444603546],
        [-1.90299287844976, -1.0827364752452],
        [0.846405051157383, 1.482918599721],
        [-0.288544136573784, -0.243544970033858],
        [0.304088093381273, 0.770685561780052],
        [-1.8767197307582, -1.81498106450437],
        [0.0184716253624297, -0.149084886113807],
        [-0.588387638051679, -0.695049778584491],
        [0.672032199165072, 0.669825562600728],
        [0.60873759662472, 1.38817643191006],
    ]
)
SHUFFLED = np.array(
    [[18, 7.7], [3, 2], [30, 9.1], [12, 3.8], [16, 6.3],
     [7, 1.2], [14, 4.4], [9, 2.9], [25, 5.5], [21, 8]]
)  # fmt: skip
MEAN_HEAD = np.array(
    [
        [0.118692438673257, 0.113030921684268],
        [-0.978955021573053, -0.932259793569948],
        [1.55363358048823, 1.47952672912585],
    ]
)
SIGMA = np.array([[0.107840127732221, 0.0612026187240021], [0.0612026187240021, 0.190920648905376]])


def test_the_conditional_mean_and_covariance_are_sdcmicros():
    mean, sigma = ds_conditional(Y, S)
    np.testing.assert_allclose(mean[:3], MEAN_HEAD, rtol=1e-12)
    np.testing.assert_allclose(mean[3:6], -MEAN_HEAD, rtol=1e-12)  # symmetric ranks of S
    np.testing.assert_allclose(sigma, SIGMA, rtol=1e-12)


def test_the_values_are_given_back_in_the_order_of_the_draw_as_sdcmicros_reverse_map():
    released = np.column_stack([reverse_map(Y[:, j], PERTURBED[:, j]) for j in range(2)])
    np.testing.assert_array_equal(released, SHUFFLED)


def test_by_hand_the_smallest_draw_gets_the_smallest_value():
    np.testing.assert_array_equal(
        reverse_map(np.array([5.0, 1, 3]), np.array([0.2, 0.9, -1])), [3, 5, 1]
    )


def test_tied_draws_give_the_values_in_the_records_order():
    # records 0, 2 and 3 draw the same value: they take the 1st-3rd smallest in their order
    y_star = np.array([0.5, 2.0, 0.5, 0.5, -1.0])
    np.testing.assert_array_equal(
        reverse_map(np.array([10.0, 40, 20, 30, 50]), y_star), [20, 50, 30, 40, 10]
    )


def test_each_column_is_a_permutation_reproducible_with_a_seed():
    gen = np.random.default_rng(3)
    n = 2000
    s = gen.normal(size=(n, 1))
    y = np.column_stack([np.exp(s[:, 0] + gen.normal(size=n)), s[:, 0] ** 3 + gen.normal(size=n)])
    out = shuffle(y, s, rng=11)
    for j in range(2):
        np.testing.assert_array_equal(np.sort(out[:, j]), np.sort(y[:, j]))  # marginal kept
    np.testing.assert_array_equal(out, shuffle(y, s, rng=11))
    assert not np.array_equal(out, shuffle(y, s, rng=12))
    # ranks follow the regression's prediction (Y*_1), and the rank correlation with S holds
    mean, _ = ds_conditional(y, s)
    for j in range(2):
        assert spearmanr(out[:, j], mean[:, j])[0] > 0.5
        assert spearmanr(out[:, j], s[:, 0])[0] == pytest.approx(
            spearmanr(y[:, j], s[:, 0])[0], abs=0.05
        )
    # without predictors the keys' rank correlation is kept in expectation, not the records
    alone = shuffle(y, rng=5)
    rho = spearmanr(y[:, 0], y[:, 1])[0]
    assert spearmanr(alone[:, 0], alone[:, 1])[0] == pytest.approx(rho, abs=0.05)
    assert abs(spearmanr(alone[:, 0], y[:, 0])[0]) < 0.1  # independent of its own record


@pytest.mark.parametrize(
    "y, named",
    [
        (np.array([[1.0], [np.nan], [3.0]]), "missing"),
        (np.array([[1.0], [2.0]]), "at least 3"),
        (np.array([[1.0], [1.0], [1.0]]), "one value on every record"),
    ],
)
def test_what_cannot_be_shuffled_is_refused_with_the_fix(y, named):
    with pytest.raises(DataError, match=named):
        shuffle(y, rng=0)


SEED = 13572468


def test_shuffle_releases_numeric_keys_gated_by_record_linkage(tmp_path, prefect_api):
    spec = write_release(
        tmp_path, rows=300, quasi_identifiers=QIS, method={"name": "shuffle"}, seed=SEED
    )
    outcome = sdcflow.release(spec)
    assert outcome.status == "published", outcome.message
    text = (outcome.published / "manifest.json").read_text()
    manifest = json.loads(text)
    # every option at its value, as for every method (predictors: none)
    assert manifest["method"] == {"name": "shuffle", "predictors": []} and str(SEED) not in text
    gates = {g["check"]: g for g in manifest["checks"]}
    assert gates["max_record_linkage"]["threshold"] == 10.0
    assert gates["max_record_linkage"]["figure"] < 10.0 and "k_anonymity" not in gates
    released = pd.read_csv(outcome.published / "data.csv")
    original = pd.read_csv(tmp_path / "data.csv")
    for c in QIS:  # every key keeps its values
        assert sorted(released[c]) == sorted(original[c])
    assert set(manifest["method_details"]["values_moved"]) == set(QIS)


def test_a_k_gate_or_a_categorical_key_under_shuffle_is_refused(tmp_path):
    spec = write_release(
        tmp_path,
        rows=40,
        quasi_identifiers=QIS,
        method={"name": "shuffle"},
        checks={"k_anonymity": 3},
    )
    with pytest.raises(InputError, match="gives no k-anonymity"):
        sdcflow.release(spec, publish=False)
    spec = write_release(
        tmp_path, rows=40, quasi_identifiers=[*QIS, "region"], method={"name": "shuffle"}
    )
    with pytest.raises(InputError, match="no k to stratify"):
        sdcflow.release(spec, publish=False)


def test_the_transformer_and_the_working_object_call_the_registry_method():
    from sdcflow import SdcFrame, Shuffle

    X = pd.DataFrame(np.random.default_rng(1).normal(size=(200, 3)), columns=["a", "b", "c"])
    out = Shuffle(random_state=0).fit_transform(X)
    assert all(sorted(out[c]) == sorted(X[c]) for c in X)
    frame = pd.read_csv(EXAMPLE / "data.csv").head(300)
    shuffled = SdcFrame(frame, keys=QIS, random_state=0).mask("shuffle")
    gates = shuffled.check().set_index("check")
    assert list(gates.index) == ["max_record_linkage"]
    assert all(sorted(shuffled.released[c]) == sorted(frame[c]) for c in QIS)


@pytest.mark.parametrize("seed", range(6))
def test_average_ranks_are_scipys_rankdata_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    columns = [
        rng.standard_normal(n),  # no ties
        rng.integers(0, 5, n).astype(float),  # many ties
        np.repeat(rng.standard_normal(1), n),  # one value
        np.where(rng.random(n) < 0.5, -0.0, 0.0) + rng.integers(0, 2, n),  # -0.0 ties 0.0
    ]
    M = np.column_stack(columns)
    np.testing.assert_array_equal(average_ranks(M), rankdata(M, method="average", axis=0))


# -- predictors in a release (issue 44) ---------------------------------------------------------

# sdcMicro 5.8.1 on the survey's first 300 records, the lines of shuffleWORK before the draw
# (traced: `trace(shuffleWORK, at = <after Sigma>)`, printed with digits = 15):
#   shuffleWORK(d, turnover + wages ~ employees + other_costs, method = "ds", gadp = FALSE)
SURVEY_MEAN_HEAD = np.array(
    [
        [-0.564012684171602, -0.546072535545489],
        [0.361808393951676, 0.522635996583277],
        [0.712888148292390, 1.095443655023617],
        [-0.555357766597297, -0.720866610668798],
    ]
)
SURVEY_MEAN_SQUARES = np.array([279.872084304145, 271.807741827796])  # colSums(Ystar1^2)
SURVEY_SIGMA = np.array(
    [[0.0353732453471993, 0.0194438008881255], [0.0194438008881259, 0.0490909995366178]]
)
KEYS, PREDICTORS = ["turnover", "wages"], ["employees", "other_costs"]


def test_the_survey_conditional_mean_and_covariance_are_sdcmicros():
    frame = pd.read_csv(EXAMPLE / "data.csv").head(300)
    mean, sigma = ds_conditional(
        frame[KEYS].to_numpy(dtype=float), frame[PREDICTORS].to_numpy(dtype=float)
    )
    np.testing.assert_allclose(mean[:4], SURVEY_MEAN_HEAD, rtol=1e-12)
    np.testing.assert_allclose((mean**2).sum(axis=0), SURVEY_MEAN_SQUARES, rtol=1e-12)
    np.testing.assert_allclose(sigma, SURVEY_SIGMA, rtol=1e-12)


def _rows(frame: pd.DataFrame) -> list[tuple]:
    """The records as a sorted list of tuples: the published file's rows are in another
    order."""
    return sorted(map(tuple, frame.to_numpy(dtype=float).tolist()))


def test_a_release_with_predictors_publishes_the_core_functions_values(tmp_path, prefect_api):
    spec = write_release(
        tmp_path,
        rows=300,
        quasi_identifiers=KEYS,
        keep=["employees"],
        sensitive=["other_costs"],
        method={"name": "shuffle", "predictors": PREDICTORS},
        seed=SEED,
    )
    outcome = sdcflow.release(spec)
    assert outcome.status == "published", outcome.message
    manifest = json.loads((outcome.published / "manifest.json").read_text())
    assert manifest["method"] == {"name": "shuffle", "predictors": PREDICTORS}
    assert (
        "conditioned on the predictors employees, other_costs"
        in (manifest["method_details"]["strategy"])
    )
    original = pd.read_csv(tmp_path / "data.csv")
    # the release's generator is the seed's, and nothing is drawn before the mask step
    expected = original[KEYS + PREDICTORS].copy()
    expected[KEYS] = shuffle(
        original[KEYS].to_numpy(dtype=float),
        original[PREDICTORS].to_numpy(dtype=float),
        rng=np.random.default_rng(SEED),
    )
    released = pd.read_csv(outcome.published / "data.csv")
    assert _rows(released[KEYS + PREDICTORS]) == _rows(expected)
    # conditioning on the firm's size keeps the keys' rank correlation with it
    for key in KEYS:
        rho = spearmanr(original[key], original["employees"])[0]
        assert spearmanr(released[key], released["employees"])[0] == pytest.approx(rho, abs=0.1)


def test_the_predictors_option_unset_keeps_the_spec_hash_of_before():
    from pathlib import Path

    from sdcflow.spec.load import spec_from_dict

    def sha256(**method):
        body = {
            "release": "r",
            "source": "data.csv",
            "quasi_identifiers": ["a", "b"],
            "method": {"name": "shuffle", **method},
            "seed": 7,
        }
        return spec_from_dict(body, base_dir=Path(".")).sha256()

    before = "d48190acdf9b6b15ff211263a07a0853c5c4241008da36c01f4950d7a531d65a"  # at 3085798
    assert sha256() == before and sha256(predictors=[]) == before
    assert sha256(predictors=["c"]) != before


FUZZY_MAP = {
    "ranges": [[0, 60], [40, 600], [500, 1e6]],
    "domain": [0, 1e6],
    "membership": "triangular",
    "combiner": "random_pick",
}


@pytest.mark.parametrize(
    "spec, named",
    [
        ({"keep": ["region"], "predictors": ["region"]}, "region holds text or booleans"),
        ({"predictors": ["nowhere"]}, "nowhere is not a column of the source"),
        ({"predictors": ["wages"]}, "wages is a quasi-identifier"),
        ({"predictors": ["employees"]}, "employees is not published unchanged"),
        (
            {
                "sensitive": ["employees"],
                "fuzzy_map": {"employees": FUZZY_MAP},  # published mapped, not as it is
                "predictors": ["employees"],
            },
            "employees is not published unchanged",
        ),
    ],
)
def test_a_bad_predictor_is_refused_at_preflight_with_its_line(tmp_path, capsys, spec, named):
    from errorline import cli_error

    from sdcflow.cli.main import main

    predictors = spec.pop("predictors")
    path = write_release(
        tmp_path,
        rows=40,
        quasi_identifiers=KEYS,
        method={"name": "shuffle", "predictors": predictors},
        **spec,
    )
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert named in err and err.count("\n") == 1, err
    assert cli_error(err)[1] == "method.predictors"


def test_a_predictor_with_missing_values_is_refused(tmp_path, capsys):
    from sdcflow.cli.main import main

    path = write_release(
        tmp_path,
        rows=40,
        quasi_identifiers=KEYS,
        keep=["employees"],
        method={"name": "shuffle", "predictors": ["employees"]},
        missing_values=[""],
    )
    frame = pd.read_csv(tmp_path / "data.csv")
    frame.loc[[3, 9], "employees"] = np.nan
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert main(["check", str(path)]) == 2
    assert "employees has 2 missing value(s)" in capsys.readouterr().err


def test_the_transformer_and_the_working_object_take_predictors():
    from sdcflow import SdcFrame, Shuffle

    frame = pd.read_csv(EXAMPLE / "data.csv").head(300)
    expected = shuffle(
        frame[KEYS].to_numpy(dtype=float),
        frame[PREDICTORS].to_numpy(dtype=float),
        rng=np.random.default_rng(4),
    )
    # the transformer: X holds the keys and the predictors, released unchanged beside them
    X = frame[[KEYS[0], *PREDICTORS, KEYS[1]]]
    out = Shuffle(predictors=PREDICTORS, random_state=4).fit_transform(X)
    assert list(out.columns) == list(X.columns)
    np.testing.assert_array_equal(out[KEYS].to_numpy(dtype=float), expected)
    pd.testing.assert_frame_equal(out[PREDICTORS], X[PREDICTORS])
    with pytest.raises(InputError, match="nowhere are not columns of X"):
        Shuffle(predictors=["nowhere"]).fit(X)
    # the working object: the predictors are columns of the frame, kept by to_spec
    sdc = SdcFrame(frame, keys=KEYS, random_state=4).mask("shuffle", predictors=PREDICTORS)
    np.testing.assert_array_equal(sdc.released[KEYS].to_numpy(dtype=float), expected)
    spec = sdc.to_spec()
    assert spec["method"]["predictors"] == PREDICTORS and spec["keep"] == PREDICTORS
    for bad, named in (
        (["region"], "region holds text"),
        (["wages"], "wages is a quasi-identifier"),
        (["nowhere"], "nowhere is not a column"),
    ):
        with pytest.raises(InputError, match=named):
            SdcFrame(frame, keys=KEYS).mask("shuffle", predictors=bad)


def test_a_predictor_read_as_text_is_published_as_written_and_conditioned_on_as_numbers(
    tmp_path, prefect_api
):
    # `28.00` is not how data.csv writes 28.0: the reader keeps the kept column as text, so
    # that it is published as the file writes it; the shuffle parses it
    spec = write_release(
        tmp_path,
        rows=120,
        quasi_identifiers=KEYS,
        keep=["employees"],
        method={"name": "shuffle", "predictors": ["employees"]},
        seed=5,
    )
    original = pd.read_csv(tmp_path / "data.csv")
    written = original.assign(employees=[f"{v:.2f}" for v in original["employees"]])
    written.to_csv(tmp_path / "data.csv", index=False)
    outcome = sdcflow.release(spec)
    assert outcome.status == "published", outcome.message
    released = pd.read_csv(outcome.published / "data.csv", dtype={"employees": str})
    assert sorted(released["employees"]) == sorted(written["employees"])
    expected = original[[*KEYS, "employees"]].astype(float)
    expected[KEYS] = shuffle(
        original[KEYS].to_numpy(dtype=float),
        original[["employees"]].to_numpy(dtype=float),
        rng=np.random.default_rng(5),
    )
    assert _rows(released[[*KEYS, "employees"]]) == _rows(expected)
