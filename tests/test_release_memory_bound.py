"""A release whose file does not fit the memory given to the flow's process completes on the
streamed path, and the in-memory path, given the same memory, does not (issue 45, item 3).

The memory limit is a watchdog in the release's own process, as a container's memory limit
acts: every 10 ms it reads the process's resident set (``/proc/self/statm``) and ends the
process (exit 99) the moment it exceeds the limit. ``RLIMIT_AS`` cannot serve: DuckDB and the
allocators reserve gigabytes of address space they never touch.

The limit is the peak of the same release on a file a tenth the size, plus five times the
larger file's records as a pandas frame. Measured on these files: the in-memory path needs
about eight times the frame beyond the small file's peak (frame, repaired copy, mask,
released frame, the gates' matrices), the streamed path about three (the local suppression's
per-record codes and DuckDB's buffers, held to 128 MB here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.slow

WATCHED = r"""
import os, resource, sys, threading, time

limit, CHUNK = int(sys.argv[1]), 50_000
page = os.sysconf("SC_PAGE_SIZE")


def watch():
    with open("/proc/self/statm") as statm:
        while True:
            statm.seek(0)
            rss = int(statm.read().split()[1]) * page
            if limit and rss > limit:
                os.write(2, f"over the memory limit: {rss} > {limit} bytes\n".encode())
                os._exit(99)
            time.sleep(0.01)


threading.Thread(target=watch, daemon=True).start()
import sdcflow.tasks.edits, sdcflow.tasks.publish, sdcflow.warehouse.publish
import sdcflow.warehouse.sources
from sdcflow.cli.main import main

# the file's reading batches, the repair's ranges and publication chunks scaled to this
# file as their million records are to a census: else one would be the whole file
sdcflow.warehouse.sources.SourceData.batches.__defaults__ = (CHUNK,)
sdcflow.warehouse.publish.CHUNK_ROWS = sdcflow.tasks.publish.CHUNK_ROWS = CHUNK
sdcflow.tasks.edits.REPAIR_RANGE = CHUNK

code = main(sys.argv[2:])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
os.write(1, f"\npeak {peak}\n".encode())
os._exit(code)
"""

KEYS = ["x0", "x1", "x2", "x3", "x4", "x5", "sex", "region"]


def _census(folder: Path, n: int) -> int:
    """A census-like Parquet file of ``n`` records; returns its size as a pandas frame."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.standard_normal((n, 6)), columns=KEYS[:6])
    frame["sex"] = rng.choice(["female", "male"], n)
    frame["region"] = rng.choice([f"region {j}" for j in range(4)], n)
    frame.insert(0, "id", np.arange(n))
    frame.to_parquet(folder / "data.parquet", index=False, row_group_size=100_000)
    return int(frame.memory_usage(deep=True).sum())


def _release(
    folder: Path, limit: int, streamed: bool, repair: bool = False
) -> tuple[int, int | None, str]:
    spec = {
        "release": "census",
        "source": "data.parquet",
        "id_column": "id",
        "quasi_identifiers": KEYS,
        # under repair, a sixth of the records break the rule and are moved
        "on_violation": "repair" if repair else "fail",
        "edits": ["x0 >= -1" if repair else "x0 >= -1000"],
        "method": {"name": "mdav", "k": 5, "cell_size": 2000},
        "checks": {"k_anonymity": 5},
        "output": "published",
        "warehouse": "warehouse.duckdb",
        "reports": "reports",
    }
    (folder / "release.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    env = {
        **os.environ,
        "SDCFLOW_STREAMED_ROWS": "0" if streamed else str(10**9),
        "SDCFLOW_DUCKDB_MEMORY_LIMIT": "128MB",
    }
    done = subprocess.run(
        [sys.executable, "-c", WATCHED, str(limit), "release", "release.yaml"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    peaks = [line for line in done.stdout.splitlines() if line.startswith("peak ")]
    peak = int(peaks[-1].split()[1]) if peaks else None
    return done.returncode, peak, done.stderr[-3000:]


def test_a_streamed_release_completes_in_less_memory_than_its_file_takes(tmp_path):
    small, large = tmp_path / "small", tmp_path / "large"
    small.mkdir()
    large.mkdir()
    _census(small, 40_000)
    code, small_peak, err = _release(small, 0, streamed=True)
    assert code == 0 and small_peak, err
    frame_bytes = _census(large, 400_000)
    limit = small_peak + 5 * frame_bytes
    code, peak, err = _release(large, limit, streamed=True)
    assert code == 0, f"the streamed release went over {limit} bytes:\n{err}"
    manifest = json.loads((large / "published" / "census" / "manifest.json").read_text())
    assert manifest["method_details"]["path"] == "streamed" and manifest["rows"] == 400_000
    assert peak is not None and peak <= limit
    # the same memory is not enough for the in-memory path: the limit is a real one
    for leftover in ("published", "reports", "warehouse.duckdb", "warehouse.duckdb.lock"):
        target = large / leftover
        if target.is_dir():
            import shutil

            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    code, _, err = _release(large, limit, streamed=False)
    assert code == 99, f"the in-memory path stayed within {limit} bytes (exit {code}):\n{err}"


def test_a_streamed_release_that_repairs_its_records_completes_in_the_same_memory(tmp_path):
    """``on_violation: repair``: the records are repaired in ranges into ``edited``, which
    the mask reads; the flow's process holds one range of the repaired columns."""
    small, large = tmp_path / "small", tmp_path / "large"
    small.mkdir()
    large.mkdir()
    _census(small, 40_000)
    code, small_peak, err = _release(small, 0, streamed=True, repair=True)
    assert code == 0 and small_peak, err
    limit = small_peak + 5 * _census(large, 400_000)
    code, peak, err = _release(large, limit, streamed=True, repair=True)
    assert code == 0, f"the streamed release went over {limit} bytes:\n{err}"
    manifest = json.loads((large / "published" / "census" / "manifest.json").read_text())
    assert manifest["method_details"]["path"] == "streamed" and manifest["rows"] == 400_000
    assert manifest["edit_rules"]["repaired_records"] > 40_000
    assert manifest["information_loss"]["against_repaired_records"] is not None
    assert peak is not None and peak <= limit
