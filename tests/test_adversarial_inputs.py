"""Hostile specs, files and values: bounded, named, never a crash (issue #11, defects 4, 6,
9)."""

from __future__ import annotations

import json
import os
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from adversarial import cli, spawn
from errorline import cli_error
from survey import write_release

from sdcflow.cli.main import main
from sdcflow.core.fuzzy.microaggregation import fuzzy_microaggregation
from sdcflow.core.linear.projection import PolyhedronProjector
from sdcflow.core.linear.repair import minimal_adjustment, violating_records
from sdcflow.core.microaggregation.mdav import group_means
from sdcflow.core.validation import (
    check_resolution,
    destandardize,
    standardize,
    standardize_with,
)
from sdcflow.errors import InfeasibleRulesError, InputError, Reason
from sdcflow.expectations.compile import compile_rule
from sdcflow.expectations.feasibility import check_feasible
from sdcflow.expectations.rules import parse_rules
from sdcflow.expectations.suite import validate_frame
from sdcflow.gates import GATES, GateContext
from sdcflow.limits import MAX_RULES
from sdcflow.methods import METHODS
from sdcflow.methods.blocks import mask_quasi_identifiers
from sdcflow.preflight.plan import linear_constraints
from sdcflow.warehouse.edits import evaluate_rules, record_violations
from sdcflow.warehouse.sources import read_source
from sdcflow.warehouse.warehouse import Warehouse

REPO = Path(__file__).resolve().parents[1]

# -- the spec -------------------------------------------------------------------------------------

BOMB = """release: bomb
source: data.csv
quasi_identifiers: [employees]
method: {name: mdav, k: 5}
l0: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
l1: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
l2: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
l3: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
l4: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
l5: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
l6: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
l7: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
edits: [{rule: employees >= 0, description: *h}]
"""


def _hostile(tmp, kind: str) -> str:
    if kind == "anchor-bomb":
        return BOMB  # 1 KB that expands to 43 million strings
    if kind == "recursive-alias":
        return "release: r\nsource: data.csv\nx: &a [*a]\n"
    if kind == "deep-nesting":
        return "release: " + "[" * 5000 + "]" * 5000 + "\n"
    if kind == "long-string":
        return "release: r" + "x" * 20_000 + "\n"
    if kind == "many-aliases":
        return "a: &a 1\nb: [" + ", ".join(["*a"] * 200) + "]\n"
    if kind == "large-file":
        return "release: r\n" + "# padding\n" * 120_000
    if kind == "many-rules":
        return yaml.safe_dump({"release": "r", "edits": ["employees >= 0"] * (MAX_RULES + 1)})
    if kind == "many-columns":
        return yaml.safe_dump({"release": "r", "keep": [f"c{i}" for i in range(1001)]})
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind",
    [
        "anchor-bomb",
        "recursive-alias",
        "deep-nesting",
        "long-string",
        "many-aliases",
        "large-file",
        "many-rules",
        "many-columns",
    ],
)
def test_hostile_specs_are_refused_in_one_short_line(tmp_path, capsys, kind):
    spec = tmp_path / "release.yaml"
    spec.write_text(_hostile(tmp_path, kind))
    t0 = time.process_time()
    assert main(["check", str(spec)]) == 2
    assert time.process_time() - t0 < 5  # CPU seconds: nothing was expanded
    err = capsys.readouterr().err
    assert cli_error(err)[0] is Reason.SPEC_LIMIT and err.count("\n") == 1 and len(err) < 400


def test_a_rules_file_is_bounded_too(tmp_path, capsys):
    spec = write_release(tmp_path, rows=60, rules_file="rules.yaml")
    (tmp_path / "rules.yaml").write_text(BOMB)
    assert main(["check", str(spec)]) == 2
    assert cli_error(capsys.readouterr().err)[0] is Reason.SPEC_LIMIT
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(["employees >= 0"] * (MAX_RULES + 1)))
    assert main(["check", str(spec)]) == 2
    assert cli_error(capsys.readouterr().err)[0] is Reason.SPEC_LIMIT


def test_a_long_bad_value_is_not_echoed_whole(tmp_path, capsys):
    spec = write_release(tmp_path, rows=60, on_violation="x" * 5000)
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err)[0] is Reason.SPEC_FIELD and len(err) < 600


