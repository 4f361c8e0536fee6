"""A real full disk: a size-limited tmpfs mounted for the test (root or CAP_SYS_ADMIN; the
tests skip, saying so, where none can be mounted). Issue #11, defect 8."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from adversarial import small_disk, tree
from survey import write_release

from sdcflow.cli.main import main
from sdcflow.warehouse import publish as publish_mod


def test_a_full_disk_during_publication_leaves_the_previous_release_whole(tmp_path):
    with small_disk(tmp_path / "disk", "512k") as disk:
        out = disk / "out"
        publish_mod.write_release(out, "r", pd.DataFrame({"x": [1.0, 2.0]}), {"run_id": "a" * 32})
        before = tree(out)
        big = pd.DataFrame(np.random.default_rng(0).normal(size=(60_000, 4)), columns=list("abcd"))
        with pytest.raises(OSError) as e:
            publish_mod.write_release(out, "r", big, {"run_id": "b" * 32})
        assert e.value.errno == 28  # ENOSPC, from the filesystem itself
        assert tree(out) == before  # byte for byte, and no temporary folder left
        assert publish_mod.published_run(out / "r", "r") == "a" * 32


def test_a_disk_that_fills_while_duckdb_writes_the_csv_leaves_the_previous_release_whole(
    tmp_path,
):
    """The Parquet file fits (one repeated row compresses to almost nothing), the CSV does
    not: DuckDB's COPY (numeric frames) fails with ENOSPC as an OSError, and nothing of the
    attempt is left."""
    with small_disk(tmp_path / "disk", "512k") as disk:
        out = disk / "out"
        publish_mod.write_release(out, "r", pd.DataFrame({"x": [1.0, 2.0]}), {"run_id": "a" * 32})
        before = tree(out)
        n = 200_000
        big = pd.DataFrame({"a": np.full(n, 0.12345678901234566), "b": np.full(n, 2**40)})
        with pytest.raises(OSError) as e:
            publish_mod.write_release(out, "r", big, {"run_id": "b" * 32})
        assert e.value.errno == 28
        assert "data.csv" in str(e.value.filename)
        assert tree(out) == before
        assert publish_mod.published_run(out / "r", "r") == "a" * 32


@pytest.mark.flow
def test_a_full_reports_disk_fails_the_run_in_one_line_and_leaves_no_partial_report(
    tmp_path, prefect_api, capsys
):
    with small_disk(tmp_path / "reports", "48k") as reports:
        spec = write_release(
            tmp_path,
            rows=300,
            edits=["total_costs == wages + other_costs", "profit == turnover - total_costs"],
            seed=2,
        )
        assert main(["release", str(spec)]) == 3
        err = capsys.readouterr().err
        (line,) = [x for x in err.splitlines() if x.startswith("sdcflow:")]
        assert "No space left on device" in line and "nothing was published" in line
        assert "Traceback" not in err
        assert tree(reports) == {}  # the run removed the report folder it could not finish
    assert not (tmp_path / "published").exists()
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        status, ended = con.execute("SELECT status, ended_at FROM audit.runs").fetchone()
    assert status == "failed" and ended is not None


def test_a_warehouse_out_of_memory_is_a_failure_not_bad_input(tmp_path, monkeypatch, capsys):
    """Under ``ulimit -v`` DuckDB's "Out of Memory Error" on opening the warehouse was taken
    for a file that is not DuckDB's: exit 2 with advice to point `warehouse:` elsewhere. It
    is the process's memory: exit 3, "out of memory"."""
    from sdcflow.warehouse.warehouse import Warehouse

    Warehouse(tmp_path / "w.duckdb").start_run("r1", "survey", "0" * 64, "mdav")

    def no_memory(*args, **kwargs):
        raise duckdb.OutOfMemoryException("Out of Memory Error: Allocation failure")

    monkeypatch.setattr(duckdb, "connect", no_memory)
    with pytest.raises(MemoryError, match="out of memory"):
        with Warehouse(tmp_path / "w.duckdb").connect():
            pass
    assert main(["runs", "--warehouse", str(tmp_path / "w.duckdb")]) == 3
    err = capsys.readouterr().err
    assert "out of memory" in err and "point `warehouse:`" not in err
