"""The real command line under real signals, real concurrency and a real full disk (issue
#11, defects 2, 3, 4, 8).

Every test starts ``sdcflow`` processes that each start and own their Prefect API server
(10-40 s apiece on a small machine): they are marked ``slow`` and run with
``SDCFLOW_SLOW_TESTS=1 pytest -m slow tests/test_adversarial_processes.py``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from adversarial import alive, children, cli, in_session, small_disk, spawn, wait_for
from survey import write_release

from sdcflow.warehouse.publish import published_run

pytestmark = pytest.mark.slow

RELEASE = "survey"


def _spec(tmp: Path, **overrides) -> Path:
    return write_release(tmp, rows=400, seed=1, **overrides)


def _server_of(pid: int, timeout: float = 240) -> int:
    """The Prefect API server the command line ``pid`` started (its uvicorn child)."""
    found: list[int] = []

    def look() -> bool:
        for child in children(pid):
            try:
                cmd = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            if b"uvicorn" in cmd:
                found.append(child)
                return True
        return False

    assert wait_for(look, timeout=timeout, poll=0.05), "no Prefect server was started"
    return found[0]


def _audit(tmp: Path) -> dict[str, tuple[str, str | None]]:
    with duckdb.connect(str(tmp / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT run_id, status, published_to FROM audit.runs").fetchall()
    return {r: (s, p) for r, s, p in rows}


def _whole(folder: Path) -> bool:
    manifest = json.loads((folder / "manifest.json").read_text())
    return all(
        hashlib.sha256((folder / name).read_bytes()).hexdigest() == entry["sha256"]
        for name, entry in manifest["files"].items()
    )


def test_sigkill_of_the_command_line_leaves_no_prefect_server(tmp_path):
    spec = _spec(tmp_path)
    proc = cli("release", str(spec), cwd=tmp_path)
    server = _server_of(proc.pid)
    proc.kill()  # SIGKILL: no exit handler of the command line runs
    proc.wait()
    assert wait_for(lambda: not alive(server), timeout=15, poll=0.1), "orphaned Prefect server"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_at_the_publish_step_completes_the_publication_and_says_so(tmp_path, sig):
    spec = _spec(tmp_path)
    proc = cli("release", str(spec), cwd=tmp_path)
    server = _server_of(proc.pid)
    published = tmp_path / "published"
    assert wait_for(lambda: any(published.glob(f".{RELEASE}.tmp-*")), timeout=300, poll=0.001)
    proc.send_signal(sig)  # while the release is being written
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    (line,) = [x for x in out.splitlines() if x.startswith("published")]
    run_id = line.rsplit("run ", 1)[1].rstrip(")")
    assert published_run(published / RELEASE, RELEASE) == run_id and _whole(published / RELEASE)
    assert _audit(tmp_path)[run_id] == ("published", str((published / RELEASE).resolve()))
    assert signal.Signals(sig).name in err and "interrupted; nothing" not in err
    assert wait_for(lambda: not alive(server), timeout=15, poll=0.1)


def test_kills_at_random_moments_never_leave_disk_and_audit_disagreeing(tmp_path):
    spec = _spec(tmp_path)
    first = cli("release", str(spec), cwd=tmp_path)
    assert first.wait(timeout=600) == 0
    rng = random.Random(11)
    seen = []
    for _ in range(4):
        before = published_run(tmp_path / "published" / RELEASE, RELEASE)
        proc = cli("release", str(spec), "--force", cwd=tmp_path)  # a real republication
        _server_of(proc.pid)
        time.sleep(rng.uniform(0.0, 12.0))  # anywhere in the run, publication included
        sig = rng.choice([signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=300)
        reader = cli("runs", str(spec), cwd=tmp_path)  # read-only: settles nothing on disk
        shown, _ = reader.communicate(timeout=120)
        assert reader.returncode == 0
        live = published_run(tmp_path / "published" / RELEASE, RELEASE)
        assert live is not None and _whole(tmp_path / "published" / RELEASE)
        said_published = "published " in out
        if live != before:  # the swap happened: the run must be, or be shown as, published
            assert sig == signal.SIGKILL or said_published
            row = next(x for x in shown.splitlines() if x.startswith(live[:8]))  # ids cut to 8
            assert "published" in row
        else:
            assert not said_published
        seen.append((sig.name, live != before))
    # the next run settles what the killed ones left, from what is on disk
    final = cli("release", str(spec), "--force", cwd=tmp_path)
    assert final.wait(timeout=600) == 0
    audit = _audit(tmp_path)
    assert not [r for r, (s, _) in audit.items() if s == "running"]
    for run_id, (status, where) in audit.items():
        assert (status == "published") == (where is not None), (run_id, status, where, seen)


def test_two_releases_and_a_reader_on_one_warehouse(tmp_path):
    spec = _spec(tmp_path)
    first = cli("release", str(spec), "--force", cwd=tmp_path)
    time.sleep(1)
    # --force on both: the same input and spec would otherwise publish nothing new (status
    # unchanged), and either one may take the lock first (each starts its own Prefect server)
    second = cli("release", str(spec), "--wait", "600", "--force", cwd=tmp_path)
    reader = spawn(
        """
        import subprocess, sys, time
        ok = bad = 0
        deadline = time.monotonic() + float(sys.argv[2])
        while time.monotonic() < deadline:
            done = subprocess.run([sys.executable, "-m", "sdcflow.cli", "runs", sys.argv[1]],
                                  capture_output=True)
            ok, bad = ok + (done.returncode == 0), bad + (done.returncode != 0)
        print(ok, bad)
        """,
        spec,
        40,
    )
    assert first.wait(timeout=600) == 0
    assert second.wait(timeout=600) == 0
    out, _ = reader.communicate(timeout=120)
    ok, bad = map(int, out.split())
    assert ok > 0 and bad == 0
    statuses = [s for s, _ in _audit(tmp_path).values()]
    assert statuses == ["published", "published"]


def test_an_unexpected_error_exits_3_in_one_line_and_stops_the_server(tmp_path):
    with small_disk(tmp_path / "out", "16k"):  # the release needs ~50 KB
        spec = _spec(tmp_path, output="out")
        proc = cli("release", str(spec), cwd=tmp_path)
        server = _server_of(proc.pid)
        _, err = proc.communicate(timeout=600)
    assert proc.returncode == 3
    lines = [x for x in err.splitlines() if x.startswith("sdcflow:")]
    assert len(lines) == 1 and "No space left on device" in lines[0]
    assert "Traceback" not in err
    assert [s for s, _ in _audit(tmp_path).values()] == ["failed"]
    assert wait_for(lambda: not alive(server), timeout=15, poll=0.1)


def test_imports_overlap_the_server_start_and_a_failure_there_stops_the_server(tmp_path):
    """``owned_prefect_api(meanwhile=...)``: the command line imports the flow while its
    temporary server boots in its own process (about 2 s less per run here); the server is
    already started when ``meanwhile`` runs, and an error in it stops the server."""
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    proc = spawn(
        """
        import os, sys
        from pathlib import Path
        from sdcflow.flows.server import owned_prefect_api

        def meanwhile():
            for entry in Path("/proc").glob("[0-9]*/stat"):
                fields = entry.read_text().rsplit(")", 1)[1].split()
                cmd = Path(entry.parent, "cmdline").read_bytes()
                if int(fields[1]) == os.getpid() and b"uvicorn" in cmd:
                    print(entry.parent.name, flush=True)
            raise RuntimeError("an import failed")

        try:
            with owned_prefect_api(meanwhile=meanwhile):
                print("never", flush=True)
        except RuntimeError as e:
            print(e, flush=True)
        """,
        cwd=tmp_path,
        env=environment,
    )
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    server, message = out.split()[0], out.strip().splitlines()[-1]
    assert message == "an import failed" and "never" not in out
    assert wait_for(lambda: not alive(int(server)), timeout=15, poll=0.1), "server left running"


def test_a_bad_spec_read_while_the_server_boots_gives_one_line_and_leaves_no_process(tmp_path):
    """The preflight runs while the temporary Prefect server boots: a spec it refuses still
    exits 2 with one line, before any run, and the server it started does not outlive it."""
    (tmp_path / "bad.yaml").write_text("release: x\nsource: nowhere.csv\n")
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    proc = cli("release", "bad.yaml", cwd=tmp_path, env=environment, start_new_session=True)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err[-2000:]
    assert err.strip().splitlines() == [err.strip()] and err.startswith("sdcflow: error")
    assert wait_for(lambda: not in_session(proc.pid), timeout=15, poll=0.1), "a process was left"
    assert not (tmp_path / "warehouse.duckdb").exists()


def test_a_prefect_database_upgraded_by_a_newer_prefect_is_named_with_its_fix(tmp_path):
    """The temporary API uses the Prefect home's database. One that a newer Prefect has
    migrated (another venv, an upgrade undone) stops the server at start-up; the one line
    says so and what to do, instead of uvicorn's closing "Application startup failed"."""
    home = tmp_path / "prefect-home"
    home.mkdir()
    with contextlib.closing(sqlite3.connect(home / "prefect.db")) as db, db:
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) PRIMARY KEY)")
        db.execute("INSERT INTO alembic_version VALUES ('ffffffffffff')")
    environment = {
        k: v for k, v in os.environ.items() if k != "PREFECT_API_URL" and "DATABASE" not in k
    }
    spec = _spec(tmp_path)
    proc = cli(
        "release",
        str(spec),
        cwd=tmp_path,
        env={**environment, "PREFECT_HOME": str(home)},
        start_new_session=True,
    )
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 3, err[-2000:]
    lines = [x for x in err.splitlines() if x.startswith("sdcflow:")]
    assert len(lines) == 1 and "Traceback" not in err, err[-2000:]
    assert "newer Prefect" in lines[0] and f"PREFECT_HOME={home}" in lines[0]
    assert wait_for(lambda: not in_session(proc.pid), timeout=15, poll=0.1), "a process was left"
    assert not (tmp_path / "published").exists()