# -- the source -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("a,b,c\n1,2,3\n4,5\n6,7,8\n", Reason.SOURCE_FORMAT),  # a short line
        ("a,b,c\n1,2,3\n4,5,6,7\n6,7,8\n", Reason.SOURCE_FORMAT),  # a long line
    ],
    ids=["short-line", "long-line"],
)
def test_a_ragged_csv_is_named_as_ragged(tmp_path, text, code):
    (tmp_path / "r.csv").write_text(text)
    with pytest.raises(InputError) as e:
        read_source(tmp_path / "r.csv")
    assert e.value.code == code  # before: "column not in the file" (the wrong cause)


def test_a_link_loop_a_folder_and_a_pipe_are_not_reported_missing(tmp_path):
    (tmp_path / "a.csv").symlink_to(tmp_path / "b.csv")
    (tmp_path / "b.csv").symlink_to(tmp_path / "a.csv")
    (tmp_path / "folder.csv").mkdir()
    os.mkfifo(tmp_path / "pipe.csv")
    for name in ("a.csv", "folder.csv", "pipe.csv"):
        with pytest.raises(InputError) as e:
            read_source(tmp_path / name)
        assert e.value.code == Reason.SOURCE_NOT_FILE, name
    with pytest.raises(InputError) as e:
        read_source(tmp_path / "absent.csv")
    assert e.value.code == Reason.SOURCE_MISSING


# -- rules ----------------------------------------------------------------------------------------


COEFFICIENT_CASES = [
    (["a == 1e15*b + c", "b >= 1", "c >= 0", "a <= 1e16"], True),  # a = 1e15, b = 1, c = 0
    (["x >= 1e15", "x <= 2e15", "y == 1e16 * x"], True),
    (["1e-15*x >= 1", "x <= 1e16"], True),  # x = 1e15
    (["a == 1e20*b", "b >= 1e-3", "a <= 1e18"], True),  # b = 1e-3, a = 1e17
    (["a >= 1e300", "a <= 2e300"], True),
    (["1e18*x + 1e-18*y == 1", "x >= 0", "y >= 0"], True),
    (["a == 1e20*b", "b >= 1", "a <= 1e19"], False),  # a >= 1e20
    (["1e-15*x >= 1", "x <= 1e14"], False),  # x >= 1e15
    (["a >= 3e300", "a <= 2e300"], False),
    (["a >= 1e15 * b"], True),  # b = 0
    (["a >= 1e100 * b", "b >= 0", "a <= 1"], True),
]


@pytest.mark.parametrize(("rules", "feasible"), COEFFICIENT_CASES)
def test_huge_and_tiny_coefficients_do_not_change_the_verdict(rules, feasible):
    parsed = parse_rules(rules)
    if feasible:
        check_feasible(parsed)
    else:
        with pytest.raises(InfeasibleRulesError):
            check_feasible(parsed)


@pytest.mark.parametrize(("rules", "feasible"), COEFFICIENT_CASES)
def test_the_projector_of_repair_reaches_the_preflight_verdict(rules, feasible):
    # A rule set the preflight accepted (`a >= 1e15 * b`) was refused by the projector of
    # the repair step, whose LP was not equilibrated: exit 2 mid-run, after the warehouse,
    # the report folder and a failed flow run were written.
    parsed = parse_rules(rules)
    columns = sorted({c for r in parsed for c in r.columns})
    constraints = linear_constraints(parsed, columns)
    if feasible:
        PolyhedronProjector.from_constraints(constraints)
    else:
        with pytest.raises(InputError) as e:
            PolyhedronProjector.from_constraints(constraints)
        assert e.value.code is Reason.RULES_INFEASIBLE


def test_a_record_is_repaired_onto_a_rule_with_a_coefficient_of_1e15():
    parsed = parse_rules(["a >= 1e15 * b"])
    X = np.array([[3.0, 2.0], [5.0, 0.0]])
    repaired, moved = minimal_adjustment(X, linear_constraints(parsed, ["a", "b"]))
    assert moved.tolist() == [True, False]
    assert repaired[0, 0] - 1e15 * repaired[0, 1] >= -1e-8
    assert abs(repaired[0, 0] - 3.0) < 1e-9 and abs(repaired[0, 1]) < 1e-14


