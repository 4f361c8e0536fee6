"""Re-runs, retention of the confidential copies, and progress (issue #13, items 3, 4, 8).

One scenario runs once per module (each full release costs seconds): a spec with
``retention: {keep_last: 1}`` is released, released again unchanged (command line and
Python), forced, released on a changed input, on a changed spec, and refused. The tests
below each assert one promise on what the scenario left: exit codes, lines, ``audit.runs``,
the warehouse's tables, the release folder, the Prefect logs and artifacts.
"""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest
import yaml
from errorline import cli_error
from survey import progress_artifacts, write_release

import sdcflow
from sdcflow.cli.main import main
from sdcflow.errors import InputError, Reason
from sdcflow.warehouse.publish import published_run
from sdcflow.warehouse.warehouse import Warehouse

pytestmark = pytest.mark.flow


def _rows(path: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def _tables(path: Path) -> set[str]:
    return {
        f"{s}.{t}"
        for s, t in _rows(path, "SELECT table_schema, table_name FROM information_schema.tables")
    }


def _last_run(path: Path) -> dict[str, Any]:
    cols = ["run_id", "status", "input_sha256", "spec_sha256", "message", "copies_pruned_at"]
    row = _rows(path, f"SELECT {', '.join(cols)} FROM audit.runs ORDER BY started_at DESC")[0]
    return dict(zip(cols, row, strict=True))


def _flow_run_logs(run_id: str) -> list[str]:
    """The flow run's log messages as the Prefect API stored them (its log worker drained)."""
    import httpx
    from prefect.logging.handlers import APILogHandler
    from prefect.settings import PREFECT_API_URL

    APILogHandler().flush()

    body = {"logs": {"flow_run_id": {"any_": [str(__import__("uuid").UUID(run_id))]}},
            "limit": 200, "offset": 0, "sort": "TIMESTAMP_ASC"}  # fmt: skip
    response = httpx.post(f"{PREFECT_API_URL.value()}/logs/filter", json=body, timeout=30)
    response.raise_for_status()
    return [item["message"] for item in response.json()]


@pytest.fixture(scope="module")
def scenario(tmp_path_factory, prefect_api) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("reruns")
    spec = write_release(
        tmp,
        rows=60,
        seed=None,
        checks={"max_information_loss": 60},
        retention={"keep_last": 1},
    )
    wh = tmp / "warehouse.duckdb"
    out: dict[str, Any] = {"tmp": tmp, "spec": spec, "warehouse": wh}
    # foreign tables: one elsewhere, one named like a run's copy but not recorded by a run
    with duckdb.connect(str(wh)) as con:
        con.execute("CREATE SCHEMA raw; CREATE TABLE raw.notes AS SELECT 1 AS x")
        con.execute(f'CREATE TABLE raw."run_{"f" * 32}" AS SELECT 2 AS x')

    def run(*args: str) -> tuple[int, dict[str, Any]]:
        code = main(["release", str(spec), *args])
        return code, _last_run(wh)

    out["A"] = run()
    out["tables_after_A"] = _tables(wh)
    out["B"] = run()
    out["api"] = sdcflow.release(spec)
    out["C"] = run("--force")
    out["tables_after_C"] = _tables(wh)
    out["artifacts_after_C"] = progress_artifacts(["survey-progress", "survey-mask-progress"])
    out["logs_C"] = _flow_run_logs(out["C"][1]["run_id"])
    data = pd.read_csv(tmp / "data.csv")
    data.loc[0, "employees"] += 1  # one value changed: another input
    data.to_csv(tmp / "data.csv", index=False)
    out["sha_D"] = hashlib.sha256((tmp / "data.csv").read_bytes()).hexdigest()
    out["D"] = run()
    body = yaml.safe_load(spec.read_text())
    spec.write_text(yaml.safe_dump({**body, "retention": {"keep_last": 2}}))
    out["D2"] = run()  # only the retention changed: not another release
    spec.write_text(yaml.safe_dump({**body, "checks": {"max_information_loss": 59}}))
    out["E"] = run()  # another spec
    spec.write_text(yaml.safe_dump({**body, "checks": {"max_information_loss": 0.001}}))
    out["F"] = run()  # refused
    out["tables_end"] = _tables(wh)
    return out


def test_a_rerun_on_the_same_input_and_spec_publishes_nothing_new(scenario, capsys):
    code_a, a = scenario["A"]
    code_b, b = scenario["B"]
    assert (code_a, a["status"]) == (0, "published")
    assert (code_b, b["status"]) == (0, "unchanged")
    assert f"already published as run {a['run_id']}" in b["message"]
    assert (a["input_sha256"], a["spec_sha256"]) == (b["input_sha256"], b["spec_sha256"])
    wh = scenario["warehouse"]
    sql = "SELECT published_to FROM audit.runs WHERE run_id = ?"
    assert _rows(wh, sql, [b["run_id"]]) == [(None,)]  # it published nothing itself
    # the copies of an unchanged run: none made
    assert not any(b["run_id"] in t for t in scenario["tables_end"])


def test_a_release_edited_since_its_publication_is_refused_unless_forced(
    tmp_path, prefect_api, capsys
):
    """Issue 41, item 6: one line appended to the live release's data.csv (marker and
    manifest untouched). The folder is the user's now: a re-run refuses it like a foreign
    folder (exit 2, naming the file), leaving it as it is; --force replaces it."""
    spec = write_release(tmp_path, rows=60, seed=None, checks={"max_information_loss": 60})
    folder = tmp_path / "published" / "survey"
    assert main(["release", str(spec)]) == 0
    first = _last_run(tmp_path / "warehouse.duckdb")
    with (folder / "data.csv").open("a") as fh:
        fh.write("1,2,3\n")
    edited = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert published_run(folder) == first["run_id"]  # the marker still names the run
    capsys.readouterr()
    for command in ("release", "check"):
        assert main([command, str(spec)]) == 2
        err = capsys.readouterr().err
        assert cli_error(err)[0] is Reason.OUTPUT and err.count("\n") == 1
        assert "data.csv" in err and "--force" in err
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == edited
    assert _last_run(tmp_path / "warehouse.duckdb")["run_id"] == first["run_id"]  # no run
    assert main(["release", str(spec), "--force"]) == 0
    again = _last_run(tmp_path / "warehouse.duckdb")
    assert again["status"] == "published" and again["run_id"] != first["run_id"]
    assert published_run(folder) == again["run_id"]
    assert main(["release", str(spec)]) == 0  # the release is whole again: unchanged
    assert _last_run(tmp_path / "warehouse.duckdb")["status"] == "unchanged"


def test_an_edited_rules_file_is_a_changed_spec_and_is_not_already_published(
    tmp_path, prefect_api, capsys
):
    """The spec names its rules file by path: a rule added to that file (one the raw records
    violate, under ``on_violation: fail``) made ``sdcflow check`` refuse (exit 1) while
    ``sdcflow release`` said "already published ... from the same input and spec" (exit 0)
    and left the release published under the old rules live."""
    (tmp_path / "rules.yaml").write_text("- total_costs == wages + other_costs\n")
    spec = write_release(
        tmp_path, rows=60, seed=1, rules_file="rules.yaml", on_violation="fail",
        checks={"max_information_loss": 60},
    )  # fmt: skip
    warehouse = tmp_path / "warehouse.duckdb"
    assert main(["release", str(spec)]) == 0
    first = _last_run(warehouse)
    assert first["status"] == "published"
    with (tmp_path / "rules.yaml").open("a") as fh:
        fh.write("- employees <= 1\n")  # most firms have more
    capsys.readouterr()
    assert main(["release", str(spec)]) == 1
    assert "already published" not in capsys.readouterr().out
    assert _last_run(warehouse)["status"] == "refused"
    assert published_run(tmp_path / "published" / "survey") == first["run_id"]


def test_a_rules_file_edited_during_a_run_leaves_manifest_and_audit_agreeing(
    tmp_path, prefect_api, monkeypatch
):
    """The rules file edited while a release runs: the run applies the rules it has read,
    and both ``audit.runs`` and the manifest name the hash of the spec the run started
    with, not the new file's."""
    import sdcflow.flows.release as flow

    rules = tmp_path / "rules.yaml"
    rules.write_text("- total_costs == wages + other_costs\n")
    spec = write_release(tmp_path, rows=60, seed=1, rules_file="rules.yaml")
    report = flow.run_report

    def edited_meanwhile(*args: Any, **kwargs: Any) -> Any:
        rules.write_text("- total_costs == wages + other_costs\n- employees >= 0\n")
        return report(*args, **kwargs)

    monkeypatch.setattr(flow, "run_report", edited_meanwhile)
    assert main(["release", str(spec)]) == 0
    manifest = yaml.safe_load((tmp_path / "published" / "survey" / "manifest.json").read_text())
    audit = _last_run(tmp_path / "warehouse.duckdb")
    assert manifest["spec_sha256"] == audit["spec_sha256"]
    assert list(manifest["edit_rules"]["raw"]) == ["R1"]  # the rules the run applied
    rules.write_text("- total_costs == wages + other_costs\n")  # as the run read it
    assert manifest["spec_sha256"] == sdcflow.spec.load.load_spec(spec).sha256()


def test_report_folders_are_owner_only_and_a_readable_warehouse_is_reported(scenario):
    """Issue 41, item 1: a run's report folder (report.html, Data Docs) is 0700 whatever the
    umask; the scenario's warehouse was made by the test (the test's umask), and a mode that
    lets others read it is said in the run's log with the chmod that closes it."""
    run = scenario["C"][1]["run_id"]
    folder = scenario["tmp"] / "reports" / "survey" / run
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "report.html").stat().st_mode) == 0o600
    mode = stat.S_IMODE(scenario["warehouse"].stat().st_mode)
    said = [m for m in scenario["logs_C"] if f"chmod 600 {scenario['warehouse']}" in m]
    assert len(said) == (1 if mode & 0o066 else 0)


