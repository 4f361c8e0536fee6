"""Fuzzy microaggregation within spatial cells (``cell_size``, issue #13 item 7): the cells
are pieces of the one map, the release does not depend on the map, and every guarantee holds
on the assembled release, counted here independently of the method's own bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest
from survey import expenditure_survey

from sdcflow.core.fuzzy.microaggregation import fuzzy_microaggregation, fuzzy_partition
from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.microaggregation.neighbours import spatial_cells
from sdcflow.core.parallel import part_map
from sdcflow.core.validation import standardize
from sdcflow.errors import InputError, Reason
from sdcflow.methods import METHODS
from sdcflow.methods.fuzzy import ConstrainedFuzzyParams, FuzzyParams, in_cells

COLUMNS = ["exp16", "exp7", "total"]


@pytest.fixture(scope="module")
def survey() -> tuple[np.ndarray, LinearConstraints]:
    """1200 records (expenditure 16 %, 7 %, total) violating total = 1.16 a + 1.07 b by
    noise, and the rules: that equality and a >= 10 (tests/test_fuzzy_anonymity.py's file,
    six times larger)."""
    return expenditure_survey(1200)


def _cell_of(X: np.ndarray, cell_size: int) -> np.ndarray:
    """The cell of every record, recomputed as an intruder would: recursive median cuts of
    the standardized records."""
    order, bounds = spatial_cells(standardize(X)[0], cell_size)
    cell = np.empty(len(X), dtype=np.int64)
    for c in range(len(bounds) - 1):
        cell[order[bounds[c] : bounds[c + 1]]] = c
    return cell


def test_cells_are_pieces_of_the_map_and_the_release_does_not_depend_on_it(survey):
    X, rules = survey
    params = ConstrainedFuzzyParams(k=5, cell_size=200, guarantee="both", restarts=1)
    method = METHODS["constrained_fuzzy"]
    seen: list[int] = []

    def backwards(fn, calls, label):  # another "cluster": the cells in reverse order
        assert label == "cell"
        seen.extend(args[0].shape[0] for args in calls)
        return [fn(*args) for args in calls[::-1]][::-1]

    serial = method.mask(X, COLUMNS, params, np.random.default_rng(7), rules)
    with part_map(backwards):
        mapped = method.mask(X, COLUMNS, params, np.random.default_rng(7), rules)
    np.testing.assert_array_equal(mapped.points, serial.points)
    np.testing.assert_array_equal(mapped.groups, serial.groups)
    np.testing.assert_array_equal(mapped.expected_sizes, serial.expected_sizes)
    # every piece held one cell's records only: at most cell_size, each record once
    assert len(seen) == 8 and max(seen) <= 200 and sum(seen) == len(X)
    assert serial.details["cells"] == 8
    assert serial.details["cell_size"] == 200
    assert serial.details["algorithm"] == "constrained_fuzzy in cells of 200"


def test_every_guarantee_holds_on_the_assembled_release(survey):
    X, rules = survey
    k, size = 5, 200
    params = ConstrainedFuzzyParams(k=k, cell_size=size, guarantee="both", restarts=1)
    result = METHODS["constrained_fuzzy"].mask(X, COLUMNS, params, np.random.default_rng(3), rules)
    released = result.points

    # crisp k: every released value (a centre) is shared by >= k records, counted on the
    # released rows themselves, not on the method's labels
    _, counts = np.unique(released, axis=0, return_counts=True)
    assert counts.min() >= k
    assert result.details["published_centres"] == counts.size
    assert result.details["published_centres_below_k"] == 0

    # edit rules on every released record: total = 1.16 exp16 + 1.07 exp7, exp16 >= 10
    eq = 1.16 * released[:, 0] + 1.07 * released[:, 1] - released[:, 2]
    assert np.abs(eq).max() <= 1e-9 * np.abs(released).max()
    assert released[:, 0].min() >= 10.0 - 1e-9

    # probabilistic k: the expected size of every centre, recomputed from the partition the
    # same seed fits (column sums of the draw distribution), is >= k and is what the release
    # reports; the sizes sum to n
    part = fuzzy_partition(
        X,
        k,
        constraints=rules,
        random_state=np.random.default_rng(3),
        fit=in_cells(size),
        **params.model_dump(include={"m1", "m2", "guarantee", "restarts", "escalations"}),
    )
    expected = np.bincount(part.leaf, weights=part.prob, minlength=len(part.centers))
    assert expected.min() >= k
    assert expected.sum() == pytest.approx(len(X), rel=1e-12)
    np.testing.assert_allclose(result.expected_sizes, expected, rtol=1e-12)
    assert result.details["expected_size"]["min"] == pytest.approx(expected.min())
    assert result.details["expected_size"]["centres"] == len(expected)
    assert result.details["candidate_centres"] == len(expected)

    # every record can be drawn only to centres of its own cell (the cells recomputed here)
    cell = _cell_of(X, size)
    rows = np.repeat(np.arange(len(X)), np.diff(part.indptr))
    centre_cell = np.full(len(part.centers), -1)
    centre_cell[part.leaf] = cell[rows]
    assert np.array_equal(centre_cell[part.leaf], cell[rows])
    # the release is that partition drawn: each record at a centre of its own cell
    np.testing.assert_array_equal(cell, centre_cell[result.groups])


def test_the_assignment_figures_cover_the_whole_release():
    """assignment_tv_mean is the mean over all n records of the mass their draw put on
    closed centres: with k close to the cell's size, closing happens; the figure equals the
    one recomputed from the partition and the release."""
    X = np.random.default_rng(5).standard_normal((600, 2))
    k, size = 5, 100
    kw = {"m1": 1.5, "m2": 1.5, "guarantee": "both", "restarts": 1}
    res = fuzzy_microaggregation(X, k, random_state=11, fit=in_cells(size), **kw)
    part = fuzzy_partition(X, k, random_state=11, fit=in_cells(size), **kw)
    used = np.bincount(res.labels, minlength=len(part.centers)) > 0
    # a closed centre is one no record was finally drawn to; every record's mass on those
    on_closed = np.add.reduceat(part.prob * ~used[part.leaf], part.indptr[:-1])
    assert res.details["assignment_tv_mean"] == pytest.approx(on_closed.mean(), rel=1e-9)
    assert res.details["assignment_tv_mean"] > 0
    assert res.details["realized_size"]["min"] >= k
    assert res.details["records"] == 600


def test_cell_size_below_2k_is_a_parameter_error(survey):
    X, rules = survey
    params = ConstrainedFuzzyParams(k=5, cell_size=9, guarantee="both")
    with pytest.raises(InputError) as e:
        METHODS["constrained_fuzzy"].mask(X, COLUMNS, params, np.random.default_rng(0), rules)
    assert e.value.code == Reason.PARAMETER


def test_the_refit_intruder_refits_in_the_same_cells(survey):
    X, _ = survey
    params = FuzzyParams(k=5, cell_size=300, restarts=1)
    result = METHODS["fuzzy"].mask(X, COLUMNS, params, np.random.default_rng(1), None)
    pieces: list[np.ndarray] = []

    def spy(fn, calls, label):
        pieces.extend(args[0] for args in calls)
        return [fn(*args) for args in calls]

    with part_map(spy):
        U = result.intruder.draw_distributions(X, result)
    # his fit ran cell by cell on the same cells: the standardized records of each cell
    Z = standardize(X)[0]
    order, bounds = spatial_cells(Z, 300)
    assert len(pieces) == len(bounds) - 1 == 4
    for c, piece in enumerate(pieces):
        np.testing.assert_array_equal(piece, Z[order[bounds[c] : bounds[c + 1]]])
    assert U.shape[0] == len(X)
    np.testing.assert_allclose(np.asarray(U.sum(axis=1)).ravel(), 1.0, rtol=1e-9)


def test_fuzzy_runs_under_dask_only_with_cell_size():
    for name in ("fuzzy", "constrained_fuzzy"):
        method = METHODS[name]
        assert method.scaling(method.params(name=name, k=5)) is None
        assert method.scaling(method.params(name=name, k=5, cell_size=5000)) == "cells"
    assert METHODS["mdav"].scaling(METHODS["mdav"].params(name="mdav", k=5)) == "cells"


def test_runner_dask_accepts_fuzzy_with_cell_size_and_names_the_fix_without(tmp_path):
    from survey import QIS, write_release

    from sdcflow.flows.runners import with_cli_options
    from sdcflow.preflight.plan import plan_release
    from sdcflow.spec.load import load_spec

    method = {"name": "constrained_fuzzy", "k": 5, "guarantee": "both"}
    without = write_release(tmp_path, rows=60, quasi_identifiers=QIS, method=method)
    with pytest.raises(InputError) as e:
        plan_release(with_cli_options(load_spec(without), runner="dask"))
    assert e.value.code == Reason.RUNNER
    with_cells = write_release(
        tmp_path,
        rows=60,
        spec_name="cells.yaml",
        quasi_identifiers=QIS,
        method={**method, "cell_size": 20},
    )
    plan_release(with_cli_options(load_spec(with_cells), runner="dask"))


@pytest.mark.flow
def test_dask_runner_publishes_the_local_fuzzy_release(tmp_path, prefect_api):
    """constrained_fuzzy with cell_size on two Dask workers (threads of an in-process
    cluster): the published files are byte for byte the local runner's, every cell ran as a
    ``mask-cell`` task run, the manifest records the cells, and the gates hold over the
    whole published file (k counted on the released keys here)."""
    import json

    import pandas as pd
    from survey import QIS
    from test_scale_out import _task_runs, release_local_and_on_dask

    from sdcflow.core.measures.anonymity import k_anonymity

    rows, k = 600, 5
    common = {
        "quasi_identifiers": QIS,
        "method": {
            "name": "constrained_fuzzy",
            "k": k,
            "cell_size": 100,
            "guarantee": "both",
            "restarts": 1,
        },
        "checks": {"k_anonymity": k, "probabilistic_k_anonymity": k},
        "seed": 11,
    }
    b = release_local_and_on_dask(tmp_path, rows, common)
    manifest = json.loads((b / "manifest.json").read_text())
    assert manifest["method"]["cell_size"] == 100
    details = manifest["method_details"]
    assert details["algorithm"] == "constrained_fuzzy in cells of 100"
    assert details["cells"] == 8  # 600 records halved three times
    names = _task_runs(manifest["run_id"])
    assert sum(n.startswith("mask-cell") for n in names) == 8
    figures = {c["check"]: c["figure"] for c in manifest["checks"]}
    published = pd.read_parquet(b / "data.parquet")
    assert figures["k_anonymity"] == k_anonymity(published[QIS]) >= k
    assert figures["probabilistic_k_anonymity"] == pytest.approx(details["expected_size"]["min"])


def test_the_report_skips_the_cheap_intruder_above_its_budget(survey, monkeypatch):
    """A large randomized release (records x released groups above MANIFEST_PAIRS) gets no
    per-record risk in the report unless a gate asks for it: the cheap intruder would hold
    every record's membership to every released centre (100 000 records ran out of memory)."""
    import sdcflow.gates.anonymity as anonymity
    from sdcflow.gates import GateContext, gather_evidence, run_gates

    X, _ = survey
    params = FuzzyParams(k=5, cell_size=300, restarts=1)
    result = METHODS["fuzzy"].mask(X, COLUMNS, params, np.random.default_rng(1), None)
    pairs = len(X) * np.unique(result.groups).size
    monkeypatch.setattr(anonymity, "MANIFEST_PAIRS", pairs - 1)
    ctx = GateContext(X, COLUMNS, result, params)
    run_gates(ctx, {})
    assert gather_evidence(ctx).record_risk is None
    monkeypatch.setattr(anonymity, "MANIFEST_PAIRS", pairs)
    ctx = GateContext(X, COLUMNS, result, params)
    run_gates(ctx, {})
    assert gather_evidence(ctx).record_risk.probabilities.shape == (len(X),)