@pytest.mark.parametrize("coefficient", [1e8, 1e9, 1e12, 1e15])
def test_a_long_projection_is_not_called_infeasible(coefficient):
    # `x >= 1`, `y == 1e8 * x` from (0, 0): the projection (1, 1e8) is far away, and the
    # least-distance step's residual 1 / (1 + ||z||^2) fell below its 1e-12 test, so a
    # release whose rules the preflight accepted died in repair with exit 2, "the rules admit
    # no record", after writing the warehouse and a report folder.
    rules = parse_rules(["x >= 1", f"y == {coefficient!r} * x + z"])
    projector = PolyhedronProjector.from_constraints(linear_constraints(rules, ["x", "y", "z"]))
    got = projector.project(np.array([[0.0, 0.0, 0.0], [5.0, 3.0, 0.0]]))
    half = coefficient / 2  # x = 1, y - z = coefficient, y and z split the move evenly
    np.testing.assert_allclose(got, [[1.0, half, -half], [1.0, half + 1.5, 1.5 - half]], rtol=1e-9)


VAT_RULES = ["tax == 0.16 * net", "gross == net + tax", "gross == 1.16 * net", "vat == 0.2 * net"]


def _vat_records(n: int, magnitude: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    net = np.round(rng.lognormal(np.log(magnitude), 1.0, n), 2)
    tax = 0.16 * net
    return np.column_stack([net, tax, net + tax, 0.2 * net])


@pytest.mark.parametrize("magnitude", [3e8, 3e10, 3e13])
def test_redundant_inexact_equalities_centred_on_large_means_are_consistent(magnitude):
    # `gross == 1.16 * net` follows from the other two, but 1.16 - 1 - 0.16 is -8e-17 in
    # binary: centred on means of 4e8, the three rules disagreed by 4e-9, above the old
    # absolute 1e-9, so constrained_fuzzy and heterogeneous stopped at the mask step with
    # exit 2 "the linear equality rules are inconsistent" on rules the preflight accepted.
    constraints = linear_constraints(parse_rules(VAT_RULES), ["net", "tax", "gross", "vat"])
    X = _vat_records(300, magnitude, 1)
    fit = fuzzy_microaggregation(X, 3, m1=1.1, m2=1.1, constraints=constraints, random_state=0)
    assert not violating_records(fit.masked, constraints).any()
    assert np.unique(fit.masked, axis=0).shape[0] < 300  # masked, not passed through
    with pytest.raises(InputError) as e:  # a conflict of 1 at 1e10 is still refused
        PolyhedronProjector.from_constraints(
            linear_constraints(parse_rules(["x + y == 1e10", "x + y == 1e10 + 1"]), ["x", "y"]),
            shift=np.array([5e9, 5e9]),
        )
    assert e.value.code is Reason.RULES_INFEASIBLE


@pytest.mark.parametrize("outlier", [1e40, 1e80, 1e100])
def test_one_huge_value_does_not_make_rules_that_hold_infeasible(outlier):
    # One value of 1e100 (as in Census's AGI) must not make constrained_fuzzy call rules
    # the check before the run found feasible infeasible (exit 2, "the linear edit rules
    # admit no record ... fix the rules"). In standardized units a scale of 1e98 beside 1e4
    # blurs the rules; the set's emptiness does not depend on the units, so the projector
    # asks it of the rules as written.
    rules = parse_rules(["tax <= income", "tax >= 0", "total == income + other"])
    constraints = linear_constraints(rules, ["income", "tax", "other", "total"])
    rng = np.random.default_rng(2)
    income, other = rng.lognormal(10, 1, 200), rng.lognormal(8, 1, 200)
    X = np.column_stack([income, 0.2 * income, other, income + other])
    X[5, 0] = X[5, 3] = outlier
    shift, scale = X.mean(axis=0), X.std(axis=0)
    projector = PolyhedronProjector.from_constraints(constraints, shift=shift, scale=scale)
    assert projector.n_ineq == 2  # built: no rules-infeasible
    with pytest.raises(InputError) as e:  # rules that conflict are still refused, in any unit
        PolyhedronProjector.from_constraints(
            linear_constraints(
                parse_rules(["tax <= income", "tax >= income + 1"]), ["income", "tax"]
            ),
            shift=shift[:2],
            scale=scale[:2],
        )
    assert e.value.code is Reason.RULES_INFEASIBLE


def test_ge_in_chunks_gives_the_counts_of_one_batch_and_of_numpy(tmp_path):
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(rng.normal(size=(200, 4)), columns=list("abcd"))
    texts = [f"{c} >= {t:.2f}" for t in np.linspace(-2, 2, 75) for c in "abcd"]  # 300 rules
    rules = parse_rules(texts)
    compiled = [compile_rule(r) for r in rules]
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    run = "e" * 32
    wh.ingest(pa_table(frame), run)
    checks = evaluate_rules(wh, "raw", run, compiled)
    stored = record_violations(wh, "raw", run, compiled)  # > 256 rules: two scans
    expected = {
        r.name: int((frame[t.split()[0]] < float(t.split()[-1])).sum())
        for r, t in zip(rules, texts, strict=True)
    }
    assert {k: v["violations"] for k, v in stored.items()} == expected
    some = compiled[::6]  # 50 rules through GE, in one batch and in chunks of 7
    one = validate_frame(checks, some, chunk=len(some))
    chunked = validate_frame(checks, some, chunk=7, docs_dir=tmp_path / "docs")
    assert chunked.counts() == one.counts() == {c.name: expected[c.name] for c in some}
    assert (tmp_path / "docs" / "index.html").is_file()


def pa_table(frame: pd.DataFrame):
    import pyarrow as pa

    return pa.Table.from_pandas(frame, preserve_index=False)


# -- values near the limits of a double -----------------------------------------------------------


def test_standardizing_is_exact_and_finite_at_the_limits():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4)) * [1e-3, 1.0, 1e5, 1e12]
    Z, mean, scale = standardize(X)
    np.testing.assert_array_equal(Z, (X - X.mean(0)) / X.std(0))  # bit for bit
    np.testing.assert_array_equal(destandardize(Z, mean, scale), Z * scale + mean)
    np.testing.assert_array_equal(standardize_with(X, mean, scale), Z)
    # by hand: 1e308 and -1e308 have mean 0 and population sd 1e308
    Z, mean, scale = standardize(np.array([[1e308], [-1e308]]))
    assert Z.ravel().tolist() == [1.0, -1.0] and mean[0] == 0 and scale[0] == 1e308
    Z, mean, scale = standardize(np.array([[1e308], [1e308], [0.0], [0.0]]))
    assert mean[0] == 1e308 / 2 and scale[0] == 1e308 / 2 and Z.ravel().tolist() == [1, 1, -1, -1]
    Z, mean, scale = standardize(np.array([[1e-308], [3e-308]]))  # below the normal range
    np.testing.assert_allclose([mean[0], scale[0]], [2e-308, 1e-308], rtol=1e-14)
    np.testing.assert_allclose(Z.ravel(), [-1.0, 1.0], rtol=1e-14)


