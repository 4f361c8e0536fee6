"""The streamed path of a release (issue 45): every table stays in the warehouse, and the
release is the one the in-memory path publishes.

``SDCFLOW_STREAMED_ROWS=0`` sends these small files down the path a census takes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sdcflow.cli.main import main
from sdcflow.warehouse.warehouse import Warehouse


def _file(folder: Path, n: int, *, categorical: bool, seed: int = 0, missing: float = 0.02) -> None:
    """Numeric keys with missing values (and three categorical ones): the census's shape.
    ``missing=0``: complete records of sizes over five decades, a business register's."""
    rng = np.random.default_rng(seed)
    if missing:
        X = rng.standard_normal((n, 3)) * [1.0, 10.0, 100.0]
        X[rng.random(X.shape) < missing] = np.nan
    else:
        X = np.abs(rng.standard_normal((n, 3))) * 10.0 ** rng.integers(2, 7, n)[:, None]
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    if categorical:
        frame["sex"] = rng.choice(["f", "m"], n)
        frame["region"] = rng.choice(["north", "south", "east"], n)
    frame.insert(0, "id", np.arange(n))
    frame.to_parquet(folder / "data.parquet", index=False)


def _spec(folder: Path, name: str, *, categorical: bool, **extra: object) -> Path:
    spec = {
        "release": "census",
        "source": "data.parquet",
        "id_column": "id",
        "quasi_identifiers": ["x0", "x1", "x2", *(["sex", "region"] if categorical else [])],
        "on_violation": "fail",
        "missing_values": [""],
        "edits": ["x1 >= -1000"],
        "method": {"name": "mdav", "k": 5, "cell_size": 200},
        "checks": {"k_anonymity": 5, "max_information_loss": 100},
        "output": f"published-{name}",
        "warehouse": f"warehouse-{name}.duckdb",
        "reports": f"reports-{name}",
        "seed": 3,
        **extra,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _release(spec: Path, monkeypatch: pytest.MonkeyPatch, *, streamed: bool) -> int:
    monkeypatch.chdir(spec.parent)
    monkeypatch.setenv("SDCFLOW_STREAMED_ROWS", "0" if streamed else str(10**9))
    return main(["release", spec.name])


def _manifest(folder: Path, name: str) -> dict:
    return json.loads((folder / f"published-{name}" / "census" / "manifest.json").read_text())


def _assert_both_paths_publish_the_same_bytes(
    folder: Path, monkeypatch: pytest.MonkeyPatch, categorical: bool, masked: dict
) -> None:
    """Release ``folder``'s file in memory (``memory``) and streamed (``stream``) with the
    spec's fields ``masked``; both publish, the same CSV and Parquet bytes."""
    for name, streamed in (("memory", False), ("stream", True)):
        spec = _spec(folder, name, categorical=categorical, **masked)
        assert _release(spec, monkeypatch, streamed=streamed) == 0
    for name in ("data.csv", "data.parquet"):
        memory = (folder / "published-memory" / "census" / name).read_bytes()
        assert (folder / "published-stream" / "census" / name).read_bytes() == memory


def _rules_release(keys: list[str], edits: list[str]) -> dict:
    """The spec's fields of a release of magnitudes about its edit rules: the dominated
    groups the p % rule would count are accepted (a threshold no release reaches, under
    ``accept: looser_checks``), as an office that judges the keys no contributions would."""
    return {
        "quasi_identifiers": keys,
        "edits": edits,
        "checks": {"k_anonymity": 5, "max_information_loss": 100, "max_p_dominated_groups": 5000},
        "accept": {"looser_checks": ["max_p_dominated_groups"]},
    }


# ps (complete records only) projects on the keys' principal axis, whose last bits follow
# the keys' memory layout: the piece read its keys column by column and published other
# groups than memory did
@pytest.mark.parametrize("method", ["mdav", "ps"])
def test_the_streamed_path_publishes_the_bytes_of_the_in_memory_path(
    tmp_path, prefect_api, monkeypatch, method
):
    if method == "mdav":
        _file(tmp_path, 3000, categorical=False)
        masked: dict = {"method": {"name": method, "k": 5, "cell_size": 200}}
    else:
        _file(tmp_path, 1500, categorical=False, seed=4, missing=0.0)
        masked = {
            "method": {"name": method, "k": 3, "cell_size": 120},
            # never-negative keys: the dominance gate is on by default; its figure is compared
            "checks": {"k_anonymity": 3, "max_p_dominated_groups": 5000},
            "accept": {"looser_checks": ["max_p_dominated_groups"]},
        }
    _assert_both_paths_publish_the_same_bytes(tmp_path, monkeypatch, False, masked)
    memory, stream = _manifest(tmp_path, "memory"), _manifest(tmp_path, "stream")
    assert stream["method_details"]["path"] == "streamed"
    assert "path" not in memory["method_details"]
    figures = {c["check"]: c["figure"] for c in memory["checks"]}
    assert {c["check"]: c["figure"] for c in stream["checks"]} == pytest.approx(figures)
    assert stream["edit_violations"] == memory["edit_violations"]
    # the figures that need the whole file in one process say so, never a made-up value
    assert "not computed" in stream["method_details"]["lower_bound"]["status"]
    # the method's loss is in both manifests, whether its bound is computed or not
    il = memory["method_details"]["information_loss"]
    assert stream["method_details"]["information_loss"] == pytest.approx(il, rel=1e-9)
    # the rules were counted by SQL: no Great Expectations Data Docs on this path
    assert not list((tmp_path / "reports-stream").rglob("data-docs"))
    if method == "mdav":  # the values the release blanks, which IL does not count, are counted
        source = pd.read_parquet(tmp_path / "data.parquet")
        published = pd.read_csv(tmp_path / "published-stream" / "census" / "data.csv")
        keys = ["x0", "x1", "x2"]  # missing stays missing: every value lost was blanked
        on_disk = (source[keys].notna().sum() - published[keys].notna().sum()).to_dict()
        assert sum(on_disk.values()) > 0
        assert stream["method_details"]["numeric_values_blanked"] == on_disk
        assert memory["method_details"]["numeric_values_blanked"] == on_disk
        report = next((tmp_path / "reports-stream").rglob("report.html")).read_text()
        assert f"blanks {sum(on_disk.values())} values the file has" in report
        said = f"the release blanked {sum(on_disk.values())} values the file has"
        for manifest in (stream, memory):  # beside the IL figure, in the printed table too
            (il_gate,) = [c for c in manifest["checks"] if c["check"] == "max_information_loss"]
            assert said in il_gate["note"]


def test_a_streamed_release_with_categorical_keys_holds_k_over_every_key(
    tmp_path, prefect_api, monkeypatch
):
    _file(tmp_path, 3000, categorical=True)
    assert _release(_spec(tmp_path, "stream", categorical=True), monkeypatch, streamed=True) == 0
    assert _release(_spec(tmp_path, "memory", categorical=True), monkeypatch, streamed=False) == 0
    published = pd.read_csv(tmp_path / "published-stream" / "census" / "data.csv")
    keys = ["x0", "x1", "x2", "sex", "region"]
    sizes = published[keys].astype(str).value_counts(dropna=False)
    assert sizes.min() >= 5 and len(published) == 3000
    stream, memory = _manifest(tmp_path, "stream"), _manifest(tmp_path, "memory")
    k = {c["check"]: c for c in stream["checks"]}["k_anonymity"]
    assert k["figure"] == sizes.min() and k["verdict"] == "pass"
    il = {c["check"]: c["figure"] for c in stream["checks"]}["max_information_loss"]
    il_memory = {c["check"]: c["figure"] for c in memory["checks"]}["max_information_loss"]
    assert il <= il_memory * 1.02  # the strata's short key sets are kept inside the stratum


def test_a_streamed_release_never_reads_a_whole_table_into_the_flow(
    tmp_path, prefect_api, monkeypatch
):
    def refuse(*args, **kwargs):
        raise AssertionError("the streamed path read a whole table into the flow's process")

    monkeypatch.setattr(Warehouse, "read_frame", refuse)
    _file(tmp_path, 2000, categorical=True)
    assert _release(_spec(tmp_path, "stream", categorical=True), monkeypatch, streamed=True) == 0
    assert _manifest(tmp_path, "stream")["method_details"]["path"] == "streamed"


def test_a_streamed_release_refused_by_an_edit_rule_publishes_nothing_and_reports(
    tmp_path, prefect_api, monkeypatch
):
    _file(tmp_path, 2000, categorical=False)
    spec = _spec(tmp_path, "stream", categorical=False, edits=["x1 >= 0"])
    assert _release(spec, monkeypatch, streamed=True) == 1
    assert not (tmp_path / "published-stream").exists() or not any(
        (tmp_path / "published-stream").rglob("data.csv")
    )
    assert list((tmp_path / "reports-stream").rglob("report.html"))
    runs = Warehouse(tmp_path / "warehouse-stream.duckdb").runs()
    assert list(runs["status"]) == ["refused"]


def _sums_file(folder: Path, n: int, seed: int = 0) -> None:
    """Amounts whose total is their sum, each value missing with probability 0.03, and two
    categorical keys: a group's means over the records that have each column break the sum."""
    rng = np.random.default_rng(seed)
    a, b = rng.lognormal(5, 1, n).round(2), rng.lognormal(4, 1, n).round(2)
    frame = pd.DataFrame({"a": a, "b": b, "total": (a + b).round(2)})
    for c in ("a", "b", "total"):
        frame.loc[rng.random(n) < 0.03, c] = np.nan
    frame["sex"] = rng.choice(["f", "m"], n)
    frame["region"] = rng.choice(["north", "south", "east"], n)
    frame.insert(0, "id", np.arange(n))
    frame.to_parquet(folder / "data.parquet", index=False)


def test_strata_with_missing_numbers_move_onto_the_rules_in_the_files_units(
    tmp_path, prefect_api, monkeypatch
):
    """Each stratum is a piece; its groups that break ``total == a + b`` are moved in the
    whole file's standardized units, as in memory, not in the stratum's own (773 of 1,500
    records were released otherwise)."""
    _sums_file(tmp_path, 1500)
    masked = _rules_release(["a", "b", "total", "sex", "region"], ["total == a + b"])
    _assert_both_paths_publish_the_same_bytes(tmp_path, monkeypatch, True, masked)
    details = _manifest(tmp_path, "stream")["method_details"]
    assert details["path"] == "streamed" and details["streamed"]["pieces"] == 6
    # the pieces decided nothing the in-memory path decides over the whole file
    assert details["streamed"]["short_sets_joined_in_their_stratum"] == 0
    assert details["streamed"]["values_blanked_in_strata_short_of_k"] == 0
    moved = _manifest(tmp_path, "memory")["method_details"]["groups_moved_onto_edit_rules"]
    assert details["groups_moved_onto_edit_rules"] == moved > 0


def _staff_file(folder: Path, n: int, *, missing: float, seed: int = 0) -> None:
    """Whole numbers of staff and wages, most firms small, a few large, and the file keeping
    ``if employees <= 1 then wages <= 50``: a group of small firms and a large one can meet
    the condition with its mean staff (or its rounded mean) and break the consequent with
    its mean wages, as can a mean over the records that have each value."""
    rng = np.random.default_rng(seed)
    employees = np.floor(rng.lognormal(0, 1.6, n))
    wages = np.round(employees * 40 + rng.uniform(0, 50, n))
    wages[employees <= 1] = np.minimum(wages[employees <= 1], 50)
    frame = pd.DataFrame({"employees": employees, "wages": wages})
    frame["other"] = np.round(rng.lognormal(3, 1, n))
    frame = frame.astype("Int64")
    for c in ("employees", "wages", "other"):
        frame.loc[rng.random(n) < missing, c] = pd.NA
    frame["sex"] = rng.choice(["f", "m"], n)
    frame["region"] = rng.choice(["north", "south", "east"], n)
    frame.insert(0, "id", np.arange(n))
    frame.to_parquet(folder / "data.parquet", index=False)


@pytest.mark.parametrize("categorical", [False, True], ids=["numeric", "strata"])
@pytest.mark.parametrize("missing", [0.0, 0.02], ids=["complete", "gaps"])
def test_groups_keep_a_conditional_rule_on_the_streamed_path_as_in_memory(
    tmp_path, prefect_api, monkeypatch, categorical, missing
):
    """A conditional rule's consequent binds the groups whose values meet its condition, in
    every piece, in the whole file's units: the bytes the in-memory path publishes."""
    _staff_file(tmp_path, 1500, missing=missing)
    keys = ["employees", "wages", "other", *(["sex", "region"] if categorical else [])]
    masked = _rules_release(keys, ["wages >= 0", "if employees <= 1 then wages <= 50"])
    _assert_both_paths_publish_the_same_bytes(tmp_path, monkeypatch, categorical, masked)
    stream, memory = _manifest(tmp_path, "stream"), _manifest(tmp_path, "memory")
    assert stream["method_details"]["path"] == "streamed"
    kept = "groups_moved_onto_conditional_rules"
    if not missing:  # with gaps, groups keep it as they are formed (groups_moved_onto_edit_rules)
        assert stream["method_details"][kept] == memory["method_details"][kept] > 0
    assert stream["edit_violations"] == memory["edit_violations"]
    published = pd.read_parquet(tmp_path / "published-stream" / "census" / "data.parquet")
    small = published["employees"] <= 1
    assert (published.loc[small, "wages"].dropna() <= 50).all()


def test_groups_of_strata_released_alike_are_counted_apart_on_both_paths(
    tmp_path, prefect_api, monkeypatch
):
    """Three strata, each one group of five firms whose rounded mean (1.4 -> 1 employee,
    72 wages) breaks ``if employees <= 1 then wages <= 50``: three groups moved. In memory
    the groups were told apart by their values alone and counted once."""
    rng = np.random.default_rng(0)
    staff = rng.integers(2, 30, 60)
    frame = pd.DataFrame(
        {"employees": staff, "wages": staff * 40 + rng.integers(0, 50, 60), "region": "A"}
    )
    small = pd.DataFrame(
        {
            "employees": [1, 1, 1, 1, 3] * 3,
            "wages": [40, 40, 40, 40, 200] * 3,
            "region": np.repeat(["Z0", "Z1", "Z2"], 5),
        }
    )
    frame = pd.concat([frame, small], ignore_index=True)
    frame.insert(0, "id", np.arange(len(frame)))
    frame.to_parquet(tmp_path / "data.parquet", index=False)
    masked = _rules_release(
        ["employees", "wages", "region"], ["wages >= 0", "if employees <= 1 then wages <= 50"]
    )
    _assert_both_paths_publish_the_same_bytes(tmp_path, monkeypatch, True, masked)
    kept = "groups_moved_onto_conditional_rules"
    for name in ("memory", "stream"):
        assert _manifest(tmp_path, name)["method_details"][kept] == 3


def test_moves_onto_conditional_rules_alone_are_counted(tmp_path, prefect_api, monkeypatch):
    """Strata with missing numbers and conditional rules only: the groups their consequents
    moved were counted nowhere (the count asked for a plain linear rule)."""
    _staff_file(tmp_path, 1500, missing=0.02)
    masked = _rules_release(
        ["employees", "wages", "other", "sex", "region"], ["if employees <= 1 then wages <= 50"]
    )
    _assert_both_paths_publish_the_same_bytes(tmp_path, monkeypatch, True, masked)
    moved = [
        _manifest(tmp_path, name)["method_details"]["groups_moved_onto_edit_rules"]
        for name in ("memory", "stream")
    ]
    assert moved[0] == moved[1] > 0
