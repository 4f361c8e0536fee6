"""Issue 45: the flow's process must not hold the whole file. So far the publication reads the
released records from the warehouse a chunk at a time (``docs/concepts/scale.md``, step 1):
publishing a table from the warehouse raises the process's resident memory by less than the
table's size in memory, where reading it whole (the in-memory path) raises it by more.

Measured in a real subprocess each (the high-water mark of its resident set, ``VmHWM``, over
its resident set before publishing), with DuckDB's memory limited
(``SDCFLOW_DUCKDB_MEMORY_LIMIT``) so that DuckDB's buffers do not stand in for the table.
``RLIMIT_AS`` / ``RLIMIT_DATA`` cannot express this bound: DuckDB's and the allocators'
reservations of address space, never touched, are a gigabyte and more on their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sdcflow.warehouse.warehouse import Warehouse

RUN = "c" * 32
N, COLUMNS = 2_000_000, 10
CHUNK = 100_000
TABLE_BYTES = N * (COLUMNS + 1) * 8  # the table as float64 / int64 columns in memory

_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import numpy as np
    from sdcflow.warehouse.publish import Chunked, write_release
    from sdcflow.warehouse.warehouse import ROW_ID, Warehouse

    def status(key):
        for line in open("/proc/self/status"):
            if line.startswith(key):
                return int(line.split()[1]) * 1024

    path, out, run, mode, n, rows = sys.argv[1:7]
    n, rows, out = int(n), int(rows), Path(out)
    wh = Warehouse(path)
    assert wh.count_rows("masked", run) == n
    order = np.random.default_rng(0).permutation(n)
    base = status("VmRSS")
    if mode == "streamed":
        chunks = Chunked(lambda: wh.shuffled_chunks("masked", run, order, rows))
        write_release(out, "r", chunks, {"run_id": run})
    else:
        public = wh.read_frame("masked", run).drop(columns=[ROW_ID]).iloc[order]
        write_release(out, "r", public, {"run_id": run})
    print(status("VmHWM") - base)
    """
)


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("census") / "w.duckdb"
    wh = Warehouse(path)
    wh.initialize()
    columns = ", ".join(f"sin(i * {j + 1.1}) * 1e3 AS x{j}" for j in range(COLUMNS))
    with wh.connect() as con:
        con.execute("SET enable_progress_bar = false")
        con.execute(
            f'CREATE TABLE masked."run_{RUN}" AS SELECT i AS sdc_row_id, {columns} '
            f"FROM range({N}) t(i)"
        )
    return path


def _grown(stored: Path, tmp_path: Path, mode: str) -> int:
    """Bytes the publishing subprocess's resident set grew by (its high-water mark)."""
    env = {**os.environ, "SDCFLOW_DUCKDB_MEMORY_LIMIT": "48MB"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(stored), str(tmp_path / mode), RUN, mode, str(N),
         str(CHUNK)],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    published = tmp_path / mode / "r" / "data.csv"
    assert published.stat().st_size > TABLE_BYTES  # the whole table was published
    return int(out.stdout.split()[-1])


def test_publishing_from_the_warehouse_holds_less_than_the_table(stored, tmp_path):
    streamed = _grown(stored, tmp_path, "streamed")
    whole = _grown(stored, tmp_path, "whole")
    assert whole > TABLE_BYTES  # the measure sees a table held whole
    assert streamed < TABLE_BYTES, (streamed, whole, TABLE_BYTES)
