"""The command line and ``sdcflow.release`` as a person meets them: the version, what a run
prints, ``runs`` as a table, YAML positions, hints, contradictions refused before any work,
and the honest IL labels in the manifest and the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import duckdb
import numpy as np
import pandas as pd
import pytest
from errorline import cli_error
from survey import QIS, write_release

import sdcflow
from sdcflow.cli.main import main
from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.errors import InputError, Reason

EDITS = ["total_costs == wages + other_costs", "profit == turnover - total_costs"]


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"sdcflow {sdcflow.__version__}"


def test_yaml_error_names_line_and_column(tmp_path, capsys):
    spec = write_release(tmp_path, rows=20)
    text = spec.read_text().replace("release: survey", "release: survey\nkeep: [region", 1)
    spec.write_text(text)
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err)[0] is Reason.SPEC_SYNTAX and "line " in err and ", column " in err
    assert err.count("\n") == 1


def test_a_key_written_twice_is_refused_with_its_line(tmp_path, capsys):
    # `method: {k: 10}` and later `method: {k: 2}` is refused, not run at k = 2 silently
    spec = write_release(tmp_path, rows=20)
    spec.write_text(spec.read_text() + "method: {name: mdav, k: 2}\n")
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err)[0] is Reason.SPEC_SYNTAX and "'method' twice" in err
    assert "line " in err and err.count("\n") == 1
    # a merged mapping's keys may be overridden: only keys written twice in one mapping count
    from sdcflow.limits import load_yaml

    merged = load_yaml("b: &b {k: 1, m: 2}\nc: {<<: *b, k: 3}\n", where="t")
    assert merged["c"] == {"k": 3, "m": 2}
    # keys compare as read, not as written: yes/true, 16/0x10
    import yaml

    for text in ("m: {yes: 1, true: 2}", "m: {16: a, 0x10: b}"):
        with pytest.raises(yaml.YAMLError, match="twice"):
            load_yaml(text, where="t")
    assert load_yaml("m: {1: x, '1': y}", where="t") == {"m": {1: "x", "1": "y"}}


def test_hyphenated_column_hint_says_backticks(tmp_path, capsys):
    qis = [q if q != "profit" else "net-profit" for q in QIS]
    spec = write_release(tmp_path, rows=30, quasi_identifiers=qis, edits=["net-profit >= 0"])
    frame = pd.read_csv(tmp_path / "data.csv").rename(columns={"profit": "net-profit"})
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.RULE_COLUMN, "R1")
    assert "backticks, e.g. `net-profit`" in err  # the hint: the point of this test
    # quoted as the hint says, the rule reads the column
    write_release(tmp_path, rows=30, quasi_identifiers=qis, edits=["`net-profit` >= -1e9"])
    frame.to_csv(tmp_path / "data.csv", index=False)
    from sdcflow.preflight.plan import plan_release
    from sdcflow.spec.load import load_spec

    assert plan_release(load_spec(spec)).rules[0].columns == ("net-profit",)


@pytest.mark.parametrize(
    ("method", "checks", "named"),
    [
        ({"name": "fuzzy", "k": 5}, {"k_anonymity": 5}, "guarantee: both"),
        ({"name": "constrained_fuzzy", "k": 5}, {"block_k_anonymity": 5}, "guarantee: both"),
        ({"name": "mdav", "k": 5}, {"box_max_records_outside": 0}, "box releases only"),
    ],
)
def test_contradictions_exit_2_before_any_work(tmp_path, capsys, method, checks, named):
    spec = write_release(tmp_path, rows=30, method=method, checks=checks)
    assert main(["release", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err)[0] is Reason.SPEC_CONTRADICTION and named in err and err.count("\n") == 1
    assert not (tmp_path / "warehouse.duckdb").exists() and not (tmp_path / "reports").exists()
    # the same spec with the guarantee it meant is accepted by the preflight
    if method["name"] != "mdav":
        from sdcflow.preflight.plan import plan_release
        from sdcflow.spec.load import load_spec

        write_release(tmp_path, rows=30, method={**method, "guarantee": "both"}, checks=checks)
        assert plan_release(load_spec(spec)).spec.method.m1 == 1.1  # the shared default


@pytest.mark.flow
def test_release_prints_folder_and_report_and_labels_il(tmp_path, prefect_api, capsys):
    spec = write_release(
        tmp_path, data="data_with_errors.csv", rows=300, edits=EDITS, seed=5,
        checks={"k_anonymity": 5, "max_information_loss": 60},
    )  # fmt: skip
    assert main(["release", str(spec)]) == 0
    out = capsys.readouterr().out.splitlines()
    published = tmp_path / "published" / "survey"
    assert f"published {published}" in out[-2] and out[-1].startswith("report ")
    report = out[-1].removeprefix("report ")
    assert report.endswith("report.html") and (tmp_path / "reports").glob("*/*/report.html")

    manifest = json.loads((published / "manifest.json").read_text())
    il = manifest["information_loss"]
    run = manifest["run_id"]
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        raw = con.sql(f'SELECT * FROM raw."run_{run}" ORDER BY sdc_row_id').df()
        edited = con.sql(f'SELECT * FROM edited."run_{run}" ORDER BY sdc_row_id').df()
        masked = con.sql(f'SELECT * FROM masked."run_{run}" ORDER BY sdc_row_id').df()
        kind = con.execute("SELECT kind FROM audit.runs WHERE run_id = ?", [run]).fetchone()[0]
    released = masked[QIS].to_numpy(float)
    assert il["against_raw_file"] == pytest.approx(sse_sst_loss(raw[QIS].to_numpy(float), released))
    assert il["against_repaired_records"] == pytest.approx(
        sse_sst_loss(edited[QIS].to_numpy(float), released)
    )
    gated = {c["check"]: c["figure"] for c in manifest["checks"]}["max_information_loss"]
    assert gated == il["against_raw_file"] != il["against_repaired_records"]
    assert kind == "release"

    page = open(report, encoding="utf-8").read()
    assert "total_costs == wages + other_costs" in page
    assert "IL against the repaired records" in page and "IL against the raw file" in page

    from sdcflow.warehouse.warehouse import Warehouse

    other = Warehouse(tmp_path / "warehouse.duckdb")  # a check run beside the release
    other.start_run("c" * 32, "survey", "0" * 64, "mdav", kind="check")
    other.finish_run("c" * 32, "checked")
    assert main(["runs", str(spec)]) == 0
    both = capsys.readouterr().out
    assert "cccccccc" in both and "checked" in both and run[:8] in both
    assert main(["runs", str(spec), "--status", "published"]) == 0
    table = capsys.readouterr().out
    assert run[:8] in table and "published" in table and "checked" not in table
    # edit rules, k, IL and the p % rule the survey's magnitudes get by default
    assert "4/4 pass" in table and "release" in table
    assert main(["runs", str(spec), "--release", "other"]) == 0
    assert "no runs of release other" in capsys.readouterr().out


@pytest.mark.flow
def test_python_release_returns_outcomes_and_raises_input_errors(tmp_path, prefect_api):
    write_release(tmp_path, rows=120)
    body = {
        "release": "survey", "source": "data.csv", "id_column": "respondent_id",
        "quasi_identifiers": QIS, "method": {"name": "mdav", "k": 3, "dominance": True},
        "seed": 1, "checks": {"max_information_loss": 100},
    }  # fmt: skip
    checked = sdcflow.release(body, publish=False, base_dir=tmp_path)
    assert checked.status == "checked" and checked.published is None and checked.report.is_file()
    assert checked.information_loss["raw"] == checked.figures["max_information_loss"]
    assert np.all(
        (checked.record_risk.probabilities > 0) & (checked.record_risk.probabilities <= 1)
    )

    refused = sdcflow.release({**body, "checks": {"k_anonymity": 6}}, base_dir=tmp_path)
    assert refused.status == "refused" and not refused.success
    assert [o.key for o in refused.failed] == ["k_anonymity"]
    assert not (tmp_path / "published").exists()

    with pytest.raises(InputError) as unknown:
        sdcflow.release({**body, "quasi_identifiers": [*QIS, "assets"]}, base_dir=tmp_path)
    assert unknown.value.code == Reason.COLUMN_UNKNOWN
    with pytest.raises(InputError) as bad_field:
        sdcflow.release({**body, "method": {"name": "mdav", "k": 1}}, base_dir=tmp_path)
    assert bad_field.value.code == Reason.SPEC_FIELD


@pytest.mark.parametrize(
    ("checks", "upper"),
    [
        ({"max_individual_risk": 1.5}, 1),  # a probability: 1.5 always passed
        ({"min_cluster_jaccard": 2}, 1),  # an index: never passed
        ({"max_global_risk": 150}, 100),  # a share in percent
        ({"max_pil": 100.5}, 100),
    ],
)
def test_a_probability_or_share_threshold_outside_its_range_is_refused(
    tmp_path, capsys, checks, upper
):
    spec = write_release(tmp_path, rows=30, checks=checks)
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.SPEC_FIELD, "checks") and err.count("\n") == 1
    (key,) = checks
    assert key in err and f"[0, {upper}]" in err
    assert not (tmp_path / "warehouse.duckdb").exists()
    from sdcflow.spec.load import spec_from_dict

    body = {"release": "z", "source": "d.csv", "quasi_identifiers": ["x"],
            "method": {"name": "mdav", "k": 5}}  # fmt: skip
    assert spec_from_dict({**body, "checks": {key: upper}}, tmp_path).checks == {key: upper}


@pytest.mark.parametrize(
    "extra, field, model",
    [
        ({"foo": 1}, "foo", "ReleaseSpec"),
        ({"retention": {"keep_lst": 1}}, "retention.keep_lst", "RetentionSpec"),
        ({"method": {"name": "mdav", "k": 5, "kk": 1}}, "method.kk", "mdav"),
    ],
)
def test_an_unknown_key_is_refused_with_the_keys_allowed_there(tmp_path, extra, field, model):
    # README: "Unknown keys ... are errors that list what is allowed"; they only said
    # "Extra inputs are not permitted", leaving the user to guess the spelling.
    from sdcflow.methods import METHODS
    from sdcflow.spec.load import spec_from_dict
    from sdcflow.spec.schema import ReleaseSpec, RetentionSpec

    base = {"release": "z", "source": "d.csv", "quasi_identifiers": ["x"]}
    base["method"] = {"name": "mdav", "k": 5}
    with pytest.raises(InputError) as e:
        spec_from_dict({**base, **extra}, tmp_path)
    assert e.value.code is Reason.SPEC_FIELD and e.value.field == field
    cls = {"ReleaseSpec": ReleaseSpec, "RetentionSpec": RetentionSpec}.get(model)
    allowed = [n for n, f in (cls or METHODS[model].params).model_fields.items() if not f.exclude]
    listed = str(e.value).rsplit("allowed: ", 1)[1].split(" (got")[0].split(", ")
    assert listed == allowed


def _written_docs() -> str:
    """The README and the docs pages written by hand (not the ones generated from the code,
    which name every option and field by construction)."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    pages = sorted(p for p in (repo / "docs").rglob("*.md") if "_generated" not in p.parts)
    return "\n".join(p.read_text() for p in [repo / "README.md", *pages])


