"""fuzzy_map in a release: the spec's rules for it, the preflight, a real release against the
session's Prefect API with the mapping kept in the warehouse and nowhere else, and
`sdcflow remap`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from survey import EXAMPLE, QIS

from sdcflow.cli.main import main
from sdcflow.core.fuzzy_mapping import FuzzyMapping, integer_ranges, preimage
from sdcflow.errors import InputError, Reason
from sdcflow.preflight.plan import plan_release
from sdcflow.spec.load import load_spec
from sdcflow.warehouse.secrets import load_fuzzy_maps

# Distinctive boundaries, so that finding one of them anywhere is a leak, not a coincidence.
RANGES = [[13.0713, 41.9377], [30.5, 58.2291], [58.2291, 86.6043]]


def write_spec(tmp: Path, rows: int = 300, **overrides) -> Path:
    """The survey slice with a synthetic sensitive ``age`` (seeded) and a fuzzy-mapped spec."""
    frame = pd.read_csv(EXAMPLE / "data.csv").head(rows)
    frame["age"] = np.random.default_rng(4).integers(17, 91, size=len(frame))
    frame.to_csv(tmp / "data.csv", index=False)
    body = {
        "release": "survey",
        "source": "data.csv",
        "id_column": "respondent_id",
        "quasi_identifiers": [*QIS, "region"],  # region is known to an intruder: a key
        "sensitive": ["age"],
        "fuzzy_map": {
            "age": {
                "ranges": RANGES,
                "domain": [0, 100],
                "membership": "triangular",
                "combiner": "random_pick",
            }
        },
        "method": {"name": "mdav", "k": 5, "dominance": True},  # as the example release
        "checks": {"k_anonymity": 5},
        "seed": 3,
        **overrides,
    }
    path = tmp / "release.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


# --- what the spec allows ---------------------------------------------------------------------


def test_fuzzy_map_on_a_key_is_refused_without_advising_to_publish_it(tmp_path):
    spec = write_spec(tmp_path, fuzzy_map={"turnover": {"sets": 3, "combiner": "maximum"}})
    with pytest.raises(InputError) as e:
        load_spec(spec)
    assert e.value.code is Reason.SPEC_FIELD
    assert "sensitive" not in str(e.value)  # never "move the key to sensitive:"


@pytest.mark.parametrize(
    "fuzzy_map",
    [
        {"region": {"sets": 3, "combiner": "maximum"}},  # a categorical key
        {"sector": {"sets": 3, "combiner": "maximum"}},  # not in the release
        {"age": {"sets": 3, "ranges": [[0, 50]], "combiner": "maximum"}},  # both layouts
        {"age": {"sets": 3, "combiner": "median"}},
        {"age": {"sets": 1, "combiner": "maximum"}},
        {"age": {"ranges": [[0, 120]], "domain": [0, 100], "combiner": "maximum"}},
    ],
)
def test_bad_fuzzy_map_blocks_are_spec_errors(tmp_path, fuzzy_map):
    with pytest.raises(InputError) as e:
        load_spec(write_spec(tmp_path, fuzzy_map=fuzzy_map))
    assert e.value.code is Reason.SPEC_FIELD


def test_preflight_checks_type_and_domain(tmp_path):
    spec = write_spec(
        tmp_path, fuzzy_map={"age": {"sets": 3, "domain": [20, 60], "combiner": "minimum"}}
    )
    with pytest.raises(InputError) as e:
        plan_release(load_spec(spec))
    assert e.value.code is Reason.DATA
    spec = write_spec(
        tmp_path, sensitive=["sector"], fuzzy_map={"sector": {"sets": 3, "combiner": "minimum"}}
    )
    with pytest.raises(InputError) as e:
        plan_release(load_spec(spec))
    assert e.value.code is Reason.COLUMN_TYPE


def test_public_spec_names_the_mapped_columns_only(tmp_path):
    spec = load_spec(write_spec(tmp_path))
    public = spec.public_dict()
    assert public["fuzzy_mapped"] == ["age"] and "fuzzy_map" not in public
    assert "41.9377" not in json.dumps(public) and "random_pick" not in json.dumps(public)


# --- a real release ---------------------------------------------------------------------------


def _api_dump(run_id: str) -> str:
    """Everything the Prefect API holds about the flow run ``run_id`` (hex): the flow run
    (parameters), its task runs, logs, artifacts and events, as one JSON text. Other tests'
    runs share the session's API and are left out (their figures could match a needle)."""
    import uuid

    import httpx
    from prefect.logging.handlers import APILogWorker
    from prefect.settings import PREFECT_API_URL

    APILogWorker.drain_all(timeout=30)
    url = PREFECT_API_URL.value()
    flow_run = str(uuid.UUID(run_id))
    mine = {"any_": [flow_run]}
    filters = {
        "flow_runs": {"flow_runs": {"id": mine}},
        "task_runs": {"flow_runs": {"id": mine}},
        "logs": {"logs": {"flow_run_id": mine}},
        "artifacts": {"artifacts": {"flow_run_id": mine}},
    }
    out = []
    for route, body in filters.items():
        offset = 0
        while True:
            response = httpx.post(
                f"{url}/{route}/filter", json={**body, "limit": 200, "offset": offset}, timeout=60
            )
            response.raise_for_status()
            page = response.json()
            out.append(json.dumps(page))
            if len(page) < 200:
                break
            offset += 200
    events = httpx.post(
        f"{url}/events/filter",
        json={"filter": {"any_resource": {"id": [f"prefect.flow-run.{flow_run}"]}}, "limit": 200},
        timeout=60,
    )
    if events.status_code == 200:
        out.append(json.dumps(events.json()))
    # timestamps out: 04:53:30.512 holds the needle 30.5 (a CI run failed on one)
    return re.sub(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?", "<time>", "\n".join(out))


def _secret_strings(mapping: dict) -> list[str]:
    numbers = [v for pair in RANGES for v in pair]
    found = [s for v in numbers for s in {repr(v), f"{v:g}", f"{v:.6g}"}]
    return [*found, str(mapping["seed"]), mapping["combiner"], mapping["sets"]["definition"]]


@pytest.mark.flow
def test_release_maps_the_column_and_keeps_the_mapping_secret(tmp_path, prefect_api, capsys):
    spec_path = write_spec(tmp_path, publish_report=True)
    assert main(["release", str(spec_path)]) == 0
    spec = load_spec(spec_path)
    run_id, stored = load_fuzzy_maps(spec.warehouse_path, "survey")
    secret = stored["age"]
    assert isinstance(secret["seed"], int) and secret["combiner"] == "random_pick"
    mapping = FuzzyMapping.from_dict(secret)

    # what is on disk is the mapping of the original ages (rows are shuffled on publication)
    original = pd.read_csv(tmp_path / "data.csv")["age"].to_numpy(dtype=np.float64)
    out = tmp_path / "published" / "survey"
    published = pd.read_parquet(out / "data.parquet")
    np.testing.assert_allclose(np.sort(published["age"]), np.sort(mapping.apply(original)))
    assert published["age"].between(1, mapping.sets.k + 1).all()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["spec"]["fuzzy_mapped"] == ["age"]
    assert {c["check"] for c in manifest["checks"]} >= {"k_anonymity"}

    # the secret is nowhere but in the warehouse
    report_dir = tmp_path / "reports" / "survey" / run_id
    texts = {p: p.read_bytes().decode("utf-8", "replace") for p in out.rglob("*") if p.is_file()}
    texts |= {p: p.read_text("utf-8", "replace") for p in report_dir.rglob("*") if p.is_file()}
    api = _api_dump(run_id)
    texts[Path("prefect-api")] = api
    assert "fuzzy-mapped sensitive column age" in api  # the search sees the run's logs
    assert "Fuzzy mapping: what it does not hide" in texts[report_dir / "report.html"]
    for needle in _secret_strings(secret):
        leaks = [str(p) for p, text in texts.items() if needle in text]
        assert not leaks, (needle, leaks)
    captured = capsys.readouterr()
    for needle in _secret_strings(secret):
        assert needle not in captured.out + captured.err

    # `sdcflow remap` maps the miner's rules back with the stored mapping
    rules = tmp_path / "rules.txt"
    rules.write_text(
        "1. age='(1.5-2.25]' region=North 120 ==> x=y 100 conf:(0.83)\n"
        "2. age in (3.1, 3.6] ==> region=South\n"
    )
    assert main(["remap", str(spec_path), str(rules), "--integer"]) == 0
    printed = capsys.readouterr().out.splitlines()
    want = integer_ranges(preimage((1.5, 2.25), mapping.sets, "random_pick"))
    shown = " or ".join(f"{lo}..{hi}" for lo, hi in want)
    assert printed[1].startswith(f"1. age in {shown} region=North")
    assert printed[2].startswith("2. age in ")
    assert main(["remap", str(spec_path), str(rules), "--run", "0" * 32]) == 2
    empty = tmp_path / "none.txt"
    empty.write_text("education=HS-grad ==> x=y\n")
    assert main(["remap", str(spec_path), str(empty)]) == 2
    assert "remap-input" in capsys.readouterr().err
