"""The release spine end to end: a real Prefect API, a real DuckDB file, real files."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from errorline import cli_error
from survey import EXAMPLE, QIS, write_release

from sdcflow.cli.main import main
from sdcflow.errors import Reason
from sdcflow.warehouse import publish as publish_mod

pytestmark = pytest.mark.flow


def make_release(tmp: Path, rows: int = 400, **overrides) -> Path:
    """A spec + a slice of the example survey in ``tmp``; returns the spec path."""
    spec = {
        "edits": ["total_costs == wages + other_costs", "profit == turnover - total_costs"],
        "checks": {"k_anonymity": 5, "max_information_loss": 40},
        "seed": 7,
        **overrides,
    }
    return write_release(tmp, rows=rows, **spec)


def read_artifacts(keys: list[str]) -> dict[str, str]:
    """Latest artifact data by key, straight from the REST API (Prefect 3.8's client sends
    null filter fields that its own server rejects)."""
    import httpx
    from prefect.settings import PREFECT_API_URL

    body = {
        "artifacts": {"key": {"any_": keys}},
        "flow_runs": {},
        "task_runs": {},
        "limit": 50,
        "offset": 0,
        "sort": "CREATED_DESC",
    }
    response = httpx.post(f"{PREFECT_API_URL.value()}/artifacts/filter", json=body, timeout=30)
    response.raise_for_status()
    out: dict[str, str] = {}
    for item in response.json():
        out.setdefault(
            item["key"], json.dumps(item["data"]) if item["type"] == "table" else item["data"]
        )
    return out


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_release_publishes_with_manifest(tmp_path, prefect_api, capsys):
    spec = make_release(tmp_path)
    assert main(["release", str(spec)]) == 0
    out = tmp_path / "published" / "survey"
    assert sorted(p.name for p in out.iterdir()) == [
        ".sdcflow-release",
        "data.csv",
        "data.parquet",
        "manifest.json",
    ]
    manifest = json.loads((out / "manifest.json").read_text())
    for name in ("data.csv", "data.parquet"):
        digest = hashlib.sha256((out / name).read_bytes()).hexdigest()
        assert manifest["files"][name]["sha256"] == digest
    assert manifest["rows"] == 400
    assert manifest["method"] == {
        "name": "mdav", "k": 5, "standardize": True, "refine": None, "dominance": {"p": 10.0},
        "cell_size": None,
    }  # fmt: skip
    details = manifest["method_details"]  # the loss, a bound below any partition's, the ratio
    assert 0 < details["information_loss_lower_bound"] <= details["information_loss"]
    assert "seed" not in manifest["spec"]  # the seed is a secret
    assert {c["check"]: c["verdict"] for c in manifest["checks"]} == {
        "max_edit_violations": "pass",
        "max_p_dominated_groups": "pass",  # turnover, wages...: magnitudes, gated by default
        "k_anonymity": "pass",
        "max_information_loss": "pass",
    }
    published = pd.read_parquet(out / "data.parquet")
    assert list(published.columns) == [*QIS, "region"]  # no id, no row id, no dropped column
    original = pd.read_csv(tmp_path / "data.csv")
    assert published.groupby(QIS).size().min() >= 5
    # Linear edit identities survive microaggregation (group means are linear).
    assert (published.total_costs - published.wages - published.other_costs).abs().max() < 1e-9
    # No original quasi-identifier tuple is published.
    raw_tuples = set(map(tuple, original[QIS].to_numpy(float)))
    assert not raw_tuples & set(map(tuple, published[QIS].to_numpy(float)))
    pd.testing.assert_frame_equal(published, pd.read_csv(out / "data.csv"), check_dtype=False)
    # The audit trail has the run and its checks.
    con = duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True)
    status, sha = con.execute("SELECT status, spec_sha256 FROM audit.runs").fetchone()
    n_checks = con.execute("SELECT count(*) FROM audit.checks").fetchone()[0]
    schemas = {
        r[0] for r in con.execute("SELECT schema_name FROM information_schema.schemata").fetchall()
    }
    con.close()
    assert status == "published" and sha == manifest["spec_sha256"] and n_checks == 4
    assert {"raw", "edited", "masked", "published", "audit"} <= schemas
    assert main(["runs", str(spec)]) == 0
    assert "published" in capsys.readouterr().out
    # The Prefect artifacts carry the checks and the decision, and no record value.
    artifacts = read_artifacts(["survey-summary", "survey-checks"])
    assert set(artifacts) == {"survey-summary", "survey-checks"}
    summary = artifacts["survey-summary"]
    assert "k_anonymity" in summary and "Decision:** published" in summary
    for value in original["turnover"].astype(str).unique()[:200]:
        assert f"| {value} " not in summary


def test_failed_check_exits_1_and_publishes_nothing(tmp_path, prefect_api, capsys):
    spec = make_release(tmp_path, method={"name": "mdav", "k": 3}, checks={"k_anonymity": 5})
    assert main(["release", str(spec)]) == 1
    # The refused run still explains itself in its report folder.
    (report,) = (tmp_path / "reports" / "survey").glob("*/report.html")
    assert "REFUSED" in report.read_text() and "k_anonymity" in report.read_text()
    assert "IL / bound" in report.read_text()  # the loss, its lower bound, their ratio
    err = capsys.readouterr().err
    assert "k_anonymity" in err and "nothing was published" in err
    assert "Traceback" not in err
    assert not (tmp_path / "published" / "survey").exists()
    con = duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True)
    assert con.execute("SELECT status FROM audit.runs").fetchone()[0] == "refused"
    con.close()


def test_check_command_does_not_publish(tmp_path, prefect_api):
    spec = make_release(tmp_path)
    assert main(["check", str(spec)]) == 0
    assert not (tmp_path / "published").exists()
    assert len(list((tmp_path / "reports" / "survey").glob("*/report.html"))) == 1


def test_report_is_published_only_when_asked(tmp_path, prefect_api):
    spec = make_release(tmp_path, publish_report=True)
    assert main(["release", str(spec)]) == 0
    out = tmp_path / "published" / "survey"
    manifest = json.loads((out / "manifest.json").read_text())
    digest = hashlib.sha256((out / "report.html").read_bytes()).hexdigest()
    assert manifest["files"]["report.html"]["sha256"] == digest


def test_failed_publication_leaves_previous_release_intact(
    tmp_path, prefect_api, monkeypatch, capsys
):
    spec = make_release(tmp_path)
    assert main(["release", str(spec)]) == 0
    out = tmp_path / "published" / "survey"
    before = tree_bytes(out)

    # Second run with another k; the publish step dies after the data files are written.
    make_release(tmp_path, method={"name": "mdav", "k": 6, "dominance": True})
    real_fsync = publish_mod._fsync_path

    def dying_fsync(path: Path) -> None:
        if path.name == "manifest.json":
            raise OSError("disk vanished mid-publication")
        real_fsync(path)

    monkeypatch.setattr(publish_mod, "_fsync_path", dying_fsync)
    assert main(["release", str(spec)]) == 3
    assert "disk vanished" in capsys.readouterr().err
    assert tree_bytes(out) == before  # byte for byte
    assert [p.name for p in out.parent.iterdir()] == ["survey"]  # no partial directory


def test_recover_restores_a_release_set_aside_by_a_crash(tmp_path):
    out = tmp_path / "published"
    dead = 2**22 + 12345  # above the default pid_max: no such process
    key = "0123456789abcdef" * 2
    # a release set aside by the two-rename fallback, its run killed before the second rename
    publish_mod.write_release(out, "survey", pd.DataFrame({"x": [1]}), {"run_id": "a" * 32})
    (out / "survey").rename(out / f".survey.old-{dead}-{key}")
    (out / f".survey.tmp-{dead}-{key[::-1]}").mkdir()  # a dead run's, empty
    live = out / f".survey.tmp-{os.getpid()}-{key}"
    live.mkdir()  # a live run's: left alone
    foreign = out / f".survey.tmp-{dead}-{'f' * 32}"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not sdcflow's")  # no marker: not ours, left alone
    publish_mod.recover(out)
    assert sorted(p.name for p in out.iterdir()) == sorted([live.name, foreign.name, "survey"])
    assert pd.read_parquet(out / "survey" / "data.parquet")["x"].tolist() == [1]
    assert publish_mod.published_run(out / "survey", "survey") == "a" * 32


def test_republish_replaces_atomically(tmp_path):
    out = tmp_path / "published"
    first = pd.DataFrame({"a": [1.0, 2.0]})
    second = pd.DataFrame({"a": [3.0, 4.0, 5.0]})
    publish_mod.write_release(out, "r", first, {"release": "r"})
    publish_mod.write_release(out, "r", second, {"release": "r"})
    assert pd.read_parquet(out / "r" / "data.parquet")["a"].tolist() == [3.0, 4.0, 5.0]
    assert json.loads((out / "r" / "manifest.json").read_text())["rows"] == 3
    assert [p.name for p in out.iterdir()] == ["r"]


# -- bad input: one clear line, exit 2, nothing written ---------------------------------------


def _bad_source(tmp: Path, kind: str) -> dict:
    frame = pd.read_csv(EXAMPLE / "data.csv").head(50)
    if kind == "missing_file":
        return {"source": "nope.csv"}
    if kind == "empty_file":
        (tmp / "empty.csv").write_text("")
        return {"source": "empty.csv"}
    if kind == "header_only":
        (tmp / "hdr.csv").write_text(",".join(frame.columns) + "\n")
        return {"source": "hdr.csv"}
    if kind == "non_numeric":
        frame["wages"] = frame["wages"].astype(str)
        frame.loc[3, "wages"] = "n/a"
        frame.to_csv(tmp / "data.csv", index=False)
        return {}
    if kind == "missing_values":
        frame.loc[[2, 9], "turnover"] = None
        frame.to_csv(tmp / "data.csv", index=False)
        return {}
    if kind == "absent_column":
        return {"quasi_identifiers": [*QIS, "assets"]}
    if kind == "k_too_large":
        return {"method": {"name": "mdav", "k": 500}}
    if kind == "k_below_2":
        return {"method": {"name": "mdav", "k": 1}}
    if kind == "duplicate_columns":
        text = (tmp / "data.csv").read_text().replace("other_costs", "wages", 1)
        (tmp / "dup.csv").write_text(text)
        return {"source": "dup.csv"}
    if kind == "unknown_method":
        return {"method": {"name": "swap", "k": 5}}
    if kind == "corrupt_parquet":
        (tmp / "data.parquet").write_bytes(b"PAR1 this is not parquet")
        return {"source": "data.parquet"}
    if kind == "unknown_key":
        return {"mask_everything": True}
    raise AssertionError(kind)


@pytest.mark.parametrize(
    ("kind", "code", "named"),
    [
        ("missing_file", Reason.SOURCE_MISSING, "nope.csv"),
        ("empty_file", Reason.SOURCE_EMPTY, "empty.csv"),
        ("header_only", Reason.SOURCE_EMPTY, "hdr.csv"),
        ("non_numeric", Reason.COLUMN_TYPE, "wages"),
        ("missing_values", Reason.VALUES_MISSING, "turnover"),
        ("absent_column", Reason.COLUMN_UNKNOWN, "assets"),
        ("k_too_large", Reason.TOO_FEW_RECORDS, "method.k"),
        ("k_below_2", Reason.SPEC_FIELD, "method"),
        ("duplicate_columns", Reason.SOURCE_COLUMNS, "dup.csv"),
        ("unknown_method", Reason.SPEC_FIELD, "swap"),
        ("corrupt_parquet", Reason.SOURCE_FORMAT, "data.parquet"),
        ("unknown_key", Reason.SPEC_FIELD, "mask_everything"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, kind, code, named):
    make_release(tmp_path, rows=50)
    spec_path = make_release(tmp_path, rows=50, **_bad_source(tmp_path, kind))
    if kind in {"non_numeric", "missing_values"}:  # make_release rewrote data.csv: redo
        _bad_source(tmp_path, kind)
    assert main(["release", str(spec_path)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err)[0] is code and named in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "published").exists()
    assert not (tmp_path / "warehouse.duckdb").exists()


def test_measure_gates_take_their_settings_from_the_spec(tmp_path, prefect_api):
    spec = make_release(
        tmp_path,
        rows=200,
        sensitive=["sector"],
        checks={
            "max_record_linkage": 100,
            "max_interval_disclosure": 100,
            "max_cluster_loss_d1": 1e9,
            "l_diversity": 1,
        },
        measures={"interval_disclosure_p": 5, "cluster_loss": {"c": 3, "restarts": 2}},
    )
    assert main(["release", str(spec)]) == 0
    manifest = json.loads((tmp_path / "published" / "survey" / "manifest.json").read_text())
    figures = {c["check"]: c["figure"] for c in manifest["checks"]}
    assert {"max_record_linkage", "max_interval_disclosure", "max_cluster_loss_d1"} <= set(figures)
    assert figures["l_diversity"] >= 1
    published = pd.read_parquet(tmp_path / "published" / "survey" / "data.parquet")
    assert list(published.columns) == [*QIS, "region", "sector"]  # sensitive: unchanged


def test_unknown_measure_setting_is_a_clear_error(tmp_path, capsys):
    spec = make_release(tmp_path, rows=50, measures={"cluster_loss": {"clusters": 3}})
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.SPEC_FIELD, "measures.cluster_loss.clusters")


def test_a_killed_run_is_listed_as_interrupted(tmp_path):
    from sdcflow.warehouse.warehouse import Warehouse

    warehouse = Warehouse(tmp_path / "w.duckdb")
    warehouse.start_run("a" * 32, "survey", "0" * 64, "mdav")
    with warehouse.connect() as con:  # as if its process had been killed
        con.execute("UPDATE audit.runs SET pid = ?", [2**22 + 12345])
    runs = warehouse.runs()
    assert runs.loc[0, "status"] == "interrupted" and runs.loc[0, "ended_at"] is not None


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"checks": {"max_information_loss": -1}}, Reason.SPEC_FIELD),
        ({"source": "."}, Reason.SOURCE_NOT_FILE),  # a folder, named as such
        ({"checks": {"l_diversity": 2}}, Reason.SPEC_FIELD),  # needs `sensitive:`
    ],
)
def test_more_bad_specs_exit_2(tmp_path, capsys, change, code):
    spec = make_release(tmp_path, rows=50, **change)
    assert main(["check", str(spec)]) == 2
    assert cli_error(capsys.readouterr().err)[0] is code


def test_infinite_quasi_identifier_is_caught_before_the_run(tmp_path, capsys):
    spec = make_release(tmp_path, rows=50)
    frame = pd.read_csv(tmp_path / "data.csv")
    frame["turnover"] = frame["turnover"].astype(float)
    frame.loc[4, "turnover"] = float("inf")
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert main(["release", str(spec)]) == 2
    err = capsys.readouterr().err
    assert (
        cli_error(err)[0] is Reason.VALUES_NONFINITE and "turnover" in err and err.count("\n") == 1
    )
    assert not (tmp_path / "warehouse.duckdb").exists()
