"""A mixed-keys release end to end: categorical and numeric keys, missing values, recoding,
weights, integers with an equality rule; and the one-line refusals of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from errorline import cli_error

from sdcflow.cli.main import main
from sdcflow.core.measures.anonymity import match_counts
from sdcflow.errors import Reason

EDUCATION = ["primary", "secondary", "tertiary"]


def people(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """A synthetic person file: text, ordinal and integer keys, gaps, weights, a sum rule."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "person": np.arange(n),
            "age": rng.integers(18, 90, n),
            "sex": rng.choice(["F", "M"], n),
            "region": rng.choice(
                ["North", "South", "East", "West", "Islands"], n, p=[0.35, 0.3, 0.2, 0.13, 0.02]
            ),
            "education": rng.choice(EDUCATION, n),
            "salary": rng.integers(0, 5000, n),
            "bonus": rng.integers(0, 900, n),
            "health": rng.choice(["good", "fair", "poor"], n),
            "weight": rng.uniform(50, 400, n).round(2),
        }
    )
    frame["income"] = frame["salary"] + frame["bonus"]
    frame.loc[rng.random(n) < 0.05, "region"] = "?"
    frame = frame.astype({"salary": "Int64", "bonus": "Int64", "income": "Int64"})
    gaps = rng.random(n) < 0.04
    frame.loc[gaps, ["salary", "income"]] = pd.NA  # the rule is undetermined there
    return frame


def write_spec(tmp: Path, frame: pd.DataFrame | None = None, **overrides) -> Path:
    (people() if frame is None else frame).to_csv(tmp / "people.csv", index=False)
    spec = {
        "release": "people",
        "source": "people.csv",
        "id_column": "person",
        "quasi_identifiers": [
            "age",
            "sex",
            "region",
            {"name": "education", "type": "ordinal", "order": EDUCATION},
            "salary",
            "bonus",
            "income",
        ],
        "missing_values": ["?", ""],
        "weight_column": "weight",
        "sensitive": ["health"],
        "recode": {
            "age": {
                "bins": [0, 30, 45, 65, float("inf")],
                "labels": ["<30", "30-44", "45-64", "65+"],
                "closed": "left",  # [a, b), as the labels say
            },
            "region": {"map": {"Islands": "South"}},
        },
        "suppression": {"importance": ["sex", "age"]},
        "edits": ["income == salary + bonus"],
        "method": {"name": "mdav", "k": 5},
        "checks": {
            "k_anonymity": 5,
            "max_individual_risk": 1.0,
            "max_global_risk": 100,
            "l_diversity": 1,
        },
        "seed": 11,
        **overrides,
    }
    path = tmp / "release.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.mark.flow
def test_mixed_release_end_to_end(tmp_path, prefect_api, monkeypatch):
    from sdcflow.core.measures import anonymity

    counted: list[tuple[bytes, bytes, str]] = []  # codes, weights, convention of every count
    real = anonymity.codes_matching_sums

    def spy(codes, values, **kwargs):
        counted.append((codes.tobytes(), np.asarray(values).tobytes(), repr(kwargs)))
        return real(codes, values, **kwargs)

    monkeypatch.setattr(anonymity, "codes_matching_sums", spy)
    spec = write_spec(tmp_path)
    assert main(["release", str(spec)]) == 0
    # the released keys are counted once for the disclosure figures, the gates and the report
    assert len(counted) == len(set(counted)) >= 2
    out = tmp_path / "published" / "people"
    manifest = json.loads((out / "manifest.json").read_text())
    published = pd.read_parquet(out / "data.parquet")
    keys = ["age", "sex", "region", "education", "salary", "bonus", "income"]
    assert list(published.columns) == [*keys, "health", "weight"]
    # k over every key as published (identical rows, a blank a value of its own), counted again
    f, _ = match_counts(published[keys])
    assert f.min() >= 5
    checks = {c["check"]: c for c in manifest["checks"]}
    assert checks["k_anonymity"]["figure"] == f.min() and checks["k_anonymity"]["verdict"] == "pass"
    assert checks["max_individual_risk"]["unit"] == "probability (0..1)"
    # recoding applied before masking and recorded
    assert set(published["age"].dropna()) <= {"<30", "30-44", "45-64", "65+"}
    assert "Islands" not in set(published["region"].dropna())
    assert manifest["method_details"]["recoding"]["age"]["kind"] == "bins"
    assert manifest["method_details"]["recoding"]["age"]["closed"] == "left"
    assert manifest["spec"]["recode"]["region"]["map"] == {"Islands": "South"}
    # missing numbers stay missing (the 4 % gaps), nothing imputed; a group mixing gaps and
    # values releases the key missing for all of its records; integers stay integers
    source = people()
    assert published["salary"].isna().sum() >= source["salary"].isna().sum()
    assert str(published["salary"].dtype) == "Int64"
    csv_line = (out / "data.csv").read_text().splitlines()[1]
    assert ".0," not in csv_line
    # the equality rule holds on every published record that has its values...
    full = published.dropna(subset=["salary", "bonus", "income"])
    assert (full["income"] == full["salary"] + full["bonus"]).all()
    # ...and is undetermined (reported, not violated) where a value is missing
    edits = manifest["edit_rules"]
    assert edits["masked"]["R1"] == 0 and edits["masked_undetermined"]["R1"] > 0
    assert edits["raw_undetermined"]["R1"] == source["salary"].isna().sum()
    assert disclosure_k(manifest) == f.min()
    # weights published unchanged, risk computed with them, before and after
    assert np.allclose(np.sort(published["weight"]), np.sort(source["weight"]))
    disclosure = manifest["method_details"]["disclosure"]
    assert disclosure["keys"]["age"] == "ordinal"  # binned: its released kind, not "numeric"
    assert disclosure["risk"]["weighted"] is True
    assert disclosure["risk"]["after"]["max"] <= disclosure["risk"]["before"]["max"]
    assert sum(disclosure["risk"]["histogram_after"]["records"]) == len(published)
    suppressed = manifest["method_details"]["categorical_values_suppressed"]
    assert set(suppressed) == {"age", "sex", "region", "education"}
    report = next((tmp_path / "reports" / "people").glob("*/report.html")).read_text()
    assert "re-identification risk" in report and "values suppressed" in report
    assert ", ".join(keys) in report  # the summary names every key, not the numeric ones only
    con = duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True)
    assert con.execute("SELECT status FROM audit.runs").fetchone()[0] == "published"
    con.close()