def test_every_option_of_every_subcommand_is_in_the_docs():
    # `runs --warehouse`, `serve --name`, `compare --param/--intruder/--out` worked but the
    # README a new user reads never named them (its sections are now the docs' pages).
    import argparse

    from sdcflow.cli.main import build_parser

    readme = _written_docs()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = [
        f"{name} {opt}"
        for name, parser in sub.choices.items()
        for action in parser._actions
        for opt in action.option_strings
        if opt.startswith("--") and opt != "--help" and opt not in readme
    ]
    assert missing == []


def test_every_parameter_of_every_method_is_in_the_docs_methods_table():
    # ps's cell_size, fuzzy's escalations and cell_size, box's epsilon and partition were
    # accepted in a spec but missing from the table a new user picks parameters from (the
    # README's "Methods", now docs/concepts/methods.md).
    from pathlib import Path

    from sdcflow.methods import METHODS

    page = Path(__file__).resolve().parents[1] / "docs" / "concepts" / "methods.md"
    lines = page.read_text().splitlines()
    missing = []
    for name, method in METHODS.items():
        row = next(line for line in lines if line.startswith(f"| `{name}` |"))
        if name == "constrained_fuzzy":  # "as `fuzzy`"
            row = next(line for line in lines if line.startswith("| `fuzzy` |"))
        missing += [
            f"{name}.{f}" for f in method.params.model_fields if f != "name" and f"`{f}" not in row
        ]
    assert missing == []


