"""Confidential copies are their owner's only, whatever the umask (issue 41, item 1).

The warehouse and its write-ahead log hold every raw record; DuckDB creates both itself
with the process's umask (``0644`` under ``022``). A run's report folder and its Data Docs
hold figures about the records. Each is checked in a real process whose umask is ``000``
(the most open), at the moment the raw records are in the files. A published release is
readable by others but never writable by them.
"""

from __future__ import annotations

import json
import os
import stat

from adversarial import cli, spawn
from survey import write_release

from sdcflow.cli.main import main
from sdcflow.warehouse.warehouse import Warehouse

WRITER = """
import json, os, stat, sys
from pathlib import Path
import pyarrow as pa
os.umask(0)
from sdcflow.warehouse.ownership import IncompleteFolder
from sdcflow.warehouse.private import private_folder
from sdcflow.warehouse.warehouse import Warehouse

root = Path(sys.argv[1])
mode = lambda p: oct(stat.S_IMODE(os.stat(p).st_mode))
wh = Warehouse(root / "wh" / "warehouse.duckdb")
wh.initialize()
run = "a" * 32
wh.ingest(pa.table({"turnover": [1.0, 2.0]}), run)
seen = {}
with wh.connect() as con:  # a write: DuckDB creates the WAL now, with the raw records in it
    con.execute(f'INSERT INTO raw."run_{run}" VALUES (3.0, 2)')
    wal = Path(str(wh.path) + ".wal")
    seen["wal"] = mode(wal) if wal.exists() else None
seen["warehouse"] = mode(wh.path)
folder = IncompleteFolder(root / "reports" / "survey" / run).create()
seen["reports"] = mode(root / "reports")
seen["run folder"] = mode(folder.path)
seen["data docs"] = mode(private_folder(folder.path / "data-docs"))
seen["umask after"] = oct(os.umask(0))
print(json.dumps(seen))
"""


def test_the_warehouse_its_wal_and_the_report_folders_are_owner_only_under_umask_0(tmp_path):
    proc = spawn(WRITER, tmp_path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen == {
        "wal": "0o600",
        "warehouse": "0o600",
        "reports": "0o700",
        "run folder": "0o700",
        "data docs": "0o700",
        "umask after": "0o0",  # the process's own umask is back once the connection closed
    }


def test_a_warehouse_others_can_read_is_reported_with_the_fix(tmp_path, capsys):
    path = tmp_path / "warehouse.duckdb"
    wh = Warehouse(path)
    wh.initialize()
    assert wh.exposure() is None  # created owner-only by sdcflow
    os.chmod(path, 0o644)  # as an earlier version (umask 022) or its owner made it
    line = wh.exposure()
    assert line is not None and f"{path} (mode 0644)" in line and f"chmod 600 {path}" in line
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # reported, its mode left as it is
    assert main(["prune", "--warehouse", str(path)]) == 0  # a dry run says it too
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"chmod 600 {path}" in err
    os.chmod(path, 0o640)
    assert "mode 0640" in wh.exposure()
    os.chmod(path, 0o600)
    assert wh.exposure() is None


def _modes(root):
    return {
        str(p.relative_to(root.parent)): stat.S_IMODE(p.lstat().st_mode)
        for p in (root, *root.rglob("*"))
    }


def test_every_report_warehouse_and_release_path_is_closed_to_others_under_umask_0(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # the owner's folder, not sdcflow's: its mode is left as it is
    spec = write_release(
        tmp_path,
        rows=300,
        edits=["total_costs == wages + other_costs", "profit == turnover - total_costs"],
        warehouse="shared/wh/deep/warehouse.duckdb",
        seed=7,
    )
    proc = cli("release", str(spec), cwd=tmp_path, umask=0)  # the most open umask
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err

    reports = _modes(tmp_path / "reports")  # the run report and every Data Docs file and folder
    assert any(p.endswith("/report.html") for p in reports)
    assert any("/data-docs/raw/static/" in p for p in reports)
    assert any("/data-docs/masked/validations/" in p for p in reports)
    warehouse = _modes(shared / "wh")  # the folders sdcflow made, the database, its lock
    assert "wh/deep/warehouse.duckdb" in warehouse
    open_to_others = {p: oct(m) for p, m in {**reports, **warehouse}.items() if m & 0o077}
    assert open_to_others == {}
    assert warehouse["wh"] == warehouse["wh/deep"] == 0o700
    assert stat.S_IMODE(shared.stat().st_mode) == 0o777

    published = _modes(tmp_path / "published")  # readable by all, writable by its owner only
    assert {p: oct(m) for p, m in published.items()} == {
        "published": "0o755",
        "published/survey": "0o755",
        **{f"published/survey/{name}": "0o644" for name in (
            ".sdcflow-release", "data.csv", "data.parquet", "manifest.json"
        )},
    }  # fmt: skip
