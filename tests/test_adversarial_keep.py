"""Issue 11, item 7: no advice that publishes a key unmasked, and identifying ``keep`` columns
are reported and gated.

* Parquet unsigned-integer keys and an all-missing key column are keys like any other (never
  refused with advice to move them to ``keep``).
* No message or doc of sdcflow suggests moving a column to ``keep``.
* A ``keep`` column that is unique per record (an e-mail) or splits the classes of the keys
  below k is gated by ``keep_k_anonymity`` (k if the intruder also knew the keep columns), on
  by default at the method's k; the spec can lower it only by naming it, and the manifest
  then states the k an intruder knowing the keep columns would face.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from adversarial import cli
from errorline import cli_error

from sdcflow.cli.main import main
from sdcflow.core.measures.anonymity import k_anonymity
from sdcflow.errors import InputError, Reason
from sdcflow.gates import GATES, GateContext, run_gates
from sdcflow.methods import MdavParams
from sdcflow.methods.blocks import mask_quasi_identifiers
from sdcflow.preflight.plan import plan_release
from sdcflow.spec.load import load_spec
from sdcflow.tasks.mask import keep_columns

REPO = Path(__file__).resolve().parents[1]


def _spec(tmp: Path, source: str, **fields) -> Path:
    body = {"release": "r", "source": source, "method": {"name": "mdav", "k": 5}, **fields}
    path = tmp / "release.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


@pytest.mark.parametrize("arrow_type", [pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()])
def test_unsigned_parquet_keys_are_numeric_keys(tmp_path, arrow_type):
    rng = np.random.default_rng(0)
    n = 60
    table = pa.table(
        {
            "a": pa.array(rng.integers(0, 200, n), type=arrow_type),
            "b": pa.array(rng.integers(0, 50, n), type=arrow_type),
        }
    )
    pq.write_table(table, tmp_path / "u.parquet")
    plan = plan_release(load_spec(_spec(tmp_path, "u.parquet", quasi_identifiers=["a", "b"])))
    assert plan.profile.types["a"].startswith("U")  # UTINYINT, USMALLINT, UINTEGER, UBIGINT
    assert [(k.name, k.kind, k.integer, k.decimals) for k in plan.resolved_keys] == [
        ("a", "numeric", True, 0),
        ("b", "numeric", True, 0),
    ]


def test_an_all_missing_key_column_is_a_key_not_advice(tmp_path):
    n = 40
    table = pa.table({"a": pa.array(np.arange(n) % 9), "gone": pa.nulls(n)})
    pq.write_table(table, tmp_path / "m.parquet")
    # Without declared missing values: refused, and the fix is to declare them, not `keep`.
    with pytest.raises(InputError) as e:
        plan_release(load_spec(_spec(tmp_path, "m.parquet", quasi_identifiers=["a", "gone"])))
    assert e.value.code == Reason.VALUES_MISSING
    assert "keep" not in str(e.value) and "missing_values" in str(e.value)
    spec = _spec(tmp_path, "m.parquet", quasi_identifiers=["a", "gone"], missing_values=[""])
    plan = plan_release(load_spec(spec))
    assert [k.kind for k in plan.resolved_keys] == ["numeric", "nominal"]


@pytest.mark.flow
def test_unsigned_keys_and_an_all_missing_key_are_released(tmp_path, prefect_api):
    rng = np.random.default_rng(2)
    n = 120
    table = pa.table(
        {
            "a": pa.array(rng.integers(0, 60, n), type=pa.uint32()),
            "b": pa.array(rng.integers(0, 500, n), type=pa.uint16()),
            "sex": pa.array(rng.choice(["F", "M"], n)),
            "gone": pa.nulls(n),
        }
    )
    pq.write_table(table, tmp_path / "u.parquet")
    spec = _spec(
        tmp_path, "u.parquet", quasi_identifiers=["a", "b", "sex", "gone"], missing_values=[""]
    )
    assert main(["release", str(spec)]) == 0
    out = pd.read_parquet(tmp_path / "published" / "r" / "data.parquet")
    assert str(out["a"].dtype) == "Int64" and str(out["b"].dtype) == "Int64"  # integers
    assert out["gone"].isna().all()
    manifest = json.loads((tmp_path / "published" / "r" / "manifest.json").read_text())
    assert manifest["method_details"]["disclosure"]["keys"] == {
        "a": "numeric",
        "b": "numeric",
        "sex": "nominal",
        "gone": "nominal",
    }
    assert {c["check"]: c["figure"] for c in manifest["checks"]}["k_anonymity"] >= 5


def test_no_message_or_doc_advises_moving_a_key_to_keep():
    """Every string of the package, the README and the docs pages: nothing tells a user to
    move, put or add an identifying column to ``keep``."""
    advice = re.compile(r"(move|put|add|list)\w*\s+(it|them|the columns?|\w+)?\s*(in)?to\s+`keep`",
                        re.IGNORECASE)  # fmt: skip
    texts = [p.read_text() for p in (REPO / "sdcflow").rglob("*.py")]
    texts.append((REPO / "README.md").read_text())
    texts += [p.read_text() for p in (REPO / "docs").rglob("*.md") if "_generated" not in p.parts]
    for text in texts:
        assert not advice.search(text), advice.search(text).group(0)


def _context(keep: pd.DataFrame, k: int = 5) -> GateContext:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(len(keep), 2))
    result = mask_quasi_identifiers(X, ["a", "b"], MdavParams(k=k), rng)
    return GateContext(X, ["a", "b"], result, MdavParams(k=k), keep=keep)


def test_keep_k_is_gated_by_default_with_the_method_k():
    n = 100
    unique = pd.DataFrame({"email": [f"person{i}@example.org" for i in range(n)]})
    outcomes = {o.key: o for o in run_gates(_context(unique), {})}
    assert outcomes["k_anonymity"].passed  # the masked keys alone are 5-anonymous...
    keep = outcomes["keep_k_anonymity"]  # ...but not with a unique column beside them
    assert keep.figure == 1 and keep.threshold == 5 and not keep.passed
    # A column that splits the classes (not unique): one region value per 3 records.
    regions = pd.DataFrame({"region": np.arange(n) % 3})
    assert run_gates(_context(regions), {})[-1].key == "keep_k_anonymity"
    split = {o.key: o for o in run_gates(_context(regions), {})}["keep_k_anonymity"]
    assert split.figure < 5 and not split.passed
    # A constant column hides nothing and reveals nothing: k unchanged.
    same = {o.key: o for o in run_gates(_context(pd.DataFrame({"c": ["x"] * n})), {})}
    assert same["keep_k_anonymity"].figure == same["k_anonymity"].figure
    # Naming a lower threshold is not enough: the default applies, and the outcome says so...
    named = {o.key: o for o in run_gates(_context(unique), {"keep_k_anonymity": 1})}
    assert not named["keep_k_anonymity"].passed and named["keep_k_anonymity"].threshold == 5
    assert "accept.looser_checks" in named["keep_k_anonymity"].note
    # ...the spec lowers it only by accepting it explicitly (accept: {looser_checks: [...]}).
    ctx = _context(unique)
    ctx.accept_looser = frozenset({"keep_k_anonymity"})
    lowered = {o.key: o for o in run_gates(ctx, {"keep_k_anonymity": 1})}
    assert lowered["keep_k_anonymity"].passed and lowered["keep_k_anonymity"].threshold == 1


def test_a_sparse_identifying_keep_column_is_gated_its_blanks_hide_nothing():
    """10 unique e-mails among 3,000 blank cells fail keep_k_anonymity: a blank does not
    match any value. sdcflow never suppresses a kept column, so its blanks are the source's
    own and count as a value."""
    n = 100
    email = pd.Series([None] * n, dtype=object)
    email[[3, 40, 77]] = ["a@example.org", "b@example.org", "c@example.org"]
    outcomes = {o.key: o for o in run_gates(_context(pd.DataFrame({"email": email})), {})}
    assert outcomes["k_anonymity"].passed
    assert outcomes["keep_k_anonymity"].figure == 1 and not outcomes["keep_k_anonymity"].passed
    # blanks are one value: a column blank for all but groups of k records changes nothing
    # where it does not split a class; by hand, a blank/filled split of a class of 5 gives 2
    ctx = _context(pd.DataFrame({"c": ["x"] * n}))
    labels = ctx.result.released_identifiers.astype(str).agg("|".join, axis=1)
    first = labels == labels.iloc[0]
    assert first.sum() >= 5
    split = pd.Series(["x"] * n, dtype=object)
    split[np.flatnonzero(first)[:2]] = None  # two of the first class blank, the rest "x"
    ctx = _context(pd.DataFrame({"c": split}))
    assert {o.key: o for o in run_gates(ctx, {})}["keep_k_anonymity"].figure == 2


def test_a_release_with_a_sparse_e_mail_in_keep_is_refused(tmp_path, prefect_api, capsys):
    rng = np.random.default_rng(7)
    n = 600
    frame = pd.DataFrame(
        {
            "region": rng.choice(["North", "South", "East"], n),
            "age": rng.integers(16, 90, n),
            "gross": np.round(rng.lognormal(10, 0.8, n)),
            "email": "",
        }
    )
    frame.loc[rng.choice(n, 6, replace=False), "email"] = [f"p{i}@example.org" for i in range(6)]
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = _spec(
        tmp_path,
        "data.csv",
        quasi_identifiers=["region", "age", "gross"],
        keep=["email"],
        missing_values=[""],
    )
    assert main(["release", str(spec)]) == 1
    assert "keep_k_anonymity" in capsys.readouterr().err
    assert not (tmp_path / "published" / "r").exists()


def test_keep_k_counts_every_key_jointly_when_the_keys_are_masked_in_blocks():
    # The intruder who knows the kept column knows every key too: keep_k counts the joint
    # tuple (before, block by block: a release whose joint tuple was unique passed it).
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 2))
    result = mask_quasi_identifiers(X, ["a", "b"], MdavParams(k=5), rng, None, [["a"], ["b"]])
    keep = pd.DataFrame({"c": ["x"] * 200})  # a constant: the joint k of the keys alone
    ctx = GateContext(X, ["a", "b"], result, MdavParams(k=5), keep=keep)
    joint = k_anonymity(result.released_identifiers)
    per_block = min(k_anonymity(result.masked[[c]]) for c in ("a", "b"))
    assert joint < 5 <= per_block  # the case the gate must see
    assert GATES["keep_k_anonymity"].compute(ctx) == joint


def _survey_with_email(tmp: Path, **fields) -> Path:
    frame = pd.read_csv(REPO / "examples" / "business_survey" / "data.csv").head(200)
    frame["email"] = [f"firm{i}@example.org" for i in range(len(frame))]
    frame.to_csv(tmp / "data.csv", index=False)
    qis = ["employees", "turnover", "wages", "other_costs", "total_costs", "profit", "region"]
    return _spec(
        tmp,
        "data.csv",
        id_column="respondent_id",
        quasi_identifiers=qis,
        keep=["email"],
        seed=1,
        method={"name": "mdav", "k": 5, "dominance": True},  # as the example release
        **fields,
    )


@pytest.mark.flow
def test_a_unique_keep_column_blocks_publication(tmp_path, prefect_api, capsys):
    spec = _survey_with_email(tmp_path)
    assert main(["release", str(spec)]) == 1
    captured = capsys.readouterr()
    err = captured.err
    assert "keep_k_anonymity" in err and "nothing was published" in err
    # a refusal prints the table of every check (figure, threshold, unit, verdict) as a
    # publication does, not only the failed check's name
    rows = {m[1]: m[2].split() for m in re.finditer(r"(?m)^  (\w+) +(.*)$", captured.out)}
    assert (
        rows["keep_k_anonymity"][:3] == ["1", ">=", "5"] and rows["keep_k_anonymity"][-1] != "pass"
    )
    assert rows["k_anonymity"][-1] == "pass"
    assert not (tmp_path / "published").exists()
    report = next((tmp_path / "reports" / "r").glob("*/report.html")).read_text()
    assert "if the intruder also knew the keep columns" in report
    # Lowered explicitly: published, and the manifest says what k an intruder knowing the
    # keep columns faces.
    spec = _survey_with_email(
        tmp_path, checks={"keep_k_anonymity": 1}, accept={"looser_checks": ["keep_k_anonymity"]}
    )
    assert main(["release", str(spec)]) == 0
    manifest = json.loads((tmp_path / "published" / "r" / "manifest.json").read_text())
    checks = {c["check"]: c for c in manifest["checks"]}
    assert (
        checks["keep_k_anonymity"]["figure"] == 1 and checks["keep_k_anonymity"]["threshold"] == 1
    )
    keep = manifest["method_details"]["disclosure"]["keep"]
    assert keep["k_with_keep"] == 1 and keep["distinct_share"]["email"] == 1.0
    assert checks["k_anonymity"]["figure"] >= 5


# -- issue 41, item 2: nested and binary columns published unchanged ---------------------------


def _nested_source(tmp: Path) -> None:
    n = 60
    rng = np.random.default_rng(3)
    table = pa.table(
        {
            "a": rng.normal(size=n),
            "b": rng.normal(size=n),
            "tags": pa.array([[i % 3, 1] for i in range(n)]),
            "pair": pa.array([[i % 2, 0] for i in range(n)], type=pa.list_(pa.int64(), 2)),
            "st": pa.array([{"x": i % 2, "y": "u"} for i in range(n)]),
            "mp": pa.array(
                [[("k", i % 2)] for i in range(n)], type=pa.map_(pa.string(), pa.int64())
            ),
            "bin": pa.array([bytes([i % 2]) for i in range(n)], type=pa.binary()),
            "fixed": pa.array([bytes([i % 2, 7]) for i in range(n)], type=pa.binary(2)),
        }
    )
    pq.write_table(table, tmp / "nested.parquet")


@pytest.mark.parametrize("column", ["tags", "pair", "st", "mp", "bin", "fixed"])
@pytest.mark.parametrize("role", ["keep", "sensitive"])
def test_a_nested_or_binary_unchanged_column_is_refused_at_preflight(
    tmp_path, capsys, column, role
):
    """A Parquet list, struct, map or binary column under ``keep:`` ended the mask step with
    ``TypeError: unhashable type`` (exit 3) after the warehouse and a failed run were written;
    data.csv, written beside data.parquet, has no faithful field for it: exit 2, nothing
    written."""
    _nested_source(tmp_path)
    spec = _spec(tmp_path, "nested.parquet", quasi_identifiers=["a", "b"], **{role: [column]})
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.COLUMN_TYPE, column) and err.count("\n") == 1
    assert f"`{role}:`" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nested.parquet", "release.yaml"]


def test_a_nested_keep_column_is_refused_by_a_real_process(tmp_path):
    _nested_source(tmp_path)
    spec = _spec(tmp_path, "nested.parquet", quasi_identifiers=["a", "b"], keep=["st"])
    done = cli("release", str(spec), cwd=tmp_path)
    out, err = done.communicate(timeout=300)
    assert done.returncode == 2, err
    assert cli_error(err) == (Reason.COLUMN_TYPE, "st") and err.count("\n") == 1 and not out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nested.parquet", "release.yaml"]


def test_keep_k_counts_equal_nested_values_as_equal(tmp_path):
    """Counted (Python API, a warehouse read back), a nested kept value is counted by a
    canonical text of it: equal lists or mappings are one value, not an unhashable crash."""
    n = 100
    lists = pd.DataFrame({"tags": [np.array([1, 2]) for _ in range(n)]})
    spec = load_spec(_spec(tmp_path, "x.parquet", quasi_identifiers=["a", "b"], keep=["tags"]))
    counted = keep_columns(spec, lists)
    ctx = _context(counted)
    outcomes = {o.key: o for o in run_gates(ctx, {})}
    assert outcomes["keep_k_anonymity"].figure == outcomes["k_anonymity"].figure  # a constant
    unique = pd.DataFrame({"tags": [{"id": i, "x": [i]} for i in range(n)]})
    outcomes = {o.key: o for o in run_gates(_context(keep_columns(spec, unique)), {})}
    assert outcomes["keep_k_anonymity"].figure == 1  # every record its own value
    # equal mappings written in another key order, arrays and lists of the same numbers
    mixed = pd.DataFrame({"tags": [{"a": 1, "b": [2]}, {"b": np.array([2]), "a": 1}, None]})
    counted = keep_columns(spec, mixed)["tags"]
    assert counted[0] == counted[1] and pd.isna(counted[2])
