"""A damaged warehouse is said as such, and nothing is written to it (issue 41, item 5).

Truncated to half its size, a warehouse gave exit 3 with DuckDB's raw ``IOException: Could not
read enough bytes`` and left a ``.wal`` holding the new run's raw records; a backup restored at
the same path replayed that log, and the failed run's raw table was in no
``audit.run_tables``, so retention never dropped it. Real files, damaged as a disk or a
half-finished copy damages them.
"""

from __future__ import annotations

import os
import shutil
import socket
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from adversarial import tree
from survey import write_release

from sdcflow.cli.main import main
from sdcflow.errors import WarehouseDamaged
from sdcflow.warehouse.warehouse import Warehouse

DEAD = 2**22 + 12345  # above the default pid_max: no such process
RUNS = ("1" * 32, "2" * 32)


def _warehouse(path: Path) -> Warehouse:
    """A warehouse of two published runs, each with a raw copy of many blocks."""
    wh = Warehouse(path)
    for run in RUNS:
        wh.start_run(run, "survey", "s" * 64, "mdav")
        n = 400_000
        wh.ingest(pa.table({"turnover": pa.array(range(n), pa.float64()),
                            "label": [f"firm-{i:07d}" for i in range(n)]}), run)  # fmt: skip
        wh.finish_run(run, "published")
    return wh


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _runs(path: Path) -> list[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return [r[0] for r in con.execute("SELECT run_id FROM audit.runs ORDER BY 1").fetchall()]


def test_a_truncated_warehouse_stops_the_run_before_any_write_in_one_line(tmp_path, capsys):
    spec = write_release(tmp_path, rows=60, seed=3)
    path = tmp_path / "warehouse.duckdb"
    _warehouse(path)
    backup = tmp_path / "backup.duckdb"
    shutil.copy(path, backup)
    os.truncate(path, path.stat().st_size // 2)  # a half-finished copy
    before = tree(tmp_path)
    capsys.readouterr()
    for command in (["release", str(spec)], ["check", str(spec)], ["prune", str(spec), "--yes"]):
        assert main(command) == 3
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and "IOException" not in err
        assert f"warehouse {path} is damaged" in err and "restore it from a backup" in err
    assert tree(tmp_path) == before  # nothing written: no .wal, no report, no release
    assert not _wal(path).exists()
    # under the writer lock (the preflight leaves the file to a release holding it), the
    # run's first write checks it again
    with pytest.raises(WarehouseDamaged):
        Warehouse(path).start_run("6" * 32, "survey", "s" * 64, "mdav")
    assert tree(tmp_path) == before
    shutil.copy(backup, path)  # the backup restored at the same path replays nothing
    assert _runs(path) == list(RUNS)


def _corrupt_a_block_of(path: Path, run: str) -> None:
    """Flip bytes inside one data block of the run's raw table (its checksum then fails)."""
    with duckdb.connect(str(path), read_only=True) as con:
        block_size = con.execute("PRAGMA database_size").fetchone()[2]
        block = con.execute(
            f"SELECT max(block_id) FROM pragma_storage_info('raw.\"run_{run}\"') "
            "WHERE persistent AND segment_type = 'VARCHAR'"
        ).fetchone()[0]
    with path.open("r+b") as fh:
        fh.seek(3 * 4096 + block * block_size + 512)
        fh.write(b"\xff" * 64)


def test_a_damaged_block_found_during_a_run_stops_it_and_leaves_no_wal(tmp_path):
    path = tmp_path / "warehouse.duckdb"
    wh = _warehouse(path)
    _corrupt_a_block_of(path, RUNS[0])
    wh = Warehouse(path)  # the cheap check reads the header, the catalog and the audit
    run = "3" * 32
    wh.start_run(run, "survey", "s" * 64, "mdav")
    with pytest.raises(WarehouseDamaged) as e:
        with wh.connect() as con:  # a write (the log begins), then the damaged block is read
            con.execute("UPDATE audit.runs SET message = 'x' WHERE run_id = ?", [run])
            con.execute(f'SELECT sum(length(label)) FROM raw."run_{RUNS[0]}"').fetchall()
    assert f"warehouse {path} is damaged" in str(e.value) and "checksum" in str(e.value)
    assert "\n" not in str(e.value)
    assert not _wal(path).exists()
    with pytest.raises(WarehouseDamaged):  # never written to again
        wh.finish_run(run, "failed")


def test_retention_drops_a_run_copy_its_run_never_recorded(tmp_path, capsys):
    # what the restored backup held once it replayed the failed run's log: the run still
    # `running` (its process is gone) and its raw table, which no audit.run_tables row names
    path = tmp_path / "warehouse.duckdb"
    wh = Warehouse(path)
    wh.initialize()
    failed, foreign = "4" * 32, "5" * 32
    with wh.connect() as con:
        con.execute(
            "INSERT INTO audit.runs (run_id, release, spec_sha256, method, started_at, status, "
            "host, pid) VALUES (?, 'survey', 's', 'mdav', ?, 'running', ?, ?)",
            [failed, datetime.now(UTC), socket.gethostname(), DEAD],
        )
        for table in (f'raw."run_{failed}"', f'edited."run_{failed}"', f'raw."run_{foreign}"'):
            con.execute(f"CREATE TABLE {table} AS SELECT 1.5 AS turnover")
    assert main(["prune", "--warehouse", str(path)]) == 0  # a dry run lists it
    assert failed in capsys.readouterr().out
    assert main(["prune", "--warehouse", str(path), "--yes"]) == 0
    with duckdb.connect(str(path), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        status = con.execute("SELECT status FROM audit.runs WHERE run_id = ?", [failed]).fetchone()
    assert f"run_{failed}" not in tables  # both its copies
    assert f"run_{foreign}" in tables  # named like a copy, of no run sdcflow recorded: kept
    assert status == ("interrupted",)
