"""The example survey as test input: a slice of it and a release spec beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "business_survey"
QIS = ["employees", "turnover", "wages", "other_costs", "total_costs", "profit"]


def write_release(
    tmp: Path,
    *,
    data: str = "data.csv",
    rows: int,
    write_to: str = "data.csv",
    spec_name: str = "release.yaml",
    **spec: Any,
) -> Path:
    """Write the first ``rows`` records of ``examples/business_survey/<data>`` to
    ``tmp/<write_to>`` and a spec to ``tmp/<spec_name>``; return the spec path.

    The spec reads ``write_to`` with MDAV (k = 5, groups formed so that no firm dominates,
    as the example release: its turnover and wages are magnitudes, which get the p % rule gate
    by default) over the survey's numeric quasi-identifiers and region, a categorical key (an
    intruder may know a firm's region, so it cannot be a ``keep`` column: k would not hold
    for him); ``spec`` overrides any field (a ``source`` override leaves the slice unread).
    """
    pd.read_csv(EXAMPLE / data).head(rows).to_csv(tmp / write_to, index=False)
    body = {
        "release": "survey",
        "source": write_to,
        "id_column": "respondent_id",
        "quasi_identifiers": [*QIS, "region"],
        "method": {"name": "mdav", "k": 5, "dominance": True},
        **spec,
    }
    path = tmp / spec_name
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def release_frame(
    tmp: Path, frame: pd.DataFrame, edits: list, *, keys: list | None = None, k: int = 3
) -> Path:
    """Release ``frame`` (its ``id`` column the identifier; ``keys`` default every other
    column) with MDAV at ``k``, through the command line, which must publish; returns the
    release folder ``tmp/published/complete``."""
    from sdcflow.cli.main import main

    frame.to_csv(tmp / "data.csv", index=False)
    spec = {
        "release": "complete",
        "source": "data.csv",
        "id_column": "id",
        "quasi_identifiers": keys or [c for c in frame.columns if c != "id"],
        "edits": edits,
        "method": {"name": "mdav", "k": k},
        "checks": {"k_anonymity": k},
        "output": "published/",
        "warehouse": "warehouse.duckdb",
    }
    names = [q["name"] if isinstance(q, dict) else q for q in spec["quasi_identifiers"]]
    numbers = frame[names].select_dtypes("number")
    if (numbers.min() >= 0).any():
        # hand-made groups whose values the tests compute: a group of magnitudes dominated
        # by one record is accepted explicitly rather than merged (the p % rule's default)
        spec["checks"]["max_p_dominated_groups"] = len(frame)
        spec["accept"] = {"looser_checks": ["max_p_dominated_groups"]}
    (tmp / "release.yaml").write_text(json.dumps(spec))
    assert main(["release", str(tmp / "release.yaml")]) == 0
    return tmp / "published" / "complete"


def _latest_progress(keys: list[str]) -> dict[str, dict]:
    """The latest progress artifact of each key, from the Prefect REST API (no flow-run or
    task-run filter: the release's own progress artifact belongs to the flow run, not to a
    task)."""
    import httpx
    from prefect.settings import PREFECT_API_URL

    body = {"artifacts": {"key": {"any_": keys}}, "limit": 50, "offset": 0,
            "sort": "CREATED_DESC"}  # fmt: skip
    response = httpx.post(f"{PREFECT_API_URL.value()}/artifacts/filter", json=body, timeout=30)
    response.raise_for_status()
    out: dict[str, dict] = {}
    for item in response.json():
        if item["type"] == "progress":
            out.setdefault(item["key"], item)
    return out


def progress_artifacts(keys: list[str]) -> dict[str, float]:
    """The percentage of the latest progress artifact of each key."""
    return {key: float(item["data"]) for key, item in _latest_progress(keys).items()}


def progress_descriptions(keys: list[str]) -> dict[str, str]:
    """The description of the latest progress artifact of each key."""
    return {key: item["description"] or "" for key, item in _latest_progress(keys).items()}


def expenditure_survey(n: int):
    """n records (expenditure 16 %, 7 %, total; seed 0) violating total = 1.16 a + 1.07 b by
    noise, and the linear rules: that equality and a >= 10. Shapes: X (n, 3), rules."""
    import numpy as np

    from sdcflow.core.linear.constraints import LinearConstraints

    gen = np.random.default_rng(0)
    X = np.abs(gen.standard_normal((n, 3))) * [30.0, 80.0, 1.0] + [5.0, 10.0, 0.0]
    X[:, 2] = 1.16 * X[:, 0] + 1.07 * X[:, 1] + gen.normal(0.0, 3.0, n)
    rules = LinearConstraints(
        ("exp16", "exp7", "total"),
        np.array([[1.16, 1.07, -1.0]]),
        np.zeros(1),
        np.array([[-1.0, 0.0, 0.0]]),
        np.array([-10.0]),
        eq_names=("total",),
        ineq_names=("exp16_min",),
    )
    return X, rules