def disclosure_k(manifest: dict) -> int:
    return manifest["method_details"]["disclosure"]["k_anonymity"]


def _one_line_refusal(capsys, spec: Path, code: Reason, named: str) -> None:
    assert main(["release", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err)[0] is code and named in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "keep" not in err  # no advice to publish a key unmasked
    assert not (spec.parent / "warehouse.duckdb").exists()


def test_a_key_type_that_cannot_be_used(tmp_path, capsys):
    table = pa.table(
        {
            "person": list(range(20)),
            "age": [30 + i % 7 for i in range(20)],
            "tags": [[i, i + 1] for i in range(20)],  # a list column
        }
    )
    pq.write_table(table, tmp_path / "people.parquet")
    spec = tmp_path / "release.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "release": "p",
                "source": "people.parquet",
                "quasi_identifiers": ["age", "tags"],
                "method": {"name": "mdav", "k": 5},
            }
        )
    )
    _one_line_refusal(capsys, spec, Reason.COLUMN_TYPE, "tags")


def test_a_recoding_naming_an_unknown_level(tmp_path, capsys):
    spec = write_spec(tmp_path, recode={"region": {"map": {"Atlantis": "South"}}})
    _one_line_refusal(capsys, spec, Reason.RECODING, "Atlantis")


def test_non_positive_weights(tmp_path, capsys):
    frame = people()
    frame.loc[[3, 8], "weight"] = [0.0, -2.5]
    spec = write_spec(tmp_path, frame)
    _one_line_refusal(capsys, spec, Reason.WEIGHTS, "weight")


def test_decimal_weights_a_float_does_not_hold(tmp_path, capsys):
    # A Parquet DECIMAL(38, 20) weight of 12.34567890123456789012 was published as
    # 12.345678901234567: changed, though weights are published unchanged (keep and
    # sensitive DECIMAL columns of that kind were already refused).
    from decimal import Decimal

    frame = people(40)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    weights = [Decimal("12.34567890123456789012")] * 39 + [Decimal("7.5")]
    table = table.set_column(
        table.schema.get_field_index("weight"),
        "weight",
        pa.array(weights, type=pa.decimal128(38, 20)),
    )
    pq.write_table(table, tmp_path / "people.parquet")
    spec = write_spec(tmp_path, frame, source="people.parquet")
    _one_line_refusal(capsys, spec, Reason.WEIGHTS, "weight")


def test_weights_whose_total_overflows(tmp_path, capsys):
    # Each weight is finite, but F (their sum over a key combination) would be infinite: the
    # refusal comes in one line, not from the mask step's internal "Fk must be ... finite".
    frame = people()
    frame["weight"] = 1.7e308
    spec = write_spec(tmp_path, frame)
    _one_line_refusal(capsys, spec, Reason.WEIGHTS, "weight")


