"""The warm-up pieces of a Dask run (``scale.warm_up``) never delay or lose a run's audit
record: settled after it, within 30 s in all."""

from __future__ import annotations

import time

import duckdb
from survey import QIS, write_release

from sdcflow.cli.main import main


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
    # at most 30 s in all, not 30 s per warm-up piece (three pieces would take 90 s)
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


def test_a_scheduler_that_stops_answering_does_not_hold_the_warm_up(tmp_path, monkeypatch):
    """How many warm-up pieces to send is asked of an existing cluster's scheduler; one that
    is up but does not answer (a real ``dask scheduler`` process, stopped with SIGSTOP) held
    the run until it came back. Now the question waits 5 s, then the local CPU count is used."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    from types import SimpleNamespace

    from distributed import Client

    from sdcflow.spec.load import load_spec
    from sdcflow.tasks import scale

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    scheduler = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "distributed.cli.dask_scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-dashboard",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = Client(f"tcp://127.0.0.1:{port}", timeout=60)
        try:
            runner = SimpleNamespace(task_runner=SimpleNamespace(client=client))
            monkeypatch.setattr(scale.FlowRunContext, "get", staticmethod(lambda: runner))
            monkeypatch.setattr(os, "cpu_count", lambda: 3)
            spec = load_spec(write_release(tmp_path, rows=50, method={"name": "mdav", "k": 5}))
            assert spec.dask.workers is None
            assert scale._workers(spec) == 3  # answering, no worker yet: the CPU count
            scheduler.send_signal(signal.SIGSTOP)
            t0 = time.monotonic()
            assert scale._workers(spec) == 3
            assert time.monotonic() - t0 < 20, "the warm-up waited for a silent scheduler"
        finally:
            scheduler.send_signal(signal.SIGCONT)
            client.close(timeout=10)
    finally:
        scheduler.kill()
        scheduler.wait()
