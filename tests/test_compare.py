"""``sdcflow compare``: variants run through the release flow, nothing published, a map drawn."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from adversarial import read_only_disk
from errorline import cli_error
from survey import write_release

from sdcflow.cli.main import main
from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.core.microaggregation.mdav import group_means, mdav
from sdcflow.errors import Reason

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "business_survey"
QIS = ["employees", "turnover", "wages", "other_costs", "total_costs", "profit"]

pytestmark = pytest.mark.flow


def _survey_release(folder: Path, method: dict) -> pd.DataFrame:
    """300 records of the example survey and a release spec masking them with ``method``;
    returns the records."""
    frame = pd.read_csv(EXAMPLE / "data.csv").head(300)
    frame.to_csv(folder / "data.csv", index=False)
    spec = {
        "release": "survey",
        "source": "data.csv",
        "id_column": "respondent_id",
        "quasi_identifiers": QIS,
        "method": method,
        # k = 3 fails k_anonymity: still measured, never published. The IL is plain
        # MDAV's, so dominated groups of the magnitudes are accepted explicitly.
        "checks": {"k_anonymity": 5, "max_p_dominated_groups": 300},
        "accept": {"looser_checks": ["max_p_dominated_groups"]},
        "seed": 3,
    }
    (folder / "release.yaml").write_text(yaml.safe_dump(spec))
    return frame


def test_compare_runs_variants_and_draws_the_map(tmp_path, prefect_api, capsys):
    frame = _survey_release(tmp_path, {"name": "mdav", "k": 5})
    out = tmp_path / "cmp"
    code = main(["compare", str(tmp_path / "release.yaml"), "--methods", "mdav", "fuzzy",
                 "--k", "3", "10", "--param", "m2=2", "--out", str(out)])  # fmt: skip
    assert code == 0
    assert not (tmp_path / "published").exists()
    assert "risk-utility map" in capsys.readouterr().out

    both = pd.read_csv(out / "risk_utility.csv")
    assert list(both["method"]) == ["mdav", "mdav", "fuzzy", "fuzzy"]
    fuzzy = both[both["method"] == "fuzzy"]
    # m1 from the comparison's default, m2 from --param; fuzzy's random draw lowers the
    # transparency intruder's success below MDAV's at the same k
    assert set(fuzzy["params"]) == {"m1=1.1 m2=2"}
    table = both[both["method"] == "mdav"].reset_index(drop=True)
    assert (fuzzy["transparency_reidentification"].to_numpy()
            < table["transparency_reidentification"].to_numpy()).all()  # fmt: skip
    assert list(table["k"]) == [3, 10]
    assert list(table["checks_passed"]) == [False, True]
    # IL measured from the warehouse equals MDAV run here on the same records, published as
    # integers (the survey's columns are integers; a non-zero mean never rounds to 0)
    X = frame[QIS].to_numpy(dtype=float)
    for k, il in zip(table["k"], table["il"], strict=True):
        means = group_means(X, mdav(X, int(k)))
        published = np.round(means)
        published[(published == 0) & (means != 0)] = np.sign(means[(published == 0) & (means != 0)])
        assert il == pytest.approx(sse_sst_loss(X, published), abs=1e-9)
        # the transparency intruder on MDAV: 100 * groups / n
        expected = 100 * (mdav(X, int(k)).max() + 1) / len(X)
        row = table[table["k"] == k].iloc[0]
        assert row["transparency_reidentification"] == pytest.approx(expected)
    # larger k: more loss, less risk
    assert np.diff(table["il"])[0] > 0
    assert np.diff(table["record_linkage"])[0] < 0

    assert (out / "risk_utility.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "report.html").read_text()
    assert len(re.findall(r'src="data:image/png;base64,', page)) == 1
    assert "Figures of every variant" in page and "Edit rules" not in page


def test_compare_on_categorical_keys_only_gives_k(tmp_path, prefect_api, capsys):
    # local_suppression on categorical keys: every variant measured IL and linkage over
    # zero numeric columns and the command ended with exit 2 ('[data X]').
    frame = pd.read_csv(EXAMPLE / "data.csv").head(300)
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "release": "survey",
        "source": "data.csv",
        "id_column": "respondent_id",
        "quasi_identifiers": ["region", "sector"],
        "method": {"name": "local_suppression", "k": 5},
    }
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    out = tmp_path / "cmp"
    code = main(["compare", str(tmp_path / "release.yaml"), "--methods", "local_suppression",
                 "--k", "3", "5", "--out", str(out)])  # fmt: skip
    assert code == 0
    table = pd.read_csv(out / "risk_utility.csv")
    assert (table["k_achieved"] >= table["k"]).all() and table["il"].isna().all()


def test_compare_rejects_an_unknown_method(tmp_path, capsys):
    frame = pd.read_csv(EXAMPLE / "data.csv").head(50)
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {"release": "s", "source": "data.csv", "quasi_identifiers": QIS,
            "method": {"name": "mdav", "k": 5}}  # fmt: skip
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    code = main(["compare", str(tmp_path / "release.yaml"), "--methods", "nosuch", "--k", "3"])
    assert code == 2
    err = capsys.readouterr().err
    assert cli_error(err)[0] is Reason.PARAMETER and "nosuch" in err


def test_compare_refuses_a_variant_the_keys_do_not_fit_before_any_variant_runs(
    tmp_path, prefect_api, capsys
):
    # univariate on six numeric keys failed in its mask step after the mdav variant had run
    # and been recorded; the table of the variants that ran was lost (exit 2)
    frame = pd.read_csv(EXAMPLE / "data.csv").head(60)
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {"release": "s", "source": "data.csv", "quasi_identifiers": QIS,
            "method": {"name": "mdav", "k": 5}}  # fmt: skip
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    code = main(["compare", str(tmp_path / "release.yaml"), "--methods", "mdav", "univariate",
                 "--k", "3"])  # fmt: skip
    assert code == 2
    assert cli_error(capsys.readouterr().err)[0] is Reason.SPEC_CONTRADICTION
    assert not (tmp_path / "warehouse.duckdb").exists()  # no variant ran, nothing recorded


def test_compare_measures_il_against_the_raw_file_and_refuses_raw_errors(
    tmp_path, prefect_api, capsys
):
    import duckdb

    from sdcflow.core.measures.information_loss import sse_sst_loss as il

    frame = pd.read_csv(EXAMPLE / "data_with_errors.csv").head(300)
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "release": "survey",
        "source": "data.csv",
        "id_column": "respondent_id",
        "quasi_identifiers": QIS,
        "edits": ["total_costs == wages + other_costs", "profit == turnover - total_costs"],
        "on_violation": "repair",
        "method": {"name": "mdav", "k": 5},
        "seed": 3,
    }
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    out = tmp_path / "cmp"
    assert main(["compare", str(tmp_path / "release.yaml"), "--methods", "mdav", "--k", "5",
                 "--out", str(out)]) == 0  # fmt: skip
    row = pd.read_csv(out / "risk_utility.csv").iloc[0]
    # the IL of the table is measured against the raw file, as ingested, not the repaired
    # records: comparable with a method that edits while masking (nothing repaired)
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        run = row["run_id"]
        raw = con.sql(f'SELECT * FROM raw."run_{run}" ORDER BY sdc_row_id').df()
        edited = con.sql(f'SELECT * FROM edited."run_{run}" ORDER BY sdc_row_id').df()
        masked = con.sql(f'SELECT * FROM masked."run_{run}" ORDER BY sdc_row_id').df()
        kinds = {k for (k,) in con.execute("SELECT DISTINCT kind FROM audit.runs").fetchall()}
    released = masked[QIS].to_numpy(float)
    assert row["il"] == pytest.approx(il(raw[QIS].to_numpy(float), released))
    assert row["il"] != pytest.approx(il(edited[QIS].to_numpy(float), released))
    assert kinds == {"compare"}  # variants are marked in audit.runs

    spec["on_violation"] = "fail"
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    assert main(["compare", str(tmp_path / "release.yaml"), "--methods", "mdav", "--k", "5"]) == 1
    assert "refused" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["read-only", "under a file"])
def test_compare_out_it_cannot_write_is_refused_before_any_variant(tmp_path, capsys, where):
    """A read-only ``--out`` is refused before any variant runs, exit 2, not after every
    variant has run (exit 3, "run failed: OSError", their reports and the warehouse left)."""
    spec = write_release(tmp_path, rows=60, seed=2)
    args = ["compare", str(spec), "--methods", "mdav", "--k", "3", "--out"]
    if where == "read-only":
        with read_only_disk(tmp_path / "ro"):
            assert main([*args, str(tmp_path / "ro" / "cmp")]) == 2
    else:
        assert main([*args, str(tmp_path / "data.csv" / "cmp")]) == 2
    err = capsys.readouterr().err
    assert cli_error(err) == (Reason.OUTPUT, "out") and "--out elsewhere" in err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "ro") == [
        "data.csv",
        "release.yaml",
    ]


@pytest.mark.flow
def test_compare_out_never_replaces_a_file_or_writes_into_a_live_release(
    tmp_path, prefect_api, capsys
):
    """``--out`` into a live release (the map and report added to it would refuse its next
    release) or into a folder of the user's (their report.html and risk_utility.csv
    replaced) is refused before any variant runs."""
    spec = write_release(tmp_path, rows=60, seed=2)
    assert main(["release", str(spec)]) == 0
    live = tmp_path / "published" / "survey"
    before = sorted(p.name for p in live.iterdir())
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.html").write_text("my report")
    capsys.readouterr()
    for out, what in ((live, "inside the published release"), (mine, "already holds")):
        assert main(["compare", str(spec), "--methods", "mdav", "--k", "3", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert cli_error(err) == (Reason.OUTPUT, "out") and what in err
    assert sorted(p.name for p in live.iterdir()) == before
    assert (mine / "report.html").read_text() == "my report"
    assert sorted(p.name for p in mine.iterdir()) == ["report.html"]
    assert main(["release", str(spec), "--force"]) == 0  # the release is still sdcflow's


def test_compare_of_a_file_the_streamed_path_would_take_measures_every_figure(
    tmp_path, prefect_api, monkeypatch
):
    """The comparison asks for figures that read the records (record linkage, PIL...): such
    a run takes the in-memory path, where the streamed path refused them and the comparison
    stopped with exit 3 on every file of at least ``SDCFLOW_STREAMED_ROWS`` records."""
    _survey_release(tmp_path, {"name": "mdav", "k": 5, "cell_size": 100})
    monkeypatch.setenv("SDCFLOW_STREAMED_ROWS", "0")
    out = tmp_path / "cmp"
    code = main(["compare", str(tmp_path / "release.yaml"), "--methods", "mdav", "--k", "5",
                 "--out", str(out)])  # fmt: skip
    assert code == 0
    table = pd.read_csv(out / "risk_utility.csv")
    for column in ("il", "record_linkage", "interval_disclosure", "pil", "k_achieved"):
        assert np.isfinite(table[column]).all(), column