def test_every_spec_field_and_measure_option_is_in_the_docs():
    # recode's `labels` and `measures: transparency:` were accepted but never named.

    from sdcflow.gates import MeasureOptions
    from sdcflow.methods.fuzzy_mapping import FuzzyMapParams
    from sdcflow.spec.schema import (
        Acceptances,
        DaskSettings,
        KeyDeclaration,
        RecodeSpec,
        ReleaseSpec,
        RetentionSpec,
        SuppressionSpec,
    )

    readme = _written_docs()
    models = (ReleaseSpec, RetentionSpec, SuppressionSpec, RecodeSpec, DaskSettings)
    models += (Acceptances, KeyDeclaration, FuzzyMapParams, MeasureOptions)
    missing = [
        f"{m.__name__}.{f}"
        for m in models
        for f, info in m.model_fields.items()
        if not info.exclude and f != "key_types"  # the quasi_identifiers' mappings, parsed
        if f"`{f}" not in readme and f"{f}:" not in readme
    ]
    assert missing == []


@pytest.mark.parametrize("debug", [False, True])
def test_an_unexpected_error_exits_3_and_debug_adds_only_the_traceback(
    tmp_path, capsys, monkeypatch, debug
):
    """With ``SDCFLOW_DEBUG=1`` an unexpected error prints the traceback, then the same
    line, and exits 3: re-raised, Python would exit 1, the code that says a check failed,
    and a CI job setting it would read a crash as a refusal."""
    from sdcflow.cli import release

    def boom(*args, **kwargs):
        raise RuntimeError("an internal fault")

    monkeypatch.setattr(release, "run_release", boom)
    if debug:
        monkeypatch.setenv("SDCFLOW_DEBUG", "1")
    else:
        monkeypatch.delenv("SDCFLOW_DEBUG", raising=False)
    assert main(["release", str(tmp_path / "release.yaml")]) == 3
    err = capsys.readouterr().err
    last = err.rstrip().splitlines()[-1]
    assert last.startswith("sdcflow: run failed: RuntimeError: an internal fault")
    assert ("Traceback (most recent call last)" in err) is debug
    assert ('raise RuntimeError("an internal fault")' in err) is debug


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("release: survey", "release: survey\nretention: {keep_last: yes}", "retention.keep_last"),
        ("release: survey", "release: survey\nretention: {keep_days: on}", "retention.keep_days"),
        ("release: survey", "release: survey\nseed: true", "seed"),
        ("release: survey", "release: survey\nchecks: {k_anonymity: yes}", "checks"),
        ("k: 5", "k: yes", "method.k"),
        ("- employees\n", "- {name: employees, precision: no}\n", "key_types.employees.precision"),
        (
            "- region\n",
            "- {name: region, type: ordinal, order: [no, yes]}\n",
            "key_types.region.order",
        ),
        ("release: survey", "release: survey\ndask: {workers: true}", "dask.workers"),
        (
            "release: survey",
            "release: survey\nfuzzy_map: {profit: {sets: on}}",
            "fuzzy_map.profit.sets",
        ),
        # a generated model (create_model) too: `yes` was p = 1, a third of the default risk
        (
            "release: survey",
            "release: survey\nmeasures: {interval_disclosure_p: [5, on]}",
            "measures.interval_disclosure_p",
        ),
    ],
)
def test_a_yaml_boolean_is_no_number(tmp_path, capsys, old, new, field):
    # `retention: {keep_last: yes}` is no 1 (the irreversible end-of-run drop would keep
    # one run's copies), `seed: true` no seed 1, `precision: no` no rounding to integers,
    # a text `order: [no, yes]` no [0, 1]. Every field that takes numbers.
    spec = write_release(tmp_path, rows=20)
    text = spec.read_text()
    assert old in text
    spec.write_text(text.replace(old, new, 1))
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.SPEC_FIELD, field) and "as a boolean" in err
    assert "YAML read an unquoted yes/no/on/off/true/false" in err and "give a number" in err
    # where text is taken too, the message says to quote it, and where the item is
    assert ("quote the text ('yes')" in err) is (field == "key_types.region.order")
    if "[" in new.split(":", 1)[1]:
        assert " at [" in err
    assert not (tmp_path / "warehouse.duckdb").exists()


