"""``sdcflow compare``: variants run through the release flow, nothing published, a map drawn."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sdcflow.flows.cli import main
from sdcflow.tasks.information_loss import sse_sst_loss
from sdcflow.tasks.mdav import group_means, mdav

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "business_survey"
QIS = ["employees", "turnover", "wages", "other_costs", "total_costs", "profit"]

pytestmark = pytest.mark.flow


def test_compare_runs_variants_and_draws_the_map(tmp_path, prefect_api, capsys):
    frame = pd.read_csv(EXAMPLE / "data.csv").head(300)
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "release": "survey",
        "source": "data.csv",
        "id_column": "respondent_id",
        "quasi_identifiers": QIS,
        "keep": ["region"],
        "method": {"name": "mdav", "k": 5},
        "checks": {"k_anonymity": 5},  # k = 3 fails it: still measured, never published
        "seed": 3,
    }
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    out = tmp_path / "cmp"
    code = main(["compare", str(tmp_path / "release.yaml"), "--methods", "mdav",
                 "--k", "3", "10", "--out", str(out)])  # fmt: skip
    assert code == 0
    assert not (tmp_path / "published").exists()
    assert "risk-utility map" in capsys.readouterr().out

    table = pd.read_csv(out / "risk_utility.csv")
    assert list(table["k"]) == [3, 10]
    assert list(table["checks_passed"]) == [False, True]
    # IL measured from the warehouse equals MDAV run here on the same records
    X = frame[QIS].to_numpy(dtype=float)
    for k, il in zip(table["k"], table["il"], strict=True):
        assert il == pytest.approx(sse_sst_loss(X, group_means(X, mdav(X, int(k)))), abs=1e-9)
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


def test_compare_rejects_an_unknown_method(tmp_path, capsys):
    frame = pd.read_csv(EXAMPLE / "data.csv").head(50)
    frame.to_csv(tmp_path / "data.csv", index=False)
    spec = {"release": "s", "source": "data.csv", "quasi_identifiers": QIS,
            "method": {"name": "mdav", "k": 5}}  # fmt: skip
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(spec))
    code = main(["compare", str(tmp_path / "release.yaml"), "--methods", "nosuch", "--k", "3"])
    assert code == 2
    assert "nosuch" in capsys.readouterr().err
