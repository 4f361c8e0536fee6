"""One writer per warehouse; readers never make a release fail (issue #11, defect 3).

The lock is an exclusive ``flock(2)`` on ``<warehouse>.lock``; DuckDB's own file lock (one
process per file, readers included) is met by connections that retry. Every test here uses
real processes.
"""

from __future__ import annotations

import time

import duckdb
import pytest
from adversarial import alive, spawn
from survey import write_release

from sdcflow.cli.main import main
from sdcflow.errors import WarehouseBusy
from sdcflow.warehouse.warehouse import Warehouse

HOLD_LOCK = """
import sys, time
from sdcflow.warehouse.warehouse import Warehouse
with Warehouse(sys.argv[1]).lock(0):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""

HOLD_FILE = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("open", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def test_a_second_writer_waits_then_gives_up_in_one_line(tmp_path):
    path = tmp_path / "w.duckdb"
    holder = spawn(HOLD_LOCK, path, 1.5)
    assert holder.stdout.readline().strip() == "held"
    held_at = t0 = time.monotonic()
    with pytest.raises(WarehouseBusy) as e, Warehouse(path).lock(wait=0.3):
        pass
    assert 0.3 <= time.monotonic() - t0 < 1.4
    assert str(holder.pid) in str(e.value) and "\n" not in str(e.value)
    with Warehouse(path).lock(wait=30):  # waits for the holder to let go
        assert time.monotonic() - held_at >= 1.4
    holder.wait()


def test_a_killed_writer_releases_the_lock_at_once(tmp_path):
    path = tmp_path / "w.duckdb"
    holder = spawn(HOLD_LOCK, path, 60)
    assert holder.stdout.readline().strip() == "held"
    holder.kill()  # SIGKILL: no cleanup runs, the kernel drops the flock
    holder.wait()
    t0 = time.monotonic()
    with Warehouse(path).lock(wait=5):
        assert time.monotonic() - t0 < 1.0


def test_connections_wait_while_another_process_has_the_file_open(tmp_path):
    path = tmp_path / "w.duckdb"
    Warehouse(path).initialize()
    other = spawn(HOLD_FILE, path, 1.0)
    assert other.stdout.readline().strip() == "open"
    with pytest.raises(WarehouseBusy), Warehouse(path, connect_retry=0.2).connect():
        pass  # not an InputError: nothing is wrong with the input, and no "remove the file"
    with Warehouse(path, connect_retry=30).connect(read_only=True) as con:
        assert con.execute("SELECT count(*) FROM audit.runs").fetchone() == (0,)
    other.wait()


def test_a_reader_in_a_loop_never_makes_the_writer_fail(tmp_path):
    """A real reader process polls ``runs`` while this process writes run after run."""
    path = tmp_path / "w.duckdb"
    writer = Warehouse(path)
    writer.initialize()
    reader = spawn(
        """
        import sys, time
        from sdcflow.warehouse.warehouse import Warehouse
        wh, ok = Warehouse(sys.argv[1]), 0
        deadline = time.monotonic() + float(sys.argv[2])
        while time.monotonic() < deadline:
            wh.runs()
            ok += 1
        print(ok)
        """,
        path,
        1.5,
    )
    done = 0
    with writer.lock(0):
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            run_id = f"{done:032x}"
            writer.start_run(run_id, "r", "0" * 64, "mdav")
            writer.record_checks(run_id, [])
            writer.finish_run(run_id, "checked")
            done += 1
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    assert int(out) > 0 and done > 0
    with duckdb.connect(str(path), read_only=True) as con:
        assert (
            con.execute("SELECT count(*) FROM audit.runs WHERE status = 'checked'").fetchone()[0]
            == done
        )


def test_a_release_behind_another_exits_3_in_one_line_before_starting_anything(tmp_path, capsys):
    spec = write_release(tmp_path, rows=60)
    # held until killed: the release reaches the lock after its preflight, its API's start
    # and its imports, which on a first run include compiling the mask's kernels
    holder = spawn(HOLD_LOCK, tmp_path / "warehouse.duckdb", 3600)
    assert holder.stdout.readline().strip() == "held"
    try:
        assert main(["release", str(spec), "--wait", "0.5"]) == 3
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "nothing was published" in err
    assert "remove" not in err
    assert not (tmp_path / "published").exists() and not (tmp_path / "reports").exists()
    assert not alive(holder.pid)


def test_wait_must_be_a_number_of_seconds(tmp_path, capsys):
    spec = write_release(tmp_path, rows=60)
    with pytest.raises(SystemExit) as e:
        main(["release", str(spec), "--wait", "soon"])
    assert e.value.code == 2
    assert "--wait" in capsys.readouterr().err


@pytest.mark.parametrize("variable", ["SDCFLOW_LOCK_WAIT", "SDCFLOW_CONNECT_RETRY"])
def test_an_endless_wait_from_the_environment_is_refused(tmp_path, capsys, monkeypatch, variable):
    """SDCFLOW_LOCK_WAIT=inf is refused as `--wait inf` is, rather than wait for ever."""
    spec = write_release(tmp_path, rows=60)
    monkeypatch.setenv(variable, "inf")
    assert main(["release", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and variable in err and "finite" in err
    assert not (tmp_path / "published").exists()


def test_a_prefect_api_that_never_answers_ends_the_run_before_the_warehouse(tmp_path):
    """With PREFECT_API_URL at a server that accepts connections and never answers, a
    release must not run for as long as anyone lets it, holding the warehouse's writer
    lock (every other release and `prune --yes` would exit 3 behind it). The configured
    API must answer within SDCFLOW_API_WAIT seconds (default 30): exit 3 in one line,
    before the warehouse is touched. A real process, a real silent socket."""
    import os
    import socket
    import subprocess
    import sys

    spec = write_release(tmp_path, rows=60)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts, never answers
        env = {
            **os.environ,
            "PREFECT_API_URL": f"http://127.0.0.1:{silent.getsockname()[1]}/api",
            "SDCFLOW_API_WAIT": "3",
        }
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "sdcflow.cli", "release", str(spec)],
            env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path,
        )  # fmt: skip
        took = time.monotonic() - start
    assert done.returncode == 3, done.stderr
    err = done.stderr.strip().splitlines()
    assert len(err) == 1 and "did not answer within 3 s" in err[0] and "Traceback" not in err[0]
    assert took < 120
    assert not (tmp_path / "warehouse.duckdb").exists()
    assert not (tmp_path / "published").exists()


RUN_UNDER_LOCK = """
import sys, time, uuid
import pyarrow as pa
from sdcflow.warehouse.warehouse import Warehouse
wh = Warehouse(sys.argv[1])
with wh.lock(0):
    run_id = uuid.uuid4().hex
    wh.start_run(run_id, "survey", "s" * 64, "mdav")
    wh.ingest(pa.table({"x": [1, 2, 3]}), run_id)
    print(run_id, flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_one_lock_whatever_the_name_of_the_warehouse(tmp_path, capsys):
    """A release holding the warehouse through a symbolic link to the file and a
    ``prune --yes`` naming the file itself share one writer lock: before, each name had its
    own lock file, so prune took the running release for ended, settled it ``interrupted``
    and dropped the raw copy it was still working on."""
    real = tmp_path / "disk" / "w.duckdb"
    real.parent.mkdir()
    Warehouse(real).initialize()
    (tmp_path / "current.duckdb").symlink_to(real)
    holder = spawn(RUN_UNDER_LOCK, tmp_path / "current.duckdb", 30)
    try:
        run_id = holder.stdout.readline().strip()
        assert len(run_id) == 32
        assert main(["prune", "--warehouse", str(real), "--yes", "--wait", "0"]) == 3
        assert "in use by another release" in capsys.readouterr().err
        runs = Warehouse(real).runs(limit=5)
        assert list(runs["status"]) == ["running"]
        assert len(Warehouse(real).read_frame("raw", run_id)) == 3
    finally:
        holder.kill()
        holder.wait()


def test_a_warehouse_with_another_hard_link_is_refused(tmp_path, capsys):
    """Each name of a warehouse file takes the lock beside it: through a second hard link a
    release and ``prune --yes`` held two locks, so prune took the running release for ended,
    settled it ``interrupted`` and dropped its raw copy (the case 2f37a54 fixed for symbolic
    links). A warehouse file with other hard links is refused before any run (reason
    ``warehouse``)."""
    import os

    from errorline import cli_error

    from sdcflow.errors import Reason

    real = tmp_path / "w.duckdb"
    Warehouse(real).initialize()
    os.link(real, tmp_path / "other.duckdb")
    holder = spawn(RUN_UNDER_LOCK, tmp_path / "other.duckdb", 30)
    try:
        run_id = holder.stdout.readline().strip()
        assert len(run_id) == 32
        assert main(["prune", "--warehouse", str(real), "--yes", "--wait", "0"]) == 2
        assert cli_error(capsys.readouterr().err)[0] == Reason.WAREHOUSE
        assert list(Warehouse(real).runs(limit=5)["status"]) == ["running"]
        assert len(Warehouse(real).read_frame("raw", run_id)) == 3
    finally:
        holder.kill()
        holder.wait()