def test_a_choice_or_a_rule_name_read_as_a_boolean_is_refused_saying_what_it_takes(
    tmp_path, capsys
):
    # a choice keeps pydantic's list of what it takes; a rule's name was str(False), "False"
    spec = write_release(tmp_path, rows=20)
    base = spec.read_text()
    spec.write_text(base + "on_violation: yes\n")
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.SPEC_FIELD, "on_violation") and "'fail' or 'repair'" in err
    spec.write_text(base + "edits: [{rule: 'wages <= total_costs', name: no}]\n")
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.RULE_OPTION, "edits[0].name") and "quote it" in err


def test_a_yaml_boolean_stays_a_boolean_where_one_is_meant(tmp_path, capsys):
    spec = write_release(tmp_path, rows=20)
    spec.write_text(spec.read_text() + "retention: {keep_refused: yes}\npublish_report: no\n")
    assert main(["check", str(spec)]) == 0, capsys.readouterr().err


def test_a_release_name_too_long_for_its_folders_is_refused_before_the_run(tmp_path, capsys):
    spec = write_release(tmp_path, rows=20)
    spec.write_text(spec.read_text().replace("release: survey", "release: " + "r" * 220, 1))
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.SPEC_FIELD, "release") and "100 characters" in err
    assert not (tmp_path / "warehouse.duckdb").exists()