def test_group_means_are_exact_and_finite_at_the_limits():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1000, 3)) * 1e6
    labels = rng.permutation(np.arange(1000) % 200)
    counts = np.bincount(labels)
    sums = np.zeros((counts.size, 3))
    np.add.at(sums, labels, X)
    np.testing.assert_array_equal(group_means(X, labels), (sums / counts[:, None])[labels])
    huge = np.array([[1e308, 1.0], [1e308, 2.0], [-1e308, 1e-308], [1e308, 3e-308]])
    out = group_means(huge, np.array([0, 0, 1, 1]))  # the plain sum overflows to inf
    assert out[:, 0].tolist() == [1e308, 1e308, 0.0, 0.0] and out[:2, 1].tolist() == [1.5, 1.5]
    np.testing.assert_allclose(out[2:, 1], 2e-308, rtol=1e-14)


def _extreme(kind: str, n: int = 60) -> np.ndarray:
    rng = np.random.default_rng({"huge": 0, "tiny": 1, "mixed": 2}[kind])
    X = rng.normal(size=(n, 3)) * [1.0, 100.0, 1e4]
    if kind == "huge":
        X[:2, 0], X[2, 0], X[3:6, 1] = 1e308, -1e308, 1.7e308
    elif kind == "tiny":
        X[:, 0] = rng.normal(size=n) * 1e-308
    else:
        X[:2, 0], X[2:6, 0], X[6, 2] = 1e308, 1e-308, -1e308
    return X


PARAMS = {
    "mdav": {"k": 3},
    "ps": {"k": 3},
    "box": {"k": 3},
    "fuzzy": {"k": 3, "restarts": 1, "m1": 1.1, "m2": 1.1},
    "constrained_fuzzy": {"k": 3, "restarts": 1, "m1": 1.1, "m2": 1.1},
    "heterogeneous": {"k": 3},
    "univariate": {"k": 3},  # one variable per block: the test masks column by column
    "local_suppression": {"k": 3},  # categorical keys only: refused on numbers
    "noise": {},
    "rank_swap": {},
    "shuffle": {},
    "pram": {},  # categorical keys only
}