@contextlib.contextmanager
def _full_disk(folder: Path) -> Iterator[Path]:
    """A small real filesystem at ``folder``, filled up: the next write there fails with
    ENOSPC."""
    with small_disk(folder, "16k") as disk:
        fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:  # the disk is full
            pass
        finally:
            os.close(fd)
        yield disk


def _to_a_full_disk(
    tmp: Path, environment: dict[str, str], *args: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run the command line in ``tmp`` with its stdout on a file of a full disk: the finished
    process and what reached the file."""
    with _full_disk(tmp / "out") as disk, (disk / "out.txt").open("w") as out:
        done = subprocess.run(
            [sys.executable, "-m", "sdcflow.cli", *args],
            cwd=tmp,
            env=environment,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=600,
        )
        return done, (disk / "out.txt").read_text()


def test_the_process_ends_after_the_exit_handlers_and_the_flush_or_waits_for_its_threads(
    tmp_path,
):
    """``cli._end_process``: the exit handlers run, buffered output reaches the pipe and the
    code is the command's; a thread that is not a daemon keeps the normal exit (it finishes)."""
    handler, thread = tmp_path / "handler.txt", tmp_path / "thread.txt"
    proc = spawn(
        """
        import atexit, sys, threading, time
        from pathlib import Path
        from sdcflow.cli import main as cli

        atexit.register(lambda: Path(sys.argv[1]).write_text("ran"))
        sys.stdout.write("buffered, not flushed")
        cli._end_process(5)
        """,
        handler,
    )
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, out, handler.read_text()) == (5, "buffered, not flushed", "ran"), err
    proc = spawn(
        """
        import sys, threading, time
        from pathlib import Path
        from sdcflow.cli import main as cli

        def late():
            time.sleep(0.5)
            Path(sys.argv[1]).write_text("finished")

        threading.Thread(target=late).start()
        cli._end_process(4)
        print("normal exit")
        """,
        thread,
    )
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, out.strip(), thread.read_text()) == (0, "normal exit", "finished"), err