def test_serve_refuses_a_schedule_it_cannot_read_before_registering(tmp_path, capsys):
    # `sdcflow serve SPEC --cron "bogus cron"` is exit 2, not 3 with "run failed:
    # ValidationError": a schedule is the user's input, refused as such
    spec = write_release(tmp_path, rows=20)
    assert main(["serve", str(spec), "--cron", "bogus cron"]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.PARAMETER, "cron") and "is not a cron schedule" in err


def test_a_hung_exit_hook_does_not_keep_a_decided_process_alive():
    """After a burst of SIGTERMs Prefect's log service can drain to the stopped temporary
    API for good, keeping a process that has printed "interrupted" alive in
    ``threading._shutdown``. ``cli._end_process`` ends it with its code once the hooks have
    had ``$SDCFLOW_EXIT_TIMEOUT`` seconds, and says so in one line."""
    import os
    import time

    from adversarial import spawn

    started = time.monotonic()
    proc = spawn(
        """
        import threading, time
        from sdcflow.cli import main as cli

        threading._register_atexit(lambda: time.sleep(600))  # a drain that never ends
        print("outcome printed", flush=True)
        cli._end_process(130)
        """,
        env={**os.environ, "SDCFLOW_EXIT_TIMEOUT": "1"},
    )
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, out.strip()) == (130, "outcome printed"), err
    assert "exit hooks did not finish in 1 s" in err and "exit code 130 stands" in err
    assert time.monotonic() - started < 60
    # also when the normal exit is kept for a thread that still runs
    proc = spawn(
        """
        import threading, time
        from sdcflow.cli import main as cli

        threading.Thread(target=lambda: time.sleep(0.5)).start()
        threading._register_atexit(lambda: time.sleep(600))
        print("outcome printed", flush=True)
        cli._end_process(3)
        """,
        env={**os.environ, "SDCFLOW_EXIT_TIMEOUT": "2"},
    )
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, out.strip()) == (3, "outcome printed"), err