def test_an_empty_missing_values_list_declares_nothing(tmp_path, capsys):
    # `missing_values: []` names no token, so it means what leaving the key out means: the
    # keys' empty cells are refused (it let them through, matching any value in k), and the
    # spec hash is that of the spec without the key.
    from sdcflow.spec.load import load_spec

    spec = write_spec(tmp_path, missing_values=[])
    _one_line_refusal(capsys, spec, Reason.VALUES_MISSING, "salary")
    body = yaml.safe_load(spec.read_text())
    loaded = load_spec(spec)
    assert loaded.missing_values is None
    del body["missing_values"]
    spec.write_text(yaml.safe_dump(body))
    assert load_spec(spec).sha256() == loaded.sha256()


def test_a_missing_token_that_is_also_a_level(tmp_path, capsys):
    spec = write_spec(
        tmp_path,
        missing_values=["?", "", "secondary"],
    )
    _one_line_refusal(capsys, spec, Reason.MISSING_TOKEN, "education")


def test_a_missing_token_named_by_a_hierarchy_file(tmp_path, capsys):
    rows = ["North;Mainland", "South;Mainland", "East;Mainland", "West;Mainland", "?;Unknown"]
    (tmp_path / "regions.csv").write_text("\n".join(rows) + "\n")
    spec = write_spec(tmp_path, recode={"region": {"hierarchy": "regions.csv", "level": 1}})
    _one_line_refusal(capsys, spec, Reason.MISSING_TOKEN, "region")


def test_a_number_column_with_an_undeclared_token(tmp_path, capsys):
    frame = people()
    frame["salary"] = frame["salary"].astype(object)
    frame.loc[5, "salary"] = "n/a"
    spec = write_spec(tmp_path, frame)
    _one_line_refusal(capsys, spec, Reason.COLUMN_TYPE, "salary")


def test_the_declaration_an_undeclared_token_suggests_is_valid_yaml(tmp_path, capsys):
    # It read `{name: salary, type: nominal}}`: pasted into the spec, not valid YAML.
    frame = people()
    frame["salary"] = frame["salary"].astype(object)
    frame.loc[5, "salary"] = "n/a"
    spec = write_spec(tmp_path, frame)
    assert main(["release", str(spec)]) == 2
    err = capsys.readouterr().err
    suggested = err[err.index("{name:") : err.rindex("}") + 1]
    assert yaml.safe_load(suggested) == {"name": "salary", "type": "nominal"}


def test_an_ordinal_text_key_without_order(tmp_path, capsys):
    qis = ["age", "sex", {"name": "region", "type": "ordinal"}, "salary"]
    spec = write_spec(tmp_path, quasi_identifiers=qis, recode={}, edits=[], suppression={})
    _one_line_refusal(capsys, spec, Reason.COLUMN_TYPE, "region")


@pytest.mark.parametrize(
    "method",
    [
        {"name": "box", "k": 5},
        {"name": "fuzzy", "k": 5},
        {"name": "ps", "k": 5},
        {"name": "mdav", "k": 5, "refine": True},
    ],
)
def test_a_method_not_applied_to_missing_numbers_is_refused(tmp_path, capsys, method):
    """With numeric keys only, some missing, a method not applied to missing numbers is
    refused, rather than replaced by MDAV on the values present while the manifest and the
    report name the spec's method (box would publish points, no boxes, and run none of
    box's gates)."""
    table = pa.table(
        {
            "age": [None if i % 9 == 0 else 20 + i % 37 for i in range(60)],
            "income": [1000.0 + 37 * i for i in range(60)],
        }
    )
    pq.write_table(table, tmp_path / "people.parquet")
    spec = tmp_path / "release.yaml"
    fields = {"release": "p", "source": "people.parquet", "quasi_identifiers": ["age", "income"]}
    fields["missing_values"] = [""]
    spec.write_text(yaml.safe_dump({**fields, "method": method}))
    _one_line_refusal(capsys, spec, Reason.SPEC_CONTRADICTION, "age (7 missing)")
    # plain mdav is what runs, so it is allowed (preflight only: no flow here)
    from sdcflow.preflight.plan import plan_release
    from sdcflow.spec.load import load_spec

    spec.write_text(yaml.safe_dump({**fields, "method": {"name": "mdav", "k": 5}}))
    assert plan_release(load_spec(spec)).resolved_keys
    # and so in spatial cells (a large file): MDAV-generic runs within each cell
    spec.write_text(yaml.safe_dump({**fields, "method": {"name": "mdav", "k": 5, "cell_size": 20}}))
    assert plan_release(load_spec(spec)).resolved_keys


