"""The measures as publication gates: every key runs through ``run_gates`` on a release."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from sdcflow.core.measures.anonymity import l_diversity
from sdcflow.core.measures.cluster_loss import cluster_loss
from sdcflow.core.measures.disclosure_risk import (
    fuzzy_reidentification_probabilities,
    interval_disclosure,
    record_linkage,
)
from sdcflow.core.measures.information_loss import generic_loss, probabilistic_loss_table
from sdcflow.core.microaggregation.mdav import group_means, mdav
from sdcflow.errors import InputError, Reason
from sdcflow.gates import GATES, GateContext, MeasureOptions, run_gates
from sdcflow.methods import MaskResult


@pytest.fixture(scope="module")
def mdav_ctx() -> GateContext:
    rng = np.random.default_rng(11)
    X = rng.normal(size=(120, 3)) * [1.0, 10.0, 100.0] + [0.0, 50.0, 500.0]
    labels = mdav(X, 4)
    points = group_means(X, labels)
    cols = ["a", "b", "c"]
    kept = pd.DataFrame({"region": rng.integers(0, 3, 120), "illness": rng.integers(0, 5, 120)})
    return GateContext(
        original=X,
        columns=cols,
        result=MaskResult(pd.DataFrame(points, columns=cols), points, groups=labels),
        method=SimpleNamespace(name="mdav", k=4),
        options=MeasureOptions(cluster_loss={"c": 4, "restarts": 3}, interval_disclosure_p=[5, 10]),
        sensitive=kept[["illness"]],
    )


MEASURE_GATES = [
    key
    for key in GATES
    if key.startswith(("max_", "min_", "l_", "entropy_l", "transparency_"))
    # the edit-rule gate needs rules, the household risk a household_column: spec fields
    and key not in ("max_edit_violations", "max_household_risk")
    and not key.startswith("box_")
]


def test_every_gate_declares_its_direction_in_its_name():
    for key, gate in GATES.items():
        if key.startswith(("max_", "box_max_")):
            assert gate.direction == "max", key
        else:
            assert gate.direction == "min", key
        assert gate.unit, f"{key} has no unit"


def test_gates_report_the_measures_figures(mdav_ctx):
    keys = MEASURE_GATES
    outcomes = {o.key: o for o in run_gates(mdav_ctx, dict.fromkeys(keys, 0.0))}
    X, P = mdav_ctx.original, mdav_ctx.result.points
    assert outcomes["max_generic_loss_variances"].figure == generic_loss(X, P, "variances")
    assert outcomes["max_generic_loss_correlations"].figure == generic_loss(
        X, P, "correlations", kind="absolute"
    )
    assert outcomes["max_pil"].figure == probabilistic_loss_table(X, P)["average"]
    assert outcomes["max_record_linkage"].figure == record_linkage(X, P)
    assert outcomes["max_interval_disclosure"].figure == interval_disclosure(X, P, [5, 10])
    # MDAV: the transparency intruder gets 1/|group|; 120 records in 30 groups of 4
    assert outcomes["max_transparency_reidentification"].figure == pytest.approx(25.0)
    assert outcomes["transparency_k_anonymity"].figure == pytest.approx(4.0)
    assert outcomes["l_diversity"].figure == l_diversity(P, mdav_ctx.sensitive["illness"])
    expected = cluster_loss(X, P, c=4, restarts=3, alphas=(0.5,))
    assert outcomes["max_cluster_loss_d1"].figure == expected.d1
    assert outcomes["min_cluster_adjusted_rand"].figure == expected.alpha[0.5]["adjusted_rand"]
    # direction: a loss of 0 passes nothing above it, an index >= 0 passes a 0 minimum
    assert outcomes["min_cluster_rand"].passed
    assert not outcomes["max_record_linkage"].passed


def test_l_diversity_without_sensitive_columns_is_a_contradiction(mdav_ctx):
    ctx = GateContext(mdav_ctx.original, mdav_ctx.columns, mdav_ctx.result, mdav_ctx.method)
    with pytest.raises(InputError) as err:
        run_gates(ctx, {"l_diversity": 2})
    assert err.value.code == Reason.SPEC_CONTRADICTION


def test_fuzzy_transparency_uses_m2_memberships():
    # Two centres at -1 and +1 (standardized scale), two records on each. m2 = 2.
    # Record at -1 coincides with centre 0: u = (1, 0), N = (2, 2) -> P = 1/2.
    # Record at 0: u = (1/2, 1/2) -> P = 1/4.
    Z = np.array([[-1.0], [0.0], [1.0], [0.0]])
    groups = np.array([0, 0, 1, 1])
    V = np.array([[-1.0], [1.0]])
    P = fuzzy_reidentification_probabilities(Z, V, groups, m=2.0, chunk=3)
    assert P == pytest.approx([0.5, 0.25, 0.5, 0.25])
    # entropy FCM, lam = ln 3: record at 0 is equidistant -> 1/4; record at -1:
    # u0 = 1 / (1 + exp(-ln3 * (4 - 0))) = 81/82 -> P = 81/164
    P = fuzzy_reidentification_probabilities(Z, V, groups, lam=np.log(3.0))
    assert P == pytest.approx([81 / 164, 0.25, 81 / 164, 0.25])


def test_information_loss_counts_every_value_present():
    # A survey whose records each answer one of two questions (a skip pattern): no record
    # has both keys. IL dropped every record missing a key, so it measured nothing and the
    # run ended with exit 2 ('original has 0 rows') after masking. It is now the SSE over
    # the values present in both files against their SST, column by column.
    X = np.array([[1.0, np.nan], [3.0, np.nan], [np.nan, 10.0], [np.nan, 30.0]])
    P = np.array([[2.0, np.nan], [2.0, np.nan], [np.nan, 20.0], [np.nan, 20.0]])
    ctx = GateContext(
        X, ["a", "b"], MaskResult(pd.DataFrame(P, columns=["a", "b"]), P), SimpleNamespace(k=2)
    )
    # each column: standardized values -1, 1 released as 0, 0: SSE 2, SST 2
    assert GATES["max_information_loss"].compute(ctx) == pytest.approx(100.0)
    # a record missing one key still counts with its other key
    X2 = np.array([[0.0, 0.0], [2.0, 2.0], [4.0, np.nan]])
    P2 = np.array([[1.0, 1.0], [1.0, 1.0], [4.0, np.nan]])
    ctx2 = GateContext(
        X2, ["a", "b"], MaskResult(pd.DataFrame(P2, columns=["a", "b"]), P2), SimpleNamespace(k=2)
    )
    # a: mean 2, sd sqrt(8/3): SSE (1+1)/(8/3) = 0.75, SST 3; b: SSE 2, SST 2
    assert GATES["max_information_loss"].compute(ctx2) == pytest.approx(100.0 * 2.75 / 5.0)


def test_figures_of_complete_records_are_not_checked_when_no_record_is_complete():
    # A survey whose records each skip one question: IL counts every value present, but
    # linkage and the other loss figures are measured on the records that have every key,
    # and there is none. They raised 'original has 0 rows' (exit 2 from `sdcflow compare`,
    # which measures them for every variant); they are now "not checked" (NaN, not passed).
    from sdcflow.gates import measure
    from sdcflow.methods import MdavParams

    X = np.array([[1.0, np.nan], [3.0, np.nan], [np.nan, 10.0], [np.nan, 30.0]])
    P = np.array([[2.0, np.nan], [2.0, np.nan], [np.nan, 20.0], [np.nan, 20.0]])
    ctx = GateContext(
        X, ["a", "b"], MaskResult(pd.DataFrame(P, columns=["a", "b"]), P), MdavParams(k=2)
    )
    keys = ["max_record_linkage", "max_interval_disclosure", "max_pil", "max_generic_loss_means"]
    figures = measure(ctx, [*keys, "max_information_loss"])
    assert all(np.isnan(figures[k]) for k in keys)
    assert figures["max_information_loss"] == pytest.approx(100.0)
    (outcome,) = [
        o for o in run_gates(ctx, {"max_record_linkage": 50}) if o.key == "max_record_linkage"
    ]
    assert not outcome.checked and not outcome.passed
    # one complete record: linkage is measured, moments and clusters need two
    X[0, 1], P[0, 1] = 5.0, 6.0
    ctx = GateContext(
        X, ["a", "b"], MaskResult(pd.DataFrame(P, columns=["a", "b"]), P), MdavParams(k=2)
    )
    figures = measure(ctx, ["max_record_linkage", "max_pil", "max_cluster_loss_d1"])
    assert figures["max_record_linkage"] == 100.0
    assert np.isnan(figures["max_pil"]) and np.isnan(figures["max_cluster_loss_d1"])


def test_a_figure_is_never_printed_equal_to_a_threshold_it_differs_from(capsys) -> None:
    """With 6 significant digits a weighted risk of 0.004499441 against a threshold of
    0.0044994405 printed "0.00449944 <= 0.00449944 FAIL": a true verdict that read as false.
    The console, the log, the artifacts and the report take digits enough to tell them apart."""
    from sdcflow.cli.output import print_outcome as _print_outcome
    from sdcflow.gates.base import GateOutcome, distinct_digits

    o = GateOutcome("max_individual_risk", 0.004499441, 0.0044994405, "max", False, "risk")
    figure, threshold = o.shown
    assert (figure, threshold) == ("0.004499441", "0.0044994405")
    assert distinct_digits(0.5, 0.5) == ("0.5", "0.5")
    assert distinct_digits(7.7147, 25.0) == ("7.7147", "25")
    assert distinct_digits(1.0, 1.0 + 2**-52) == ("1", "1.0000000000000002")
    _print_outcome(SimpleNamespace(checks=[o]), False, checks_only=True)
    line = capsys.readouterr().out
    assert "0.004499441 <= 0.0044994405" in line and "FAIL" in line