@pytest.mark.parametrize("closed", [1, 2])
def test_a_closed_stdout_or_stderr_keeps_the_exit_code(tmp_path, closed):
    """Started with its stdout or stderr closed (``>&-``, ``2>&-``: cron, daemons), Python
    sets ``sys.stdout``/``sys.stderr`` to None; the end of the process must not fail on it
    (it did: an ``AttributeError`` traceback and exit 1, "refused", for a bad spec's 2)."""
    (tmp_path / "bad.yaml").write_text("release: x\nsource: nowhere.csv\n")
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    proc = cli(
        "release",
        "bad.yaml",
        cwd=tmp_path,
        env=environment,
        start_new_session=True,
        preexec_fn=lambda: os.close(closed),
    )
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, (out + err)[-2000:]
    assert "Traceback" not in out + err and "sdcflow: error" in out + err
    assert wait_for(lambda: not in_session(proc.pid), timeout=15, poll=0.1), "a process was left"


def test_output_lost_on_a_full_disk_at_the_end_of_the_process_is_said(tmp_path):
    """stdout redirected to a file on a full disk: the buffered output is written when the
    process ends, and that write fails. The fast end of the process swallowed the error (exit
    0, an empty file, not a word); it must say on stderr that the output was lost."""
    environment = {
        k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PYTHONUNBUFFERED")
    }
    # A spec before its first run: prune says there is nothing to prune and exits 0 (a
    # ``--warehouse`` path that does not exist is a typo, exit 2, since b60cbca).
    spec = _spec(tmp_path)
    done, written = _to_a_full_disk(tmp_path, environment, "prune", spec.name)
    assert written == ""
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines() == [
        "sdcflow: the output could not be written to stdout (No space left on device); "
        "exit code 0 stands"
    ]