@pytest.mark.parametrize(
    "method", [{"name": "fuzzy", "k": 3, "guarantee": "both"}, {"name": "ps", "k": 3}]
)
def test_a_method_not_applied_to_missing_numbers_in_strata_is_refused(tmp_path, capsys, method):
    """With categorical keys too, the strata where a number is missing are not masked with
    MDAV-generic while `strategy` says the spec's method masked the numeric keys."""
    table = pa.table(
        {
            "age": [None if i % 9 == 0 else 20 + i % 37 for i in range(60)],
            "income": [1000.0 + 37 * i for i in range(60)],
            "sex": ["F" if i % 2 else "M" for i in range(60)],
        }
    )
    pq.write_table(table, tmp_path / "people.parquet")
    spec = tmp_path / "release.yaml"
    fields = {
        "release": "p",
        "source": "people.parquet",
        "quasi_identifiers": ["age", "income", "sex"],
        "missing_values": [""],
    }
    spec.write_text(yaml.safe_dump({**fields, "method": method}))
    _one_line_refusal(capsys, spec, Reason.SPEC_CONTRADICTION, "age (7 missing)")


def test_a_boolean_key_is_published_as_booleans():
    # Booleans are numeric to pandas: the released labels were coerced as numbers, so every
    # value of the key was published missing while the manifest said none had changed.
    from sdcflow.methods import MdavParams
    from sdcflow.methods.keys import Key
    from sdcflow.methods.mixed import mask_keys

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"smoker": rng.random(100) < 0.5, "income": rng.integers(0, 900, 100)})
    keys = [Key("smoker", "nominal"), Key("income", "numeric", decimals=0, integer=True)]
    result = mask_keys(frame, keys, MdavParams(k=5), rng)
    released = result.masked["smoker"]
    assert result.details["categorical_values_changed"]["smoker"] == 0
    assert released.notna().all()
    assert (released.astype(bool).to_numpy() == frame["smoker"].to_numpy()).all()


@pytest.mark.parametrize("source", ["csv", "parquet"])
def test_a_key_column_without_any_value_is_planned_not_a_crash(tmp_path, source):
    """A key column where every value is missing (all `?` in a CSV, all null in Parquet) is
    planned, not a crash (``int(None)``, exit 3): DuckDB's count_if is NULL, not 0, when its
    condition is NULL on every row."""
    from sdcflow.preflight.plan import plan_release
    from sdcflow.spec.load import load_spec

    n = 60
    income = [1000.0 + 37 * i for i in range(n)]
    if source == "csv":
        pd.DataFrame({"bonus": ["?"] * n, "income": income}).to_csv(
            tmp_path / "people.csv", index=False
        )
        tokens = ["?"]
    else:
        table = pa.table({"bonus": pa.array([None] * n, pa.float64()), "income": income})
        pq.write_table(table, tmp_path / "people.parquet")
        tokens = [""]
    spec = tmp_path / "release.yaml"
    fields = {
        "release": "p",
        "source": f"people.{source}",
        "quasi_identifiers": ["bonus", "income"],
    }
    fields |= {"missing_values": tokens, "method": {"name": "mdav", "k": 5, "cell_size": 20}}
    spec.write_text(yaml.safe_dump(fields))
    plan = plan_release(load_spec(spec))
    assert [k.name for k in plan.resolved_keys] == ["bonus", "income"]
    # declared numeric, the column of nothing but tokens is a numeric key (it read as text,
    # and "declared numeric but reads as VARCHAR" told the user to declare the declared token)
    fields["quasi_identifiers"] = [{"name": "bonus", "type": "numeric"}, "income"]
    spec.write_text(yaml.safe_dump(fields))
    plan = plan_release(load_spec(spec))
    assert [k.kind for k in plan.resolved_keys] == ["numeric", "numeric"]


def test_a_rule_reading_a_binned_key_as_a_number_is_refused_before_the_run(tmp_path, capsys):
    # age is published as bin labels: the rule could not be evaluated on the released
    # records and the run ended at the post-release validation ("ConversionException")
    rules = ["income == salary + bonus", "if age >= 65 then bonus <= 900"]
    spec = write_spec(tmp_path, edits=rules)
    assert main(["release", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.RULE_NOT_CHECKABLE, "R2") and "bin labels" in err
    assert "Traceback" not in err and not (tmp_path / "warehouse.duckdb").exists()


@pytest.mark.flow
def test_a_warning_rule_reading_a_binned_key_is_listed_not_checked(tmp_path, prefect_api):
    rules = [
        "income == salary + bonus",
        {"rule": "if age >= 65 then bonus <= 900", "severity": "warning"},
    ]
    spec = write_spec(tmp_path, edits=rules)
    assert main(["release", str(spec)]) == 0
    manifest = json.loads((tmp_path / "published" / "people" / "manifest.json").read_text())
    assert manifest["edit_rules"]["not_checked_after_masking"] == ["R2"]
