"""Fuzzy microaggregation (``core/fuzzy/microaggregation.py``) and its registry entries:
both anonymity guarantees, expected sizes, reproducible draws, editing while masking."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from pydantic import ValidationError
from survey import expenditure_survey

from sdcflow.core.fuzzy.microaggregation import (
    draw_centres,
    fuzzy_microaggregation,
    fuzzy_partition,
)
from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.measures.anonymity import k_anonymity
from sdcflow.gates import GATES, GateContext
from sdcflow.methods import METHODS


@pytest.fixture(scope="module")
def survey() -> tuple[np.ndarray, LinearConstraints]:
    """200 records (expenditure 16 %, 7 %, total) violating total = 1.16 a + 1.07 b by noise,
    and the rules: that equality and a >= 10."""
    return expenditure_survey(200)


@pytest.mark.parametrize(
    "kw", [{"m1": 1.5, "m2": 2.0}, {"m1": 1.2, "m2": 1.5}, {"lambda1": 2.0, "lambda2": 1.0}]
)
def test_probabilistic_k_anonymity_holds_and_sizes_sum_to_n(survey, kw) -> None:
    X, _ = survey
    res = fuzzy_microaggregation(X, 4, random_state=1, restarts=2, **kw)
    assert res.expected_sizes.min() >= 4
    assert res.expected_sizes.sum() == pytest.approx(200, rel=1e-12)
    assert res.details["expected_size"]["min"] == pytest.approx(res.expected_sizes.min())
    median = res.details["expected_size"]["quantiles"]["p50"]
    assert median == pytest.approx(np.median(res.expected_sizes))
    used = res.realized_sizes[res.realized_sizes > 0]
    assert res.details["realized_size"]["centres"] == used.size
    assert res.details["realized_size"]["quantiles"]["p99"] <= used.max()
    assert res.details["centres_expected_below_k"] == 0
    assert res.realized_sizes.sum() == 200


def test_recursion_into_clusters_of_2k_keeps_the_guarantee() -> None:
    # Two blobs; a nearly crisp draw (m2 = 1.05) makes the top level lower c from 40 to 10,
    # and the clusters of expected size >= 2k are split again (18 centres published).
    gen = np.random.default_rng(3)
    X = np.vstack([gen.normal(0, 1, (60, 2)), gen.normal(12, 1, (60, 2))])
    res = fuzzy_microaggregation(X, 3, m1=1.1, m2=1.05, random_state=2, restarts=2, max_depth=3)
    assert res.expected_sizes.min() >= 3
    assert res.expected_sizes.sum() == pytest.approx(120, rel=1e-12)
    assert res.details["clusters_top"] < res.details["clusters_initial"]
    assert res.details["candidate_centres"] > res.details["clusters_top"]
    # published = the centres some record was drawn to, as the file shows them
    assert res.details["published_centres"] == len(np.unique(res.labels))
    assert res.details["published_centres"] == len(np.unique(res.masked, axis=0))


@pytest.mark.parametrize("guarantee", ["k_anonymity", "both"])
def test_k_anonymity_holds_for_every_used_centre(survey, guarantee: str) -> None:
    X, _ = survey
    res = fuzzy_microaggregation(X, 5, m1=1.5, m2=2.0, guarantee=guarantee, random_state=3)
    used = res.realized_sizes[res.realized_sizes > 0]
    assert used.min() >= 5
    assert k_anonymity(res.masked) >= 5
    assert 0.0 <= res.details["assignment_tv_mean"] <= 1.0


def test_constrained_draw_distortion_is_measured() -> None:
    """The figures quoted in the module docstring (one partition, 600 draws of each kind)."""
    X = np.random.default_rng(0).standard_normal((60, 2))
    part = fuzzy_partition(X, 3, m1=1.5, m2=2.0, guarantee="k_anonymity", random_state=0)
    free = replace(part, guarantee="probabilistic_k_anonymity")
    C = len(part.centers)
    U = np.zeros((60, C))
    for j in range(60):
        sl = slice(part.indptr[j], part.indptr[j + 1])
        U[j, part.leaf[sl]] = part.prob[sl]

    def frequencies(p, seed: int) -> np.ndarray:
        gen, F = np.random.default_rng(seed), np.zeros((60, C))
        for _ in range(600):
            labels, _ = draw_centres(p, gen)
            F[np.arange(60), labels] += 1
        return F / 600

    def tv(A: np.ndarray, B: np.ndarray) -> float:
        return float(0.5 * np.abs(A - B).sum(axis=1).mean())

    noise_floor = tv(frequencies(free, 2), U)
    distortion = tv(frequencies(part, 1), U)
    assert noise_floor < 0.06  # free draw: frequencies match the memberships
    assert 0.1 < distortion < 0.25  # constrained draw: measured 0.16 moved probability


def test_same_generator_seed_same_draw(survey) -> None:
    X, _ = survey
    a = fuzzy_microaggregation(X, 4, m1=1.5, m2=2.0, random_state=np.random.default_rng(7))
    b = fuzzy_microaggregation(X, 4, m1=1.5, m2=2.0, random_state=np.random.default_rng(7))
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.masked, b.masked)
    part = fuzzy_partition(X, 4, m1=1.5, m2=2.0, random_state=7)
    draws = {tuple(draw_centres(part, s)[0]) for s in range(3)}
    assert len(draws) == 3  # the draw is random: other seeds, other releases


def test_constrained_release_satisfies_the_rules_to_1e9(survey) -> None:
    X, rules = survey
    eq0, _ = rules.residuals(X)
    assert np.abs(eq0).max() > 1.0 and (X[:, 0] < 10).any()  # the input violates both rules
    for kw in ({"m1": 1.5, "m2": 2.0}, {"lambda1": 2.0, "lambda2": 1.0}):
        res = fuzzy_microaggregation(X, 4, constraints=rules, restarts=2, random_state=0, **kw)
        eq, ineq = rules.residuals(res.masked)
        assert np.abs(eq).max() < 1e-9
        assert ineq.max() < 1e-9
        assert res.details["constraints"]["max_equality_residual"] < 1e-9


# --- registry -------------------------------------------------------------------------------


def test_registry_entries_gate_on_the_named_guarantee(survey) -> None:
    X, rules = survey
    cols = list(rules.columns)
    method = METHODS["constrained_fuzzy"]
    assert method.edits_while_masking and not METHODS["fuzzy"].edits_while_masking
    params = method.params(k=4, m1=1.5, m2=2.0, guarantee="both", restarts=2)
    assert method.promises(params) == {"probabilistic_k_anonymity": 4.0, "k_anonymity": 4.0}
    res = method.mask(X, cols, params, np.random.default_rng(0), rules)
    ctx = GateContext(X, cols, res, params)
    assert GATES["probabilistic_k_anonymity"].compute(ctx) >= 4
    assert GATES["k_anonymity"].compute(ctx) >= 4
    assert np.abs(rules.residuals(res.points)[0]).max() < 1e-9
    # without rules it behaves as fuzzy and says so
    bare = method.mask(X, cols, params, np.random.default_rng(0), None)
    assert "behaves as fuzzy" in bare.details["constraints"]
    fuzzy = METHODS["fuzzy"].mask(
        X, cols, METHODS["fuzzy"].params(k=4, m1=1.5, m2=2.0), np.random.default_rng(0), rules
    )
    assert "not applied" in fuzzy.details["constraints"]


def test_probabilistic_check_on_a_crisp_method_uses_group_sizes(survey) -> None:
    X, rules = survey
    params = METHODS["mdav"].params(k=4)
    res = METHODS["mdav"].mask(X, list(rules.columns), params, np.random.default_rng(0), None)
    ctx = GateContext(X, list(rules.columns), res, params)
    assert GATES["probabilistic_k_anonymity"].compute(ctx) == np.bincount(res.groups).min()


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"k": 3, "lambda1": 1.5}, "lambda2 is missing"),
        ({"k": 3, "m1": 1.5, "m2": 2.0, "lambda1": 1.0}, "not both families"),
        ({"k": 3, "m1": 0.9, "m2": 2.0}, "m1"),
        ({"k": 3, "m1": 1.5, "m2": 2.0, "guarantee": "l_diversity"}, "guarantee"),
        ({"k": 3, "m1": 1.5, "m2": 2.0, "seed": 1}, "seed"),
    ],
)
def test_params_errors_name_the_field(spec: dict, field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        METHODS["fuzzy"].params(**spec)


@pytest.mark.parametrize(
    ("spec", "m1", "m2"),
    [({"k": 3}, 1.1, 1.1), ({"k": 3, "m2": 1.3}, 1.1, 1.3), ({"k": 3, "m1": 1.2}, 1.2, 1.1)],
)
def test_fuzzy_c_means_defaults_live_in_the_parameters(spec: dict, m1: float, m2: float) -> None:
    # one place for the defaults: a release and `sdcflow compare` read the same
    params = METHODS["constrained_fuzzy"].params(**spec)
    assert (params.m1, params.m2, params.lambda1, params.lambda2) == (m1, m2, None, None)
    entropy = METHODS["fuzzy"].params(k=3, lambda1=1.0, lambda2=2.0)
    assert (entropy.m1, entropy.m2) == (None, None)


@pytest.mark.parametrize("guarantee", ["probabilistic_k_anonymity", "k_anonymity"])
def test_guarantees_hold_on_the_truncated_scale_path(monkeypatch, guarantee: str) -> None:
    """Truncated FCM and sparse draw memberships (the path taken at scale) on small data."""
    import sdcflow.core.fuzzy.microaggregation as fm

    monkeypatch.setattr(fm, "DENSE_MEMBERSHIPS", 1e4)
    X = np.random.default_rng(0).standard_normal((800, 4))
    res = fm.fuzzy_microaggregation(
        X, 5, m1=1.1, m2=1.2, guarantee=guarantee, truncate=True, restarts=1, random_state=0
    )
    assert res.details["truncation_top"]["sampled_dropped_mass_max"] < 5e-3
    assert res.expected_sizes.sum() == pytest.approx(800, rel=1e-12)
    if guarantee == "probabilistic_k_anonymity":
        assert res.expected_sizes.min() >= 5
    else:
        assert res.realized_sizes[res.realized_sizes > 0].min() >= 5


@pytest.mark.parametrize("mass", [0.99, 1.0])
def test_draw_distribution_is_the_smallest_set_holding_mass(survey, mass: float) -> None:
    """Each record draws from its largest memberships holding ``mass``, renormalized."""
    from sdcflow.core.fuzzy.fcm import memberships

    X, _ = survey
    part = fuzzy_partition(
        X, 4, m1=1.2, m2=1.5, guarantee="k_anonymity", mass=mass, restarts=1, random_state=0
    )
    U = memberships(part.Z, part.centers_std, m=1.5)  # no recursion: leaves = centres
    for j in range(len(X)):
        a, b = part.indptr[j], part.indptr[j + 1]
        leaf, prob = part.leaf[a:b], part.prob[a:b]
        assert prob.sum() == pytest.approx(1.0, abs=1e-12)
        kept = U[j, leaf].sum()
        np.testing.assert_allclose(prob, U[j, leaf] / kept, rtol=1e-10)
        if mass == 1.0:
            assert b - a == np.count_nonzero(U[j])
        else:  # the kept set holds mass, and is smallest: without its least member it does not
            assert kept >= mass - 1e-12
            assert kept - U[j, leaf].min() < mass
    assert part.expected_sizes.sum() == pytest.approx(len(X), rel=1e-12)


def _truncate_rows_by_sorting(U: np.ndarray, mass: float):
    """The reference: a stable sort of every row, its cumulative sum, ``nonzero``."""
    order = np.argsort(-U, axis=1, kind="stable")
    Us = np.take_along_axis(U, order, axis=1)
    keep = (np.cumsum(Us, axis=1) - Us < mass) & (Us > 0.0)
    r, j = np.nonzero(keep)
    u = Us[r, j]
    return r, order[r, j], u / np.bincount(r, weights=u, minlength=len(U))[r]


@pytest.mark.parametrize("mass", [0.5, 0.9, 0.999, 1 - 1e-7, 1 - 1e-13])
def test_draw_truncation_equals_sorting_every_row(mass: float) -> None:
    """The kernel sorts only the entries that can be kept; its output is the full sort's,
    bit for bit: on FCM memberships (m = 1.1 and 2), on rows with ties, with zeros (a record
    on a centre), and on rows where few entries hold almost nothing (the whole-row path)."""
    from sdcflow.core.fuzzy import _kernels
    from sdcflow.core.fuzzy.fcm import memberships

    rng = np.random.default_rng(7)
    Z, V = rng.standard_normal((300, 4)), rng.standard_normal((60, 4))
    V[0] = Z[0]  # record 0 sits on centre 0: one membership 1, the others 0
    ties = np.full((5, 8), 1 / 8)
    ties[1, :4] = 0.25
    ties[1, 4:] = 0.0
    flat = rng.dirichlet(np.full(50, 50.0), size=40)  # many small entries: whole-row sorts
    spiky = rng.dirichlet(np.full(200, 0.02), size=40)
    for U in (memberships(Z, V, m=1.1), memberships(Z, V, m=2.0), ties, flat, spiky):
        U = np.ascontiguousarray(U)
        for got, want in zip(
            _kernels.truncate_rows(U, mass), _truncate_rows_by_sorting(U, mass), strict=True
        ):
            np.testing.assert_array_equal(got, want)


def test_isolated_outliers_are_merged_not_collapsed() -> None:
    """Five gross outliers get a centre of their own at every c; lowering c alone fell to a
    single published centre (IL 100). Merging the few under-filled clusters keeps the
    partition and the guarantee."""
    gen = np.random.default_rng(7)
    x1, x2 = gen.lognormal(3, 1, 1500), gen.lognormal(2, 1.2, 1500)
    X = np.c_[x1, x2, x1 + x2]
    X[40:45] *= 50
    for seed in (0, 1):
        res = fuzzy_microaggregation(X, 5, m1=1.2, m2=1.2, random_state=seed)
        assert res.details["merged_clusters"] > 0
        assert len(res.centers) > 50
        assert res.expected_sizes.min() >= 5
        assert res.expected_sizes.sum() == pytest.approx(1500, rel=1e-12)


@pytest.mark.parametrize("kw", [{"m1": 1.3, "m2": 1.3}, {"lambda1": 20.0, "lambda2": 20.0}])
def test_constrained_release_equals_fuzzy_on_data_satisfying_the_rules(kw) -> None:
    """[1] Prop. 5 / 7 through the whole method: the search amplifies rounding (sizes equal
    to 1e-9 sorted differently), so feasible centres must be left exactly unchanged."""
    gen = np.random.default_rng(11)
    a, b = gen.lognormal(3, 1, 600), gen.lognormal(2, 1, 600)
    X = np.c_[a, b, 1.16 * a + 1.07 * b]
    rules = LinearConstraints(
        ("a", "b", "t"), np.array([[1.16, 1.07, -1.0]]), np.zeros(1),
        -np.eye(3), np.zeros(3),
    )  # fmt: skip
    plain = fuzzy_microaggregation(X, 5, random_state=4, **kw)
    edited = fuzzy_microaggregation(X, 5, random_state=4, constraints=rules, **kw)
    np.testing.assert_allclose(edited.masked, plain.masked, rtol=0, atol=1e-9 * np.abs(X).max())


def test_released_values_sit_exactly_on_single_variable_bounds(survey) -> None:
    """A projection's rounding must not publish -3e-15 under ``x >= 10``-type rules."""
    X, rules = survey
    res = fuzzy_microaggregation(X, 4, m1=1.2, m2=1.2, constraints=rules, random_state=0)
    assert res.masked[:, 0].min() >= 10.0
    snapped = rules.snap_bounds(np.array([[10.0 - 3e-15, 1.0, 12.67]]))
    assert snapped[0, 0] == 10.0 and snapped[0, 1] == 1.0