def test_the_input_hash_is_the_sha256_of_the_file_as_read(scenario):
    _, d = scenario["D"]
    assert d["input_sha256"] == scenario["sha_D"]  # hashlib on the bytes, independently
    assert scenario["A"][1]["input_sha256"] != d["input_sha256"]


def test_a_project_copied_with_its_warehouse_publishes_to_its_own_folder(tmp_path, prefect_api):
    """The spec, its input and its warehouse copied to another folder (relative `output:`,
    so the same spec hash) publish to the copy's own output, not "already published" of the
    first folder's release with exit 0 and nothing there (a CI gate would upload nothing)."""
    import shutil

    first, copy = tmp_path / "first", tmp_path / "copy"
    first.mkdir()
    spec = write_release(first, rows=60, seed=None, checks={"max_information_loss": 60})
    assert main(["release", str(spec)]) == 0
    live = _last_run(first / "warehouse.duckdb")["run_id"]
    copy.mkdir()
    for name in ("data.csv", "release.yaml", "warehouse.duckdb"):
        shutil.copy2(first / name, copy / name)
    assert main(["release", str(copy / "release.yaml")]) == 0
    ran = _last_run(copy / "warehouse.duckdb")
    assert ran["status"] == "published" and ran["run_id"] != live
    assert published_run(copy / "published" / "survey") == ran["run_id"]
    assert published_run(first / "published" / "survey") == live  # the first one untouched
    assert main(["release", str(copy / "release.yaml")]) == 0  # its own release: unchanged
    assert _last_run(copy / "warehouse.duckdb")["status"] == "unchanged"