def test_a_published_release_whose_lines_cannot_be_written_still_exits_0(tmp_path):
    """stdout unbuffered on a full disk: every line of the outcome fails as it is printed,
    after the release was published. The exit code must still say published (it was 1,
    "refused", with a traceback: the recovery printed to the same failing stdout), and
    stderr says once that the output was lost; ``runs`` with stdout closed exits 0 too."""
    spec = _spec(tmp_path)
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    environment["PYTHONUNBUFFERED"] = "1"
    done, _ = _to_a_full_disk(tmp_path, environment, "release", spec.name)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lost = [line for line in done.stderr.splitlines() if "could not be written" in line]
    assert lost == [
        "sdcflow: the output could not be written to stdout (No space left on device); "
        "the exit code stands"
    ]
    assert [s for s, _ in _audit(tmp_path).values()] == ["published"]
    runs = cli("runs", spec.name, cwd=tmp_path, preexec_fn=lambda: os.close(1))
    _, err = runs.communicate(timeout=300)
    assert runs.returncode == 0, err[-2000:]


def test_the_loss_of_stdout_is_said_once_when_a_line_and_the_final_flush_both_fail():
    """A line that fails during the run and the final flush that fails again: one stderr
    line, the command's code kept."""
    proc = spawn(
        """
        import errno, io, sys
        from sdcflow.cli import main as cli
        from sdcflow.cli.output import say

        class Full(io.TextIOBase):
            def write(self, text):
                raise OSError(errno.ENOSPC, "No space left on device")

            def flush(self):
                raise OSError(errno.ENOSPC, "No space left on device")

        sys.stdout = Full()
        say("published somewhere")
        say("report somewhere")
        cli._end_process(0)
        """
    )
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert err.strip().splitlines() == [
        "sdcflow: the output could not be written to stdout (No space left on device); "
        "the exit code stands"
    ]