def _finite_figures(value: object) -> bool:
    if isinstance(value, dict):
        return all(_finite_figures(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite_figures(v) for v in value)
    if isinstance(value, float):
        return bool(np.isfinite(value))
    return True


@pytest.mark.parametrize("kind", ["huge", "tiny", "mixed"])
@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_and_gate_gives_finite_figures_or_a_clear_error(kind, name):
    X, cols = _extreme(kind), ["a", "b", "c"]
    params = METHODS[name].params.model_validate({"name": name, **PARAMS[name]})
    sensitive = pd.DataFrame({"s": np.random.default_rng(3).integers(0, 3, len(X))})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow warning is a failure here
        blocks = [[c] for c in cols] if name == "univariate" else None
        try:
            result = mask_quasi_identifiers(X, cols, params, np.random.default_rng(1), None, blocks)
        except InputError as e:
            # fuzzy methods work in standardized units, where 1e308 beside values of 1 leaves
            # those values to rounding (check_resolution): refused, not published as noise
            assert (name, e.code) in {
                ("box", Reason.VALUES_RANGE),
                ("local_suppression", Reason.PARAMETER),
                ("pram", Reason.PARAMETER),  # categorical keys only: refused on numbers
                ("noise", Reason.VALUES_RANGE),  # variances of 1e308 overflow
                ("fuzzy", Reason.VALUES_RANGE),
                ("constrained_fuzzy", Reason.VALUES_RANGE),
            }
            assert name not in ("fuzzy", "constrained_fuzzy") or kind != "tiny"
            return
        assert np.isfinite(result.points).all()
        assert _finite_figures(result.details)
        for key, gate in GATES.items():
            if key == "max_edit_violations" or (key.startswith("box_") and name != "box"):
                continue
            if gate.requires - {"sensitive"}:
                continue  # a spec field this context does not have (household_column)
            ctx = GateContext(
                X, cols, result, params, sensitive=sensitive, rng=np.random.default_rng(2)
            )
            if gate.not_checked is not None and gate.not_checked(ctx) is not None:
                continue  # said "not checked" with its reason, never a figure
            assert np.isfinite(gate.compute(ctx)), key


def test_box_keeps_working_just_inside_its_range():
    n, big = 60, np.finfo(np.float64).max
    limit = min(np.sqrt(big / (16.0 * n)), big ** (1 / 3) / 8.0)
    X = np.random.default_rng(4).normal(size=(n, 3))
    X[:2, 0], X[2, 0] = 0.99 * limit, -0.99 * limit
    params = METHODS["box"].params.model_validate({"name": "box", "k": 3})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = mask_quasi_identifiers(X, ["a", "b", "c"], params, np.random.default_rng(1))
    assert np.isfinite(result.points).all()


def test_two_keys_of_1e308_do_not_crash_mdav_in_a_real_process():
    child = spawn(
        """
        import numpy as np
        from sdcflow.methods.microaggregation import MDAV, MdavParams
        X = np.random.default_rng(0).normal(size=(50, 3))
        X[:2, 0] = 1e308
        res = MDAV.mask(X, ["a", "b", "c"], MdavParams(k=5), np.random.default_rng(0), None)
        assert np.isfinite(res.points).all()
        print("ok")
        """
    )
    # generous: the first call in a fresh install compiles the float64 kernel (about 40 CPU s)
    out, err = child.communicate(timeout=900)
    assert child.returncode == 0, err[-500:]  # before: exit -11 (segfault in the kernel)
    assert out.strip() == "ok"


@pytest.mark.flow
@pytest.mark.filterwarnings("error::RuntimeWarning")  # an overflow is a false figure
def test_a_release_with_keys_of_1e308_publishes_finite_figures(tmp_path, prefect_api):
    # Two firms of 1e308 dominate any group (no merging passes the p % rule short of
    # overflowing its total): the spec accepts dominated groups explicitly; finiteness is
    # what is tested here.
    dominated = "max_p_dominated_groups"
    spec = write_release(
        tmp_path,
        rows=120,
        seed=4,
        method={"name": "mdav", "k": 5},
        checks={dominated: 120},
        accept={"looser_checks": [dominated]},
    )
    frame = pd.read_csv(tmp_path / "data.csv")
    frame["turnover"] = frame["turnover"].astype(float)
    frame.loc[[3, 50], "turnover"] = 1e308  # before: the column mean overflowed, exit 139
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert main(["release", str(spec)]) == 0
    manifest = json.loads((tmp_path / "published" / "survey" / "manifest.json").read_text())
    assert _finite_figures(manifest["checks"]) and _finite_figures(manifest["method_details"])
    published = pd.read_parquet(tmp_path / "published" / "survey" / "data.parquet")
    assert np.isfinite(published.select_dtypes("number").to_numpy(dtype=np.float64)).all()
    # the run report's moments and correlations too: no inf, no NaN where a figure exists
    (page,) = tmp_path.rglob("report.html")
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", page.read_text())
    assert cells and not {"inf", "-inf", "NaN"} & {c.strip() for c in cells}


@pytest.mark.parametrize(("big", "refused"), [(1.3e12, False), (1.45e12, True)])
def test_resolution_by_hand(big, refused):
    # values 0, 1, 2 and one big: median 1.5, distances 1.5, 0.5, 0.5, big - 1.5; the 95 %
    # nearest (3 of 4) average 0.8333. The mean is about big / 4 and the sd big sqrt(3) / 4,
    # so the rounding in standardized units, 4 eps (|mean| + sd) = eps big (1 + sqrt(3)),
    # passes 1e-3 of 0.8333 from big = 8.333e-4 / (2.732 * 2.22e-16) = 1.374e12
    X = np.array([[0.0, 7.0], [1.0, 7.0], [2.0, 7.0], [big, 7.0]])  # a constant column passes
    if not refused:
        check_resolution(X, ["a", "b"])
        return
    with pytest.raises(InputError) as e:
        check_resolution(X, ["a", "b"], what="this")
    assert e.value.code is Reason.VALUES_RANGE and e.value.field == "a"
    assert "1e+12" not in str(e.value) and "1000000000000" not in str(e.value)


def test_honest_heavy_tails_keep_their_resolution():
    rng = np.random.default_rng(3)
    turnover = rng.lognormal(11, 2.5, 5000)  # up to about 1e9
    turnover[0] = 1e13  # one very large firm
    gains = np.where(rng.random(5000) < 0.95, 0.0, rng.lognormal(8, 1, 5000))  # mostly 0
    seconds = 1.7e9 + rng.integers(0, 86400, 5000)  # timestamps, a day in seconds
    # rates of 0.3, half of them computed as 3 * 0.1 (one ulp above), leave a spread of
    # 5.5e-17 that must not get the column refused
    rate = rng.choice([0.1, 0.2, 0.3, 3 * 0.1, 0.4], 5000, p=[0.05, 0.05, 0.45, 0.4, 0.05])
    # a fee of 0.3 computed as (net + 0.3) - net (4 values 30 ulps apart),
    # and a column of 55 % zeros, 35 % residues of 1e-10 and 10 % values of 1e3 to 1e6
    net = np.round(rng.uniform(10, 100, 5000), 2)
    fee = (net + 0.3) - net
    kind = rng.random(5000)
    residue = np.where(kind < 0.55, 0.0, rng.normal(0, 1.2e-10, 5000))
    residue[kind > 0.9] = rng.uniform(1e3, 1e6, (kind > 0.9).sum())
    X = np.column_stack([turnover, gains, seconds, rate, fee, residue])
    check_resolution(X, ["t", "g", "s", "r", "f", "z"])
    # nearly all one value and a few absurd ones: refused
    zeros = np.zeros(5000)
    zeros[:100] = rng.uniform(1e3, 1e4, 100)
    zeros[100] = 1e40
    with pytest.raises(InputError):
        check_resolution(zeros[:, None], ["z"])


@pytest.mark.parametrize("method", ["constrained_fuzzy", "fuzzy"])
def test_a_key_a_fuzzy_method_would_lose_is_refused_before_the_run(tmp_path, capsys, method):
    # One turnover of 1e40 among thousands, strict rules, constrained_fuzzy: every
    # published turnover would be 1e25 or more (the strict margin at the column's scale,
    # and the back-transformation's rounding), with exit 0; at 1e160 the mask step would
    # say "rules-infeasible". Both are refused before the run, naming the column.
    method_spec = {"name": method, "k": 5, "restarts": 1, "guarantee": "both"}
    spec = write_release(
        tmp_path, rows=200, method=method_spec, edits=["turnover > 0", "wages < turnover"]
    )
    frame = pd.read_csv(tmp_path / "data.csv")
    frame["turnover"] = frame["turnover"].astype(float)
    for outlier in (1e40, 1e160):
        frame.loc[7, "turnover"] = outlier
        frame.to_csv(tmp_path / "data.csv", index=False)
        assert main(["release", str(spec)]) == 2
        assert cli_error(capsys.readouterr().err) == (Reason.VALUES_RANGE, "turnover")
    assert not (tmp_path / "warehouse.duckdb").exists() and not (tmp_path / "published").exists()


def test_a_header_of_a_million_columns_is_refused_before_duckdb_reads_it(tmp_path, monkeypatch):
    # the column limit is checked on the header before DuckDB reads the file, and duplicate
    # names are not counted per name (quadratic in a header of a million columns)
    from sdcflow.warehouse import sources

    n = 1_000_000
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(n)) + "\n" + ",".join(["1"] * n) + "\n")

    def no_duckdb(*args, **kwargs):
        raise AssertionError("DuckDB read a file over the column limit")

    monkeypatch.setattr(sources.duckdb, "connect", no_duckdb)
    start = time.perf_counter()
    with pytest.raises(InputError) as e:
        sources.read_source(path)
    assert e.value.code is Reason.SPEC_LIMIT
    assert time.perf_counter() - start < 30


