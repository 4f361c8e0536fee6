"""``on_violation: repair`` on the streamed path (issue 45): the records are repaired in
row-id ranges into ``edited.run_<id>``, and the release is the one the in-memory path
publishes, figure for figure.

The repair works on each record alone but for the margin of the strict rules (``<``,
``>``), taken at the largest values of the violating records of each decade over the whole
file: the ranges first gather those, and a file repaired in pieces is then the whole file
repaired, bit for bit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from prefect.logging import disable_run_logger

from sdcflow.cli.main import main
from sdcflow.core.linear.repair import merge_magnitudes, minimal_adjustment, repair_magnitudes
from sdcflow.errors import ParameterError
from sdcflow.expectations.rules import parse_rules
from sdcflow.preflight.plan import linear_constraints
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import edits as edits_tasks
from sdcflow.tasks.cells import streamed_path
from sdcflow.tasks.edits import repair_edits, repair_streamed
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse

RUN = "e" * 32
COLUMNS = ["turnover", "wages", "costs"]
RULES = ["turnover > 0", "wages >= 0", "costs <= turnover", "wages < 2000000"]


def _records(n: int = 600, seed: int = 1, missing: float = 0.04) -> np.ndarray:
    """Business records over several decades of size, a fifth breaking a rule, each value
    missing with probability ``missing``. Shape (n, 3)."""
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.integers(2, 7, n)[:, None]
    X = np.abs(rng.standard_normal((n, 3))) * scale
    bad = rng.random(n) < 0.2
    X[bad, 0] *= -rng.integers(0, 2, bad.sum())  # turnover <= 0 (0 breaks `> 0` too)
    X[rng.random(n) < 0.05, 1] = -rng.random() * 50  # negative wages
    X[rng.random(n) < 0.05, 1] = 3e6  # above the strict bound
    X[rng.random(X.shape) < missing] = np.nan
    if missing:
        X[5] = np.nan  # a record with no number: no rule can be checked on it
    return X


def _constraints():
    return linear_constraints(parse_rules(RULES), COLUMNS)


def test_a_file_repaired_in_pieces_with_the_files_magnitudes_is_the_whole_file_repaired():
    X = _records()
    X = X[~np.isnan(X).any(axis=1)]
    lc = _constraints()
    whole, moved = minimal_adjustment(X, lc)
    assert moved.sum() > 20
    pieces = np.array_split(np.arange(len(X)), 7)
    found: dict = {}
    for rows in pieces:
        merge_magnitudes(found, repair_magnitudes(X[rows], lc))
    assert len(found) > 1  # the violating records span several decades
    got = np.vstack([minimal_adjustment(X[rows], lc, magnitudes=found)[0] for rows in pieces])
    assert np.array_equal(got, whole)
    # each piece's own magnitudes move a record elsewhere: the first pass is needed
    alone = np.vstack([minimal_adjustment(X[rows], lc)[0] for rows in pieces])
    assert not np.array_equal(alone, whole)
    assert np.all(whole[moved, 0] > 0) and np.all(whole[moved, 1] < 2e6)


def test_magnitudes_missing_a_decade_or_beside_conditional_rows_are_refused():
    X = _records()
    X = X[~np.isnan(X).any(axis=1)]
    lc = _constraints()
    with pytest.raises(ParameterError, match="lack decade"):
        minimal_adjustment(X, lc, magnitudes={})
    with pytest.raises(ParameterError, match="conditional"):
        minimal_adjustment(X, lc, magnitudes={}, conditional=[(np.ones(len(X), dtype=bool), lc)])


def _spec(**extra: object) -> ReleaseSpec:
    return ReleaseSpec.model_validate(
        {
            "release": "repair",
            "source": "data.parquet",
            "quasi_identifiers": COLUMNS,
            "edits": RULES,
            "on_violation": "repair",
            "method": {"name": "mdav", "k": 3, "cell_size": 100},
            "checks": {"k_anonymity": 3},
            **extra,
        }
    )


@pytest.mark.parametrize("rows", [37, 1_000_000])
def test_the_streamed_repair_stores_the_in_memory_repaired_table(tmp_path, rows):
    X = _records()
    frame = pd.DataFrame(X, columns=COLUMNS)
    frame["sector"] = np.where(np.arange(len(X)) % 3 == 0, "retail", "industry")
    frame[ROW_ID] = np.arange(len(X), dtype=np.int64)
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    wh.write_frame("raw", RUN, frame)
    spec, lc = _spec(), _constraints()
    rules = parse_rules(RULES)
    with disable_run_logger():
        memory, count = repair_edits.fn(spec, wh, RUN, wh.read_frame("raw", RUN), rules, lc)
        done = repair_streamed.fn(spec, wh, RUN, rules, lc, rows)
    assert done.moved == count > 20 and done.changed
    streamed = wh.read_frame("edited", RUN)
    assert list(streamed.columns) == list(memory.columns)
    for c in COLUMNS:
        assert streamed[c].dtype == np.float64
        assert np.array_equal(
            streamed[c].to_numpy(), memory[c].to_numpy(np.float64), equal_nan=True
        ), c
    assert streamed["sector"].equals(memory["sector"])
    assert streamed[ROW_ID].equals(memory[ROW_ID])


def test_a_record_with_no_number_beside_a_strict_rule_is_kept_as_it_is(tmp_path):
    """No rule can be checked on a record missing every repaired column: the margins' pass
    skips it, as the repair does (it refused the record's empty matrix)."""
    X = np.array([[5.0, 1.0, 2.0], [-1.0, 3.0, 1.0], [np.nan, np.nan, np.nan]])
    frame = pd.DataFrame(X, columns=COLUMNS)
    frame[ROW_ID] = np.arange(3, dtype=np.int64)
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    wh.write_frame("raw", RUN, frame)
    rules = parse_rules(RULES)
    with disable_run_logger():
        memory, count = repair_edits.fn(
            _spec(), wh, RUN, wh.read_frame("raw", RUN), rules, _constraints()
        )
        done = repair_streamed.fn(_spec(), wh, RUN, rules, _constraints())
    assert done.moved == count == 1
    edited = wh.read_frame("edited", RUN)[COLUMNS].to_numpy()
    assert np.array_equal(edited, memory[COLUMNS].to_numpy(np.float64), equal_nan=True)
    assert np.isnan(edited[2]).all() and edited[1, 0] > 0


def test_a_streamed_repair_of_records_that_keep_every_rule_changes_nothing(tmp_path):
    X = np.abs(_records()) + 1.0
    X[:, 2] = np.minimum(X[:, 2], X[:, 0])
    X[:, 1] = np.minimum(X[:, 1], 1e6)
    frame = pd.DataFrame(X, columns=COLUMNS)
    frame[ROW_ID] = np.arange(len(X), dtype=np.int64)
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    wh.write_frame("raw", RUN, frame)
    with disable_run_logger():
        done = repair_streamed.fn(_spec(), wh, RUN, parse_rules(RULES), _constraints(), 50)
    assert (done.moved, done.changed) == (0, False)
    edited = wh.read_frame("edited", RUN)
    assert np.array_equal(edited[COLUMNS].to_numpy(), X, equal_nan=True)


def test_the_streamed_path_takes_a_repair_but_not_the_repair_of_a_conditional_rule():
    from sdcflow.methods.keys import Key

    keys = [Key(c, "numeric") for c in COLUMNS]
    assert streamed_path(_spec(), keys, parse_rules(RULES)) is None
    conditional = parse_rules(["if turnover > 100 then wages >= 1"])
    assert "conditional" in streamed_path(_spec(), keys, conditional)
    # refused, the rule keeps the release from being published; the groups keep it streamed
    assert streamed_path(_spec(on_violation="fail"), keys, conditional) is None


# --- the release, end to end --------------------------------------------------------------


def _release_spec(folder: Path, name: str, *, categorical: bool) -> Path:
    spec = {
        "release": "repair",
        "source": "data.parquet",
        "id_column": "id",
        "quasi_identifiers": [*COLUMNS, *(["sector"] if categorical else [])],
        "on_violation": "repair",
        "missing_values": [""],
        "edits": RULES,
        "method": {"name": "mdav", "k": 3, "cell_size": 120},
        # the dominance gate's figure, not its verdict, is compared: it reads the repaired
        # values (the records masked)
        "checks": {"k_anonymity": 3, "max_information_loss": 100, "max_p_dominated_groups": 500},
        "accept": {"looser_checks": ["max_p_dominated_groups"]},
        "output": f"published-{name}",
        "warehouse": f"warehouse-{name}.duckdb",
        "reports": f"reports-{name}",
        "seed": 3,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _manifest(folder: Path, name: str) -> dict:
    return json.loads((folder / f"published-{name}" / "repair" / "manifest.json").read_text())


# With categorical keys, a stratum's group with missing numbers is moved onto the rules on
# the piece's scale (the file's in memory: ``sdcflow.methods.pieces``), so that release is
# compared without missing numbers; the repair itself is the same either way (above).
@pytest.mark.parametrize(
    ("categorical", "missing"), [(False, 0.04), (True, 0.0)], ids=["numeric", "categorical"]
)
def test_a_streamed_release_with_repair_publishes_the_in_memory_release(
    tmp_path, prefect_api, monkeypatch, categorical, missing
):
    X = _records(1500, seed=4, missing=missing)
    frame = pd.DataFrame(X, columns=COLUMNS)
    if categorical:
        frame["sector"] = np.random.default_rng(2).choice(["retail", "industry"], len(X))
    frame.insert(0, "id", np.arange(len(X)))
    frame.to_parquet(tmp_path / "data.parquet", index=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(edits_tasks, "REPAIR_RANGE", 101)  # fifteen ranges, not one
    for name, rows in (("memory", str(10**9)), ("stream", "0")):
        monkeypatch.setenv("SDCFLOW_STREAMED_ROWS", rows)
        assert main(["release", _release_spec(tmp_path, name, categorical=categorical).name]) == 0
    for name in ("data.csv", "data.parquet"):
        memory = (tmp_path / "published-memory" / "repair" / name).read_bytes()
        assert (tmp_path / "published-stream" / "repair" / name).read_bytes() == memory, name
    memory, stream = _manifest(tmp_path, "memory"), _manifest(tmp_path, "stream")
    assert stream["method_details"]["path"] == "streamed"
    assert stream["edit_rules"]["repaired_records"] > 20
    assert stream["edit_rules"] == memory["edit_rules"]
    assert stream["edit_violations"] == memory["edit_violations"]
    figures = {c["check"]: c["figure"] for c in memory["checks"]}
    assert {c["check"]: c["figure"] for c in stream["checks"]} == pytest.approx(figures)
    assert [c["verdict"] for c in stream["checks"]] == [c["verdict"] for c in memory["checks"]]
    il_memory, il_stream = memory["information_loss"], stream["information_loss"]
    assert il_memory["against_repaired_records"] is not None
    for against in ("against_raw_file", "against_repaired_records"):
        assert il_stream[against] == pytest.approx(il_memory[against], rel=1e-9), against
    # the method's figure is the loss against the records masked: the repaired ones
    assert stream["method_details"]["information_loss"] == pytest.approx(
        il_stream["against_repaired_records"], rel=1e-12
    )
    disclosure = dict(stream["method_details"]["disclosure"])
    assert "not_computed" in disclosure.pop("suda")
    assert disclosure == {
        k: v for k, v in memory["method_details"]["disclosure"].items() if k != "suda"
    }
    # the repaired copy is confidential: the run recorded it, retention drops it with raw
    tables = Warehouse(tmp_path / "warehouse-stream.duckdb")
    with tables.connect(read_only=True) as con:
        schemas = {r[0] for r in con.execute("SELECT schema_name FROM audit.run_tables").fetchall()}
    assert {"raw", "edited", "masked"} <= schemas


def test_a_streamed_release_with_repair_never_reads_a_whole_table_into_the_flow(
    tmp_path, prefect_api, monkeypatch
):
    def refuse(*args, **kwargs):
        raise AssertionError("the streamed path read a whole table into the flow's process")

    frame = pd.DataFrame(_records(800, seed=6), columns=COLUMNS)
    frame.insert(0, "id", np.arange(len(frame)))
    frame.to_parquet(tmp_path / "data.parquet", index=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SDCFLOW_STREAMED_ROWS", "0")
    monkeypatch.setattr(Warehouse, "read_frame", refuse)
    assert main(["release", _release_spec(tmp_path, "stream", categorical=False).name]) == 0
    manifest = _manifest(tmp_path, "stream")
    assert manifest["method_details"]["path"] == "streamed"
    assert manifest["edit_rules"]["repaired_records"] > 0