def test_the_python_api_says_unchanged_and_names_the_live_run(scenario):
    outcome = scenario["api"]
    assert outcome.status == "unchanged" and outcome.success
    assert outcome.previous_run == scenario["A"][1]["run_id"]
    assert outcome.published == scenario["tmp"] / "published" / "survey"


def test_force_changed_input_and_changed_spec_publish_again(scenario):
    codes = {k: scenario[k][0] for k in ("C", "D", "E")}
    assert codes == {"C": 0, "D": 0, "E": 0}
    assert [scenario[k][1]["status"] for k in ("C", "D", "D2", "E")] == [
        "published", "published", "unchanged", "published",
    ]  # fmt: skip
    assert scenario["D2"][1]["spec_sha256"] == scenario["D"][1]["spec_sha256"]
    assert scenario["E"][1]["spec_sha256"] != scenario["D"][1]["spec_sha256"]
    # the live release is E's: the refused run F changed nothing
    assert published_run(scenario["tmp"] / "published" / "survey") == scenario["E"][1]["run_id"]
    assert scenario["F"][0] == 1 and scenario["F"][1]["status"] == "refused"


def test_retention_drops_only_the_copies_the_runs_recorded(scenario):
    a, c = scenario["A"][1]["run_id"], scenario["C"][1]["run_id"]
    assert {f"raw.run_{a}", f"masked.run_{a}"} <= scenario["tables_after_A"]
    after_c = scenario["tables_after_C"]
    assert f"raw.run_{a}" not in after_c and f"masked.run_{a}" not in after_c  # keep_last 1
    assert {f"raw.run_{c}", f"masked.run_{c}", f"published.run_{a}"} <= after_c
    end = scenario["tables_end"]
    assert {"raw.notes", f"raw.run_{'f' * 32}"} <= end  # never anything sdcflow did not record
    # the refused run's copies went at its end; E (latest kept run, keep_last 1) stays
    f, e = scenario["F"][1]["run_id"], scenario["E"][1]["run_id"]
    assert not any(f in t for t in end if not t.startswith("audit"))
    assert {f"raw.run_{e}", f"masked.run_{e}"} <= end