def test_a_header_field_over_the_csv_module_limit_is_a_source_format_error(tmp_path):
    # csv.Error "field larger than field limit" escaped as a crash (exit 3)
    path = tmp_path / "h.csv"
    path.write_text("a," + "x" * 200_000 + "\n1,2\n")
    with pytest.raises(InputError) as e:
        read_source(path)
    assert e.value.code is Reason.SOURCE_FORMAT


# -- issue 41, item 3: found inside the flow, now at preflight ------------------------------------


def _nothing_written(tmp) -> None:
    # no warehouse, no reports folder, no published folder: the input files alone
    assert sorted(p.name for p in tmp.iterdir()) == ["d.csv", "r.yaml"]


@pytest.mark.parametrize(
    ("column", "values", "rule"),
    [
        ("d", pd.date_range("2024-01-01", periods=60).strftime("%Y-%m-%d"), "d == 'yesterday'"),
        ("d", pd.date_range("2024-01-01", periods=60).strftime("%Y-%m-%d"), "d in ['soon']"),
        ("t", pd.date_range("2024-01-01", periods=60, freq="h").astype(str), "t != 'noon'"),
        (
            "t",
            pd.date_range("2024-01-01", periods=60, freq="h").astype(str),
            "if t == 'x' then a >= 0",
        ),
        ("flag", ["true", "false"] * 30, "flag == 'perhaps'"),
    ],
    ids=["date-eq", "date-in", "timestamp-ne", "timestamp-if", "boolean"],
)
def test_a_rule_duckdb_cannot_evaluate_is_refused_at_preflight(
    tmp_path, capsys, column, values, rule
):
    """Found inside the flow, it was exit 2 after three ERROR lines, with a warehouse, an empty
    report folder and `failed` in audit.runs: now one line, nothing written."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60), column: values})
    frame.to_csv(tmp_path / "d.csv", index=False)
    spec = {"release": "r", "source": "d.csv", "quasi_identifiers": ["a", "b"], "keep": [column],
            "edits": [rule], "method": {"name": "mdav", "k": 5}}  # fmt: skip
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(spec))
    assert main(["check", str(tmp_path / "r.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and cli_error(err)[0] in (Reason.RULE_EVALUATION, Reason.RULE_TYPE)
    _nothing_written(tmp_path)


def test_an_undeclared_relation_is_refused_by_a_real_process_before_anything_is_written(tmp_path):
    rng = np.random.default_rng(4)
    a, b = rng.integers(1, 100, 300).astype(float), rng.integers(1, 100, 300).astype(float)
    a[rng.random(300) < 0.1] = np.nan
    frame = pd.DataFrame({"a": a, "b": b, "total": a + b}).astype("Int64")
    frame["total"] = pd.array(np.nan_to_num(a, nan=7.0) + b).astype("Int64")
    frame.loc[frame["a"].notna(), "total"] = frame["a"] + frame["b"]
    frame.to_csv(tmp_path / "d.csv", index=False)
    spec = {"release": "r", "source": "d.csv", "quasi_identifiers": ["a", "b", "total"],
            "missing_values": [""], "method": {"name": "mdav", "k": 5}}  # fmt: skip
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(spec))
    done = cli("release", str(tmp_path / "r.yaml"), cwd=tmp_path)
    out, err = done.communicate(timeout=300)
    assert done.returncode == 2, err
    assert cli_error(err)[0] is Reason.UNDECLARED_RELATION and err.count("\n") == 1
    assert "ERROR" not in out + err
    _nothing_written(tmp_path)


# -- issue 41, item 4: any spec field of the wrong shape is bad input, not a crash ---------------

WRONG_SHAPES = [["x"], {"a": 1}, [[1]], {"a": {"b": 1}}, -(10**30), 10**30, "", None, True]


def _paths(obj, at=()):
    yield at
    items = (
        obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    )
    for key, value in items:
        yield from _paths(value, (*at, key))


def test_every_spec_field_of_the_wrong_shape_is_an_input_error(tmp_path):
    """``method: {name: [mdav]}`` was exit 3 ``TypeError: unhashable type``: a list, a mapping,
    a huge or an empty value in any field of a full spec is refused as bad input (or, where it
    fits, accepted), never another exception."""
    import copy

    from sdcflow.spec.load import load_spec

    example = yaml.safe_load((REPO / "examples" / "business_survey" / "release.yaml").read_text())
    full = {**example, "runner": "dask", "dask": {"workers": 2}, "seed": 3, "keep": ["x"],
            "retention": {"keep_last": 2, "keep_days": 3}, "missing_values": [""],
            "key_types": {"region": {"name": "region", "type": "nominal"}},
            "recode": {"region": {"map": {"N": "X"}}}, "checks": {"k_anonymity": 5},
            "suppression": {"importance": ["region"]}, "accept": {"looser_checks": []}}  # fmt: skip
    crashes = []
    for at in [p for p in _paths(full) if p]:
        for value in WRONG_SHAPES:
            spec = copy.deepcopy(full)
            inner = spec
            for key in at[:-1]:
                inner = inner[key]
            inner[at[-1]] = value
            (tmp_path / "r.yaml").write_text(yaml.safe_dump(spec))
            try:
                load_spec(tmp_path / "r.yaml")
            except InputError:
                pass
            except Exception as e:  # the test is that there is none
                crashes.append((at, value, type(e).__name__))
    assert not crashes


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("/dev/zero", "not a regular file"),
        ("/dev/null", "not a regular file"),
        (".", "is a folder"),
        ("absent.csv", "does not exist"),
    ],
)
def test_a_hierarchy_file_that_is_a_device_or_a_folder_is_named_as_such(
    tmp_path, capsys, path, said
):
    """``hierarchy: /dev/zero`` "did not exist" (and read, it would never end)."""
    pd.DataFrame({"a": range(20), "b": range(20), "r": ["x", "y"] * 10}).to_csv(
        tmp_path / "d.csv", index=False
    )
    spec = {"release": "r", "source": "d.csv", "quasi_identifiers": ["a", "b", "r"],
            "recode": {"r": {"hierarchy": path}}, "method": {"name": "mdav", "k": 5}}  # fmt: skip
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(spec))
    assert main(["check", str(tmp_path / "r.yaml")]) == 2
    err = capsys.readouterr().err
    assert cli_error(err)[0] is Reason.SPEC_FIELD and said in err and err.count("\n") == 1


def _unreachable() -> str:
    """A path whose folder cannot be looked at (``/proc/1/cwd``: init's working folder)."""
    try:
        os.stat("/proc/1/cwd/x")
    except PermissionError:
        return "/proc/1/cwd"
    except OSError:
        pass
    pytest.skip("/proc/1/cwd can be looked at here (no /proc, or ptrace allowed)")


@pytest.mark.parametrize("field", ["source", "warehouse", "output", "reports", "rules_file"])
def test_a_path_that_cannot_be_looked_at_is_bad_input(tmp_path, capsys, field):
    """``PermissionError`` from a /proc path ended the preflight with exit 3."""
    spec = write_release(tmp_path, rows=20, **{field: f"{_unreachable()}/x.csv"})
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "PermissionError" not in err
    assert cli_error(err)[0] in (Reason.SPEC_FIELD, Reason.SOURCE_NOT_FILE, Reason.WAREHOUSE)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "release.yaml"]


@pytest.mark.parametrize("command", ["runs", "prune"])
def test_a_warehouse_that_cannot_be_looked_at_is_bad_input(tmp_path, capsys, command):
    assert main([command, "--warehouse", f"{_unreachable()}/w.duckdb"]) == 2
    assert cli_error(capsys.readouterr().err) == (Reason.WAREHOUSE, "warehouse")