@pytest.mark.parametrize("seed", ["my-secret-42", "1.5"])
def test_a_malformed_seed_is_refused_without_echoing_it(tmp_path, capsys, seed):
    # the seed is the release's secret: an error names the key, never what was written there
    spec = write_release(tmp_path, rows=20)
    spec.write_text(spec.read_text() + f"seed: {seed}\n")
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err)[0] is Reason.SPEC_FIELD and "seed:" in err and seed not in err


# -- issue 41, item 4: malformed input that crashed ----------------------------------------------


@pytest.mark.parametrize("name", [["mdav"], {"name": "mdav"}, 5, True, None])
def test_a_method_name_that_is_not_text_is_refused_in_one_line(tmp_path, capsys, name):
    """``method: {name: [mdav], k: 5}`` ended with exit 3 ``TypeError: unhashable type``."""
    spec = write_release(tmp_path, rows=20, method={"name": name, "k": 5})
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.SPEC_FIELD, "method.name") and err.count("\n") == 1


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"dask": {"address": "tcp://10.0.0.5:8786"}}, "dask"),
        ({"runner": "local", "dask": {"workers": 2}}, "dask"),
    ],
)
def test_dask_settings_under_the_local_runner_are_refused(tmp_path, capsys, fields, field):
    """They were accepted and dropped without a word, where --dask-address with --runner
    local is refused."""
    spec = write_release(tmp_path, rows=20, **fields)
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.SPEC_FIELD, field) and "runner: dask" in err
    assert not (tmp_path / "warehouse.duckdb").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["runs", "--limit", str(10**23)],
        ["runs", "--limit", "1e3"],
        ["prune", "--keep-last", str(10**23)],
        ["prune", "--keep-days", "1e400"],
        ["prune", "--keep-days", "nan"],
        ["prune", "--keep-days", "0"],
        ["check", "release.yaml", "--wait", "1e400"],
        ["release", "release.yaml", "--dask-workers", str(10**23)],
    ],
    ids=lambda a: " ".join(a),
)
def test_numbers_beyond_their_range_are_refused_in_one_line_by_a_real_process(tmp_path, args):
    """``runs --limit 10^23`` reached DuckDB (exit 3, ``ConversionException``); ``prune
    --keep-days 1e400`` was taken as inf ("forever") while ``nan`` was refused."""
    from sdcflow.warehouse.warehouse import Warehouse

    write_release(tmp_path, rows=20)
    # a warehouse with a run: the limit reached its query
    Warehouse(tmp_path / "warehouse.duckdb").start_run("r1", "survey", "0" * 64, "mdav")
    if args[0] in ("runs", "prune"):
        args = [*args, "--warehouse", str(tmp_path / "warehouse.duckdb")]
    done = subprocess.run(
        [sys.executable, "-m", "sdcflow.cli", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "error" in done.stderr and not done.stdout


def test_non_ascii_paths_under_an_ascii_locale_are_read(tmp_path):
    """Under ``LC_ALL=POSIX PYTHONUTF8=0`` a spec naming ``données.csv`` ended with exit 3
    ``UnicodeEncodeError`` (the file names were ASCII): the command line runs in UTF-8
    mode, reads the file, and here names the column the file lacks."""
    folder = tmp_path / "données"
    folder.mkdir()
    write_release(folder, rows=20, write_to="réponses.csv", quasi_identifiers=["âge"])
    env = {**os.environ, "LC_ALL": "POSIX", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}
    env.pop("LANG", None)
    done = subprocess.run(
        [sys.executable, "-m", "sdcflow.cli", "check", str(folder / "release.yaml")],
        cwd=folder,
        env=env,
        capture_output=True,
        timeout=300,
    )
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, err
    assert "UnicodeEncodeError" not in err and cli_error(err)[0] is Reason.COLUMN_UNKNOWN
    assert sorted(p.name for p in folder.iterdir()) == ["release.yaml", "réponses.csv"]
