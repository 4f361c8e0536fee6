"""The dominance gates where they mean something: on the groups a method releases (refused
under a method that releases records, "not applicable" in figures), on by default at p = 10,
0 groups, for a release of group means of non-negative magnitudes, loosened only by an
explicit acceptance, and a refusal that names the remedy. Figures counted by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from sdcflow.gates import (
    GateContext,
    MeasureOptions,
    any_magnitude,
    contradictions,
    measure,
    run_gates,
    wanted_gates,
)
from sdcflow.methods import (
    METHODS,
    FuzzyParams,
    MaskResult,
    MdavParams,
    NoiseParams,
)

COLS = ["turnover", "employees"]
P_GATE = "max_p_dominated_groups"
NK_GATE = "max_nk_dominated_groups"
# group 0: turnover 1000, 20, 10: total - x1 - x2 = 10 < 10 % of 1000 -> fails the p % rule;
# group 1: 50, 40, 30: 30 >= 5 -> passes; employees 3, 2, 1 and 4, 4, 4 pass.
X = np.array([[1000, 3], [20, 2], [10, 1], [50, 4], [40, 4], [30, 4]], dtype=float)
GROUPS = np.array([0, 0, 0, 1, 1, 1])


def _ctx(method, X: np.ndarray = X, groups: np.ndarray | None = GROUPS, **kw) -> GateContext:
    points = X if groups is None else pd.DataFrame(X).groupby(groups).transform("mean").to_numpy()
    result = MaskResult(masked=pd.DataFrame(points, columns=COLS), points=points, groups=groups)
    return GateContext(X, COLS, result, method, **kw)


def test_every_method_declares_what_it_releases_of_groups():
    releases = {name: m.groups for name, m in METHODS.items()}
    assert {n for n, g in releases.items() if g == "means"} >= {
        "mdav",
        "ps",
        "univariate",
        "heterogeneous",
    }
    assert releases["box"] == "boxes"
    assert releases["fuzzy"] == releases["constrained_fuzzy"] == "centres"
    for name in ("noise", "rank_swap", "pram", "local_suppression"):
        assert releases[name] is None, name


@pytest.mark.parametrize("gate", [P_GATE, NK_GATE])
def test_a_dominance_gate_under_a_method_releasing_records_is_refused_in_one_line(gate):
    found = contradictions(NoiseParams(), {gate: 0})
    assert len(found) == 1 and "\n" not in found[0]
    assert f"checks.{gate}" in found[0] and "releases records" in found[0]
    assert contradictions(MdavParams(k=3), {gate: 0}) == []


def test_on_records_the_figure_is_not_applicable_rather_than_every_row_failing():
    # Noise publishes every record as itself: as singletons every group would "fail".
    ctx = _ctx(NoiseParams(), groups=None)
    assert np.isnan(measure(ctx, [P_GATE, NK_GATE])[P_GATE])
    (out,) = [o for o in run_gates(ctx, {P_GATE: 0}) if o.key == P_GATE]
    assert not out.checked and "not applicable" in out.note
    # ...and no default dominance gate for it
    assert P_GATE not in wanted_gates(_ctx(NoiseParams(), groups=None), {})


def test_group_means_of_magnitudes_get_the_p_percent_gate_at_zero_by_default():
    ctx = _ctx(MdavParams(k=3))
    assert wanted_gates(ctx, {})[P_GATE] == 0.0
    (out,) = [o for o in run_gates(_ctx(MdavParams(k=3)), {}) if o.key == P_GATE]
    assert out.figure == 1 and not out.passed
    # The refusal names the remedy, which keeps the key masked.
    assert "dominance: true" in out.note and "top-coding" in out.note
    assert "unmasked" not in out.note


def test_groups_released_alike_are_judged_as_one_class():
    # group 0 (1000, 20, 10) fails alone; group 1 (400, 330, 300) has its mean, 343.33, so
    # the release shows one class of six: 2060 - 1000 - 400 = 660 >= 100 passes. An
    # intruder tells classes apart, not the method's groups (as the streamed GROUP BY)
    alike = np.array([[1000, 3], [20, 3], [10, 3], [400, 3], [330, 3], [300, 3]], dtype=float)
    assert measure(_ctx(MdavParams(k=3), alike), [P_GATE])[P_GATE] == 0
    assert measure(_ctx(MdavParams(k=3)), [P_GATE])[P_GATE] == 1  # released apart: fails


def test_a_key_a_repair_made_negative_is_judged_on_its_contributions_as_given():
    # the repair moved turnover's 10 to -5 (no rule says turnover >= 0): the key was left
    # out of the rules, and the failing group with it
    repaired = X.copy()
    repaired[2, 0] = -5.0
    ctx = _ctx(MdavParams(k=3), repaired, raw=X)
    assert measure(ctx, [P_GATE])[P_GATE] == 1
    assert P_GATE in wanted_gates(ctx, {})


def test_the_remedy_is_one_the_release_can_take():
    # `dominance` refuses numeric keys with missing values, and merges on the p % rule
    # alone: a release grouping gaps, or failing the (n, k) rule, was told to set it
    gaps = _ctx(MdavParams(k=3))
    gaps.result.details = {"missing_numbers": "numeric keys with missing values: ..."}
    (out,) = [o for o in run_gates(gaps, {P_GATE: 0}) if o.key == P_GATE]
    assert not out.passed and "dominance: true" not in out.note
    assert "larger k" in out.note and "top-coding" in out.note
    on = _ctx(MdavParams(k=3, dominance=True))
    (out,) = [o for o in run_gates(on, {P_GATE: 0}) if o.key == P_GATE]
    assert "dominance: true" not in out.note and "at the gate's p" in out.note
    nk = [o for o in run_gates(_ctx(MdavParams(k=3)), {NK_GATE: 0}) if o.key == NK_GATE]
    assert not nk[0].passed and "dominance" not in nk[0].note and "larger k" in nk[0].note
    assert all("unmasked" not in o.note for o in [out, *nk])


def test_a_method_without_the_remedy_is_told_which_methods_have_it():
    from sdcflow.methods import HeterogeneousParams

    (out,) = [o for o in run_gates(_ctx(HeterogeneousParams(k=3)), {}) if o.key == P_GATE]
    assert out.threshold == 0 and not out.passed  # heterogeneous releases numeric means
    assert "a crisp microaggregation method with `dominance: true`" in out.note


def test_the_default_needs_a_non_negative_key_and_group_means():
    signed = X.copy()
    signed[:, 0] -= 100  # every key signed: none is a contribution
    signed[:, 1] = -signed[:, 1]
    assert not any_magnitude(signed)
    assert P_GATE not in wanted_gates(_ctx(MdavParams(k=3), signed), {})
    # fuzzy centres are groups (the gate may be asked) but not group means: no default
    assert P_GATE not in wanted_gates(_ctx(FuzzyParams(k=3)), {})
    assert contradictions(FuzzyParams(k=3), {P_GATE: 0}) == []
    # a signed key beside a magnitude: the magnitude is judged, the signed key left out
    mixed = X.copy()
    mixed[1, 1] = -1
    assert any_magnitude(mixed)
    (out,) = [o for o in run_gates(_ctx(MdavParams(k=3), mixed), {}) if o.key == P_GATE]
    assert out.figure == 1  # turnover's group 0


def test_the_spec_tightens_the_default_freely_and_loosens_it_only_with_an_acceptance():
    loose = {P_GATE: 5}
    (held,) = [o for o in run_gates(_ctx(MdavParams(k=3)), loose) if o.key == P_GATE]
    assert held.threshold == 0 and not held.passed
    assert "accept.looser_checks" in held.note
    accepted = _ctx(MdavParams(k=3), accept_looser=frozenset({P_GATE}))
    (out,) = [o for o in run_gates(accepted, loose) if o.key == P_GATE]
    assert out.threshold == 5 and out.passed and "accepted by the spec" in out.note
    # its own p: at p = 0.5 %, 10 >= 5 and group 0 passes
    opts = MeasureOptions.model_validate({"dominance_p": 0.5})
    (out,) = [o for o in run_gates(_ctx(MdavParams(k=3), options=opts), {}) if o.key == P_GATE]
    assert out.figure == 0 and out.passed


def test_blocks_are_judged_in_their_own_groups():
    # turnover grouped {0,1,2}, {3,4,5} (group 0 fails, as above); employees grouped
    # {0,3,4}, {1,2,5}: 3, 4, 4 and 2, 1, 4 pass. The tuple of block groups would make
    # 4 groups, {0}, {1,2}, {3,4}, {5}, of which the singletons 0 and 5 fail on turnover.
    from sdcflow.methods import BlockResult

    def part(col: int, groups: np.ndarray) -> MaskResult:
        means = pd.Series(X[:, col]).groupby(groups).transform("mean").to_numpy()[:, None]
        return MaskResult(
            masked=pd.DataFrame(means, columns=[COLS[col]]), points=means, groups=groups
        )

    blocks = [
        BlockResult([COLS[0]], part(0, GROUPS)),
        BlockResult([COLS[1]], part(1, np.array([0, 1, 1, 0, 0, 1]))),
    ]
    points = np.hstack([b.result.points for b in blocks])
    result = MaskResult(masked=pd.DataFrame(points, columns=COLS), points=points, blocks=blocks)
    ctx = GateContext(X, COLS, result, MdavParams(k=3))
    assert measure(ctx, [P_GATE])[P_GATE] == 1


def _spec(tmp_path, method: dict, **extra) -> str:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "id": range(60),
            "turnover": rng.uniform(100, 200, 60),
            "employees": rng.integers(1, 50, 60),
        }
    )
    frame.loc[7, "turnover"] = 2500.0  # one firm larger than two others and the rest together
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "release": "dominance",
        "source": "data.csv",
        "id_column": "id",
        "quasi_identifiers": COLS,
        "method": method,
        "output": "published/",
        "warehouse": "warehouse.duckdb",
        **extra,
    }
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    return str(tmp_path / "release.yaml")


def test_a_release_of_means_of_a_dominated_file_is_refused_by_default_and_the_remedy_publishes(
    tmp_path, capsys
):
    from sdcflow.cli.main import main

    assert main(["release", _spec(tmp_path, {"name": "mdav", "k": 3})]) == 1
    printed = capsys.readouterr()
    assert P_GATE in printed.err and "dominance: true" in printed.out
    assert not (tmp_path / "published" / "dominance").exists()
    path = _spec(tmp_path, {"name": "mdav", "k": 3, "dominance": True})
    assert main(["release", path]) == 0


def test_an_office_that_says_the_keys_are_no_contributions_publishes_with_it_recorded(tmp_path):
    import json

    from sdcflow.cli.main import main

    path = _spec(
        tmp_path,
        {"name": "mdav", "k": 3},
        checks={P_GATE: 60},
        accept={"looser_checks": [P_GATE]},
    )
    assert main(["release", path]) == 0
    manifest = json.loads((tmp_path / "published" / "dominance" / "manifest.json").read_text())
    assert manifest["spec"]["accept"]["looser_checks"] == [P_GATE]
    (out,) = [c for c in manifest["checks"] if c["check"] == P_GATE]
    assert out["threshold"] == 60 and "accepted by the spec" in out["note"]


def test_the_gate_under_noise_is_refused_before_any_run(tmp_path):
    from sdcflow.cli.main import main

    path = _spec(tmp_path, {"name": "noise"}, checks={P_GATE: 0})
    assert main(["check", path]) == 2
