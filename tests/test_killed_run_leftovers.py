"""What a run killed by SIGKILL leaves beside the warehouse (the ingest's copy of the source,
the streamed mask's pieces) is removed by the next run of the warehouse, and nothing else
is: a folder under a matching name that sdcflow did not make, or that holds what sdcflow
does not write, stays (sdcflow.warehouse.leftovers)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sdcflow.warehouse.leftovers import PIECES_PREFIX, sweep_run_leftovers
from sdcflow.warehouse.warehouse import Warehouse

# the release in a process that kills itself (SIGKILL: no finally, no exit handler) at a
# step the test names: after the ingest's private copy is made, or after the pieces are
# written and before any is masked
_KILLED = """
import os, signal, sys
from sdcflow.cli.main import main
import sdcflow.warehouse.warehouse as warehouse
import sdcflow.tasks.cells as cells

def killed_after(real):
    def wrapper(*args, **kwargs):
        out = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)
        return out
    return wrapper

if sys.argv[1] == "ingest":
    warehouse.private_copy = killed_after(warehouse.private_copy)
else:
    cells.write_pieces = killed_after(cells.write_pieces)
sys.exit(main(["release", "release.yaml"]))
"""


def _release_folder(folder: Path) -> None:
    rng = np.random.default_rng(5)
    n = 600
    X = rng.standard_normal((n, 3)) * [1.0, 10.0, 100.0]
    X[rng.random(X.shape) < 0.02] = np.nan
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    frame["region"] = rng.choice(["north", "south"], n)
    frame.insert(0, "id", np.arange(n))
    frame.to_parquet(folder / "data.parquet", index=False)
    spec = {
        "release": "census",
        "source": "data.parquet",
        "id_column": "id",
        "quasi_identifiers": ["x0", "x1", "x2", "region"],
        "on_violation": "fail",
        "missing_values": [""],
        "method": {"name": "mdav", "k": 5, "cell_size": 200},
        "checks": {"k_anonymity": 5, "max_information_loss": 100},
        "seed": 3,
    }
    (folder / "release.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


def _killed(folder: Path, step: str) -> None:
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "SDCFLOW_STREAMED_ROWS": "0", "PREFECT_API_URL": PREFECT_API_URL.value()}
    done = subprocess.run(
        [sys.executable, "-c", _KILLED, step], cwd=folder, env=env, capture_output=True
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]


def _leftovers(folder: Path) -> list[str]:
    return sorted(
        p.name for p in folder.iterdir() if ".ingest-" in p.name or PIECES_PREFIX in p.name
    )


@pytest.mark.flow
def test_the_next_run_removes_what_killed_runs_left_and_nothing_else(
    tmp_path, prefect_api, monkeypatch
):
    from sdcflow.cli.main import main

    _release_folder(tmp_path)
    _killed(tmp_path, "pieces")
    (pieces,) = _leftovers(tmp_path)
    assert pieces.startswith(PIECES_PREFIX)
    assert any((tmp_path / pieces / "pieces").rglob("*.parquet"))
    # the next run removes them as it starts, and is killed after copying the source
    _killed(tmp_path, "ingest")
    (ingest,) = _leftovers(tmp_path)
    assert ".ingest-" in ingest
    assert [p.name for p in (tmp_path / ingest).iterdir()] == ["source.parquet"]
    # look-alikes sdcflow did not make, or that hold what it does not write: kept
    stranger = tmp_path / f"{PIECES_PREFIX}{'0' * 32}"  # no run of this warehouse
    stranger.mkdir(mode=0o700)
    changed = tmp_path / (ingest[:-8] + "abcd1234")  # the ingest's own name, but a user's file
    changed.mkdir(mode=0o700)
    (changed / "notes.txt").write_text("mine")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SDCFLOW_STREAMED_ROWS", "0")
    assert main(["check", "release.yaml"]) == 0
    assert _leftovers(tmp_path) == sorted([stranger.name, changed.name])
    assert (changed / "notes.txt").read_text() == "mine"


def test_a_killed_masks_work_table_goes_with_its_folder_and_only_a_recorded_runs(tmp_path):
    """The pieces' work table (``masked.sdc_pieces_<run>``) of a run this warehouse records
    is dropped with the run's folder; a folder of a run it does not record stays, and so do
    a link and a folder holding a file the mask does not write."""
    warehouse = Warehouse(tmp_path / "w.duckdb")
    warehouse.initialize()
    ended, other = "a" * 32, "b" * 32
    warehouse.start_run(ended, "r", "0" * 64, "mdav")
    with warehouse.connect() as con:
        con.execute("CREATE SCHEMA IF NOT EXISTS masked")
        con.execute(f"CREATE TABLE masked.sdc_pieces_{ended} AS SELECT 1 AS x")
    made = tmp_path / f"{PIECES_PREFIX}{ended}"
    (made / "pieces" / "sdc_piece=0").mkdir(parents=True)
    made.chmod(0o700)
    (made / "pieces" / "sdc_piece=0" / "data_0.parquet").write_bytes(b"PAR1")
    unrecorded = tmp_path / f"{PIECES_PREFIX}{other}"
    unrecorded.mkdir(mode=0o700)
    assert sweep_run_leftovers(warehouse, current=None) == [made]
    assert not made.exists() and unrecorded.exists()
    with warehouse.connect(read_only=True) as con:
        tables = con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'masked'"
        ).fetchall()
    assert tables == []
    # the caller's own run is never swept; a folder with a file of someone else's stays
    (made / "masked").mkdir(parents=True)
    made.chmod(0o700)
    assert sweep_run_leftovers(warehouse, current=ended) == []
    (made / "masked" / "notes.txt").write_text("x")
    assert sweep_run_leftovers(warehouse, current=None) == []
    assert (made / "masked" / "notes.txt").read_text() == "x"
    (made / "masked" / "notes.txt").unlink()
    (made / "masked" / "part-0.parquet").write_bytes(b"")
    assert sweep_run_leftovers(warehouse, current=None) == [made]  # what the mask writes
