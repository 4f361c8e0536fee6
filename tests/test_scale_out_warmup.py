"""The warm-up pieces of a Dask run (``scale.warm_up``) never delay or lose a run's audit
record: settled after it, within 30 s in all (found by the review of the scale-out change)."""

from __future__ import annotations

import time

import duckdb
from survey import QIS, write_release

from sdcflow.flows.cli import main


def test_a_failing_run_on_a_cluster_without_workers_records_its_failure_promptly(
    tmp_path, prefect_api, monkeypatch
):
    """A run that fails after the warm-up was submitted (here: ingest raises) on a cluster
    whose workers never take the warm-up pieces (a scheduler without workers) should record
    its failure at once; each warm-up future is waited up to 30 s, one after the other."""
    import os

    from distributed import LocalCluster

    import sdcflow.flows.release as release

    def broken_ingest(*a, **k):
        raise RuntimeError("ingest broke")

    monkeypatch.setattr(release, "ingest", broken_ingest)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)  # warm-up pieces = cpu_count without workers
    spec = write_release(
        tmp_path,
        rows=300,
        quasi_identifiers=QIS,
        method={"name": "ps", "k": 5, "cell_size": 100},
    )
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        t0 = time.monotonic()
        code = main(["release", str(spec), "--dask-address", cluster.scheduler_address])
        elapsed = time.monotonic() - t0
    print("exit", code, "elapsed", round(elapsed, 1))
    assert code != 0
    # before the fix: 92 s (3 warm-up pieces x 30 s each); after: at most 30 s in all
    assert elapsed < 45, f"the failed run took {elapsed:.0f} s to report its failure"


class _SlowWarmUp:
    """A warm-up future whose wait is interrupted by a second Ctrl-C."""

    def wait(self, timeout=None):
        raise KeyboardInterrupt  # the user presses Ctrl-C again while the run waits


def test_a_second_signal_while_waiting_for_the_warm_up_loses_no_audit_record(
    tmp_path, prefect_api, monkeypatch
):
    """The ``finally`` of the release flow waits the warm-up futures (up to 30 s each) before
    ``deferred_signals``: a signal in that window skips ``finish_run``."""
    import sdcflow.flows.release as release

    def broken_ingest(*a, **k):
        raise RuntimeError("ingest broke")

    monkeypatch.setattr(release, "ingest", broken_ingest)
    monkeypatch.setattr(release, "warm_up", lambda spec: [_SlowWarmUp()])
    spec = write_release(tmp_path, rows=300, quasi_identifiers=QIS)
    try:
        main(["release", str(spec)])
    except KeyboardInterrupt:
        pass
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("select run_id, status from audit.runs").fetchall()
    print(rows)
    assert rows and all(status not in (None, "running") for _, status in rows), rows