def test_audit_keeps_the_figures_and_records_the_pruning(scenario, capsys, monkeypatch):
    wh = scenario["warehouse"]
    a = scenario["A"][1]["run_id"]
    row = _rows(wh, "SELECT status, checks, copies_pruned_at FROM audit.runs WHERE run_id = ?", [a])
    status, checks, pruned = row[0]
    assert status == "published" and "max_information_loss" in checks and pruned is not None
    dropped = _rows(
        wh, "SELECT schema_name FROM audit.run_tables WHERE run_id = ? AND dropped_at IS NOT NULL",
        [a],
    )  # fmt: skip
    assert {s for (s,) in dropped} == {"raw", "masked"}
    with pytest.raises(InputError) as e:
        Warehouse(wh).read_frame("raw", a)
    assert e.value.code == Reason.COPY_PRUNED
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "250")  # rich's table: every column whole
    assert main(["runs", "--warehouse", str(wh), "--full-ids"]) == 0
    shown = capsys.readouterr().out
    lines = shown.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith(a))
    assert "published" in lines[i] and lines[i + 1].split() == ["pruned"]  # under its status
    assert "unchanged" in shown


def test_step_times_and_progress_artifacts_exist_for_a_run(scenario):
    logs = scenario["logs_C"]
    for step in ("ingest", "mask", "checks", "report", "publish"):
        line = next((m for m in logs if m.startswith(f"step {step} done in ")), None)
        assert line is not None, step
        assert " s wall, " in line and line.endswith(" s CPU")
    artifacts = scenario["artifacts_after_C"]
    assert artifacts == {"survey-progress": 100.0, "survey-mask-progress": 100.0}


def test_a_compare_variant_never_displaces_the_copies_of_the_published_run(
    tmp_path, prefect_api, capsys
):
    """keep_last 1 counts published runs and checked-only runs (a `compare` variant, a
    `sdcflow check`) separately: the variant run after the release keeps its own copies and
    leaves the published run's, at the end of its run and under `sdcflow prune`."""
    spec = write_release(
        tmp_path, rows=60, checks={"max_information_loss": 60}, retention={"keep_last": 1}
    )
    wh = tmp_path / "warehouse.duckdb"
    assert main(["release", str(spec)]) == 0
    published = _last_run(wh)["run_id"]
    code = main(["compare", str(spec), "--methods", "mdav", "--k", "5",
                 "--out", str(tmp_path / "cmp")])  # fmt: skip
    assert code == 0
    variant = _last_run(wh)
    assert variant["status"] == "checked" and variant["run_id"] != published
    tables = _tables(wh)
    for run in (published, variant["run_id"]):
        assert {f"raw.run_{run}", f"masked.run_{run}"} <= tables
    capsys.readouterr()
    assert main(["prune", str(spec), "--yes"]) == 0
    assert {f"raw.run_{published}", f"masked.run_{published}"} <= _tables(wh)
    pruned = _rows(wh, "SELECT copies_pruned_at FROM audit.runs WHERE run_id = ?", [published])
    assert pruned == [(None,)]


def test_a_spec_changed_only_in_form_is_the_same_release(tmp_path, prefect_api):
    """Appending `reports: office-reports/`, spacing a rule differently or naming the
    source (or the output folder, or the warehouse) by another path leaves the spec's hash
    as it is, so no second, different masking of the same file is published (a randomized
    method, no seed: two maskings of one file disclose more than either). Those are the
    same release; moving a rule to the rules file too. A change in what is asked (k)
    publishes."""
    spec = write_release(
        tmp_path, rows=60, seed=None, checks={"max_information_loss": 60},
        edits=["total_costs == wages + other_costs"],
    )  # fmt: skip
    warehouse, folder = tmp_path / "warehouse.duckdb", tmp_path / "published" / "survey"
    assert main(["release", str(spec)]) == 0
    first = _last_run(warehouse)["run_id"]
    body = yaml.safe_load(spec.read_text())
    (tmp_path / "rules.yaml").write_text("- total_costs  ==  wages+other_costs\n")
    for form in (
        {"reports": "office-reports/"},
        {"edits": ["total_costs  ==wages +  other_costs"]},
        {"source": str(tmp_path / "data.csv")},
        {"edits": [], "rules_file": "rules.yaml"},
        # the output folder and the warehouse written another way
        {"output": str(tmp_path / "published")},
        {"warehouse": "sub/../warehouse.duckdb"},
    ):
        spec.write_text(yaml.safe_dump({**body, **form}))
        assert main(["release", str(spec)]) == 0
        assert _last_run(warehouse)["status"] == "unchanged", form
        assert published_run(folder) == first
    spec.write_text(yaml.safe_dump({**body, "method": {"name": "mdav", "k": 4}}))
    assert main(["release", str(spec)]) == 0
    assert _last_run(warehouse)["status"] == "published"
    assert published_run(folder) != first