def test_a_compaction_killed_midway_leaves_no_copy_of_the_warehouse_behind(tmp_path):
    """``prune --yes --compact`` killed (SIGKILL) while it copies the warehouse left its
    private folder, a partial copy of the confidential warehouse, beside it for ever; the
    next ``prune --yes`` (or release) removes it, and nothing that only looks like one."""
    from sdcflow.warehouse.warehouse import Warehouse

    path = tmp_path / "warehouse.duckdb"
    Warehouse(path).initialize()  # audit.runs: prune acts on it
    with duckdb.connect(str(path)) as con:  # enough rows for the copy to take a while
        con.execute("CREATE TABLE main.mine AS SELECT range AS x, md5(range::VARCHAR) AS s "
                    "FROM range(3000000)")  # fmt: skip
    mine = [
        tmp_path / ".warehouse.duckdb.compact-mine",
        tmp_path / ".warehouse.duckdb.compact-abcd1234",
    ]
    mine[0].mkdir(mode=0o700)
    mine[1].mkdir(mode=0o700)
    (mine[1] / "notes.txt").write_text("mine")  # named like one, but holds a file of mine

    def leftovers() -> list[Path]:
        return [p for p in tmp_path.glob(".warehouse.duckdb.compact-*") if p not in mine]

    proc = cli("prune", "--warehouse", str(path), "--yes", "--compact", cwd=tmp_path)
    try:
        assert wait_for(lambda: bool(leftovers()) or proc.poll() is not None, timeout=120)
        proc.kill()
    finally:
        proc.communicate(timeout=60)
    left = leftovers()
    if not left:
        pytest.skip("the compaction ended before it could be killed")
    assert list(left[0].iterdir()) in ([], [left[0] / "warehouse.duckdb"])

    done = cli("prune", "--warehouse", str(path), "--yes", cwd=tmp_path)
    _, err = done.communicate(timeout=240)
    assert done.returncode == 0, err[-2000:]
    assert leftovers() == []  # the killed compaction's copy is gone
    assert all(p.is_dir() for p in mine) and (mine[1] / "notes.txt").read_text() == "mine"
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM main.mine").fetchone()[0] == 3_000_000


def test_a_signal_during_compaction_is_an_interruption_and_leaves_the_file_whole(tmp_path):
    """SIGTERM while ``prune --compact`` copies the warehouse: DuckDB turned it into
    'Query interrupted', which exited 3 as an unexpected error; it is an interruption."""
    from sdcflow.warehouse.warehouse import Warehouse

    path = tmp_path / "warehouse.duckdb"
    Warehouse(path).initialize()
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE main.mine AS SELECT range AS x, md5(range::VARCHAR) AS s "
                    "FROM range(3000000)")  # fmt: skip
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    proc = cli("prune", "--warehouse", str(path), "--yes", "--compact", cwd=tmp_path)
    copying = lambda: any(tmp_path.glob(".warehouse.duckdb.compact-*/*"))  # noqa: E731
    try:
        assert wait_for(lambda: copying() or proc.poll() is not None, timeout=120)
        if proc.poll() is None:
            time.sleep(0.2)
            proc.send_signal(signal.SIGTERM)
    finally:
        _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the compaction ended before the signal")
    assert proc.returncode == 130, err[-2000:]
    assert err.strip().splitlines() == [
        "sdcflow: interrupted; `sdcflow runs` shows which runs' copies were dropped"
    ]
    assert not list(tmp_path.glob(".warehouse.duckdb.compact-*"))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # not replaced


def test_a_read_only_home_without_prefect_home_names_the_prefect_home(tmp_path):
    """Without PREFECT_HOME the temporary API keeps its database in ~/.prefect; a read-only
    HOME stopped it with sqlite's "unable to open database file" and no word of where."""
    from adversarial import read_only_disk

    spec = _spec(tmp_path)
    with read_only_disk(tmp_path / "home") as home:
        environment = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PREFECT_API_URL", "PREFECT_HOME") and "DATABASE" not in k
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "sdcflow.cli", "check", str(spec)],
            cwd=tmp_path,
            env={**environment, "HOME": str(home), "MPLCONFIGDIR": str(tmp_path / "mpl")},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 3, err[-2000:]
    lines = [x for x in err.splitlines() if x.startswith("sdcflow:")]
    assert len(lines) == 1 and f"Prefect home {home}/.prefect" in lines[0], err[-2000:]
    assert "PREFECT_HOME=" in lines[0]
    assert not (tmp_path / "warehouse.duckdb").exists()
