"""``sdcflow prune``, the retention policy on a warehouse, a warehouse of an earlier version,
and the retry policy of the I/O tasks (issue #13, items 3 and 4). No release runs here: the
runs are recorded through the warehouse's own API, their start times set by hand."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from adversarial import spawn
from errorline import cli_error
from survey import write_release

from sdcflow.cli.main import main
from sdcflow.errors import InputError, Reason, WarehouseBusy, WarehouseDamaged
from sdcflow.warehouse.retention import Policy, drop_copies, expired
from sdcflow.warehouse.transient import is_interrupted, is_transient
from sdcflow.warehouse.warehouse import Warehouse

HOLD_LOCK = """
import sys, time
from sdcflow.warehouse.warehouse import Warehouse
with Warehouse(sys.argv[1]).lock(0):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""

NOW = datetime.now(UTC)


def _run(wh: Warehouse, status: str, days_ago: float, release: str = "survey") -> str:
    """Record a finished run of ``release`` with raw and masked copies, started
    ``days_ago`` days ago."""
    run_id = uuid.uuid4().hex
    wh.start_run(run_id, release, "s" * 64, "mdav", input_sha256="i" * 64)
    wh.ingest(pa.table({"x": [1.0, 2.0]}), run_id)
    wh.write_frame("masked", run_id, pa.table({"x": [1.5, 1.5]}).to_pandas())
    wh.finish_run(run_id, status)
    with wh.connect() as con:
        con.execute(
            "UPDATE audit.runs SET started_at = ? WHERE run_id = ?",
            [NOW - timedelta(days=days_ago), run_id],
        )
    return run_id


@pytest.fixture
def warehouse(tmp_path: Path) -> tuple[Warehouse, dict[str, str]]:
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    runs = {
        "old": _run(wh, "published", 30),
        "mid": _run(wh, "checked", 10),
        "refused": _run(wh, "refused", 5),
        "new": _run(wh, "published", 1),
        "other": _run(wh, "published", 40, release="other"),
    }
    with wh.connect() as con:
        con.execute("CREATE TABLE raw.mine AS SELECT 1 AS x")
    return wh, runs


def _tables(wh: Warehouse) -> set[str]:
    with wh.connect(read_only=True) as con:
        rows = con.execute("SELECT table_schema, table_name FROM information_schema.tables")
        return {f"{s}.{t}" for s, t in rows.fetchall()}


def test_policy_expires_by_count_days_and_status(warehouse):
    wh, runs = warehouse
    ids = {v: k for k, v in runs.items()}

    def names(policy: Policy, release: str | None = "survey") -> list[str]:
        return [ids[r.run_id] for r in expired(wh, policy, release=release, now=NOW)]

    assert names(Policy()) == ["refused"]  # default: refused/failed/interrupted copies only
    assert names(Policy(keep_refused=True)) == []
    # keep_last counts published and checked-only runs separately: the checked run "mid",
    # newer than "old", never displaces a published run's copies
    assert names(Policy(keep_last=1)) == ["old", "refused"]  # last published: new; checked: mid
    assert names(Policy(keep_last=2)) == ["refused"]
    assert names(Policy(keep_days=7)) == ["old", "mid", "refused"]
    assert names(Policy(keep_last=1, keep_days=20)) == ["old", "refused"]
    assert names(Policy(keep_last=1, keep_days=7)) == ["old", "mid", "refused"]
    assert names(Policy(keep_last=1), release=None) == ["old", "refused"]  # other: last 1
    assert names(Policy(keep_last=1, keep_refused=True)) == ["old"]  # refused counted apart
    assert {r.schemas for r in expired(wh, Policy(), now=NOW)} == {("masked", "raw")}


def test_prune_lists_by_default_and_drops_only_with_yes(warehouse, capsys):
    wh, runs = warehouse
    before = _tables(wh)
    assert main(["prune", "--warehouse", str(wh.path), "--keep-last", "1"]) == 0
    out = capsys.readouterr().out
    assert "nothing dropped (dry run)" in out and runs["old"] in out and runs["refused"] in out
    assert runs["new"] not in out and runs["other"] not in out  # per release: its last run
    assert runs["mid"] not in out  # the last checked-only run, counted apart from published
    assert _tables(wh) == before
    assert main(["prune", "--warehouse", str(wh.path), "--keep-last", "1", "--yes"]) == 0
    assert "dropped 4 table(s) of 2 run(s)" in capsys.readouterr().out
    after = _tables(wh)
    for name in ("old", "refused"):
        assert f"raw.run_{runs[name]}" not in after and f"masked.run_{runs[name]}" not in after
    assert before - after == {f"{s}.run_{runs[n]}" for s in ("raw", "masked")
                              for n in ("old", "refused")}  # fmt: skip
    assert "raw.mine" in after
    with wh.connect(read_only=True) as con:
        pruned = dict(con.execute("SELECT run_id, copies_pruned_at FROM audit.runs").fetchall())
    assert {k for k, v in runs.items() if pruned[v] is not None} == {"old", "refused"}
    with pytest.raises(InputError) as e:
        wh.read_frame("raw", runs["old"])
    assert e.value.code == Reason.COPY_PRUNED
    assert len(wh.read_frame("raw", runs["new"])) == 2
    assert main(["prune", "--warehouse", str(wh.path), "--keep-last", "1", "--yes"]) == 0
    assert "nothing to prune" in capsys.readouterr().out


def test_prune_takes_the_spec_retention_and_release(tmp_path, capsys):
    spec = write_release(tmp_path, rows=20, retention={"keep_days": 7})
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    old, new = _run(wh, "published", 8), _run(wh, "published", 2)
    other = _run(wh, "published", 9, release="other")
    assert main(["prune", str(spec), "--yes"]) == 0
    out = capsys.readouterr().out
    assert old in out and new not in out and other not in out


def test_prune_holds_the_writer_lock(warehouse, capsys):
    wh, _ = warehouse
    holder = spawn(HOLD_LOCK, wh.path, 30)
    assert holder.stdout.readline().strip() == "held"
    try:
        code = main(["prune", "--warehouse", str(wh.path), "--yes", "--wait", "0.3"])
    finally:
        holder.kill()
        holder.wait()
    assert code == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "in use by another release" in err
    assert err.rstrip().endswith("nothing was dropped")  # a prune publishes nothing anyway


def test_prune_refuses_bad_options(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["prune", "--warehouse", str(tmp_path / "w.duckdb"), "--keep-last", "0"])
    assert e.value.code == 2
    assert main(["prune"]) == 2
    assert cli_error(capsys.readouterr().err)[0] == Reason.SPEC_MISSING


def test_a_warehouse_of_an_earlier_version_gains_the_columns_and_its_copies_are_dropped(tmp_path):
    path = tmp_path / "old.duckdb"
    run_id = uuid.uuid4().hex
    with duckdb.connect(str(path)) as con:  # the audit.runs of the first version
        con.execute("CREATE SCHEMA audit; CREATE SCHEMA raw")
        con.execute(
            "CREATE TABLE audit.runs (run_id VARCHAR PRIMARY KEY, release VARCHAR NOT NULL, "
            "spec_sha256 VARCHAR NOT NULL, method VARCHAR, started_at TIMESTAMPTZ NOT NULL, "
            "ended_at TIMESTAMPTZ, status VARCHAR NOT NULL, message VARCHAR, n_rows BIGINT, "
            "published_to VARCHAR)"
        )
        con.execute(
            "INSERT INTO audit.runs VALUES (?, 'survey', 'x', 'mdav', ?, ?, 'refused', "
            "NULL, 2, NULL)",
            [run_id, NOW - timedelta(days=90), NOW - timedelta(days=90)],
        )
        con.execute(f'CREATE TABLE raw."run_{run_id}" AS SELECT 1 AS x')
        con.execute(f'CREATE TABLE raw."run_{"e" * 32}" AS SELECT 1 AS x')  # of no run
    wh = Warehouse(path)
    # the version recorded no copies, but the run's raw table is named after a run audit.runs
    # records: it is that run's copy (issue 41, item 5), listed before and after the upgrade
    listed = [(r.run_id, r.schemas) for r in expired(wh, Policy(keep_last=1), now=NOW)]
    assert listed == [(run_id, ("raw",))]
    wh.initialize()
    with wh.connect(read_only=True) as con:
        columns = {r[0] for r in con.execute("DESCRIBE audit.runs").fetchall()}
    assert {"input_sha256", "copies_pruned_at", "kind"} <= columns
    runs = expired(wh, Policy(keep_last=1), now=NOW)
    assert [(r.run_id, r.schemas) for r in runs] == listed
    assert drop_copies(wh, runs, now=NOW) == 1
    assert f"raw.run_{run_id}" not in _tables(wh)
    assert f"raw.run_{'e' * 32}" in _tables(wh)  # named like a copy, of no recorded run: kept
    with pytest.raises(InputError) as e:  # recorded as dropped, though never recorded made
        wh.read_frame("raw", run_id)
    assert e.value.code == Reason.COPY_PRUNED
    assert expired(wh, Policy(keep_last=1), now=NOW) == []
    assert wh.runs().loc[0, "status"] == "refused"


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (OSError(errno.EBUSY, "busy"), True),
        (OSError(errno.EIO, "i/o"), True),
        (OSError(errno.ENOSPC, "full"), False),
        (OSError(errno.EACCES, "denied"), False),
        (WarehouseBusy("held"), True),
        (WarehouseDamaged("truncated"), False),  # a retry reads the same damaged file
        (InputError("bad", code=Reason.SOURCE_FORMAT), False),
        (duckdb.IOException("IO Error: could not read"), True),
        (duckdb.IOException("IO Error: No space left on device"), False),
        (ValueError("x"), False),
    ],
)
def test_which_errors_count_as_transient(error, transient):
    assert is_transient(error) is transient


def test_a_signal_during_a_duckdb_query_counts_as_an_interruption():
    """DuckDB swallows the KeyboardInterrupt a signal handler raised during its query and
    raises RuntimeError('Query interrupted'): still an interruption (exit 130), not an error.
    DuckDB does not always look at the signal while its query runs (here it sometimes ran on
    for minutes): the query is bounded (about 10 s), so the handler's KeyboardInterrupt then
    comes when it ends, and either way the error counts as an interruption."""
    import signal
    import threading

    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
    try:
        with duckdb.connect() as con:
            timer.start()
            with pytest.raises(BaseException) as e:
                con.execute(
                    "SELECT count(*) FROM range(50000000) t "
                    "WHERE md5(t.range::VARCHAR) LIKE '%abcabc%'"
                ).fetchall()
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, previous)
    assert is_interrupted(e.value), repr(e.value)
    assert not is_transient(e.value)  # never retried
    assert not is_interrupted(RuntimeError("another error")) and not is_interrupted(None)
    assert is_interrupted(RuntimeError("Query interrupted"))


def test_a_signal_while_pydantic_serializes_is_an_interruption():
    # a SIGINT or SIGTERM while Prefect serialized a model surfaced as pydantic's
    # PydanticSerializationError, without a cause: the run exited 3 ("run failed") where it
    # was interrupted (130)
    from pydantic import BaseModel, model_serializer

    class Inner(BaseModel):
        x: int = 1

        @model_serializer(mode="wrap")
        def _ser_model(self, handler):
            raise KeyboardInterrupt

    class Outer(BaseModel):
        inner: Inner

    with pytest.raises(Exception) as e:
        Outer(inner=Inner()).model_dump_json()
    assert type(e.value).__name__ == "PydanticSerializationError"
    assert is_interrupted(e.value) and not is_transient(e.value)
    assert not is_interrupted(ValueError("KeyboardInterrupt"))  # the name alone is no signal


@pytest.mark.flow
def test_ingest_retries_a_transient_error_and_never_bad_input(tmp_path, prefect_api, monkeypatch):
    from prefect import flow

    from sdcflow.preflight.plan import plan_release
    from sdcflow.spec.load import load_spec
    from sdcflow.tasks.ingest import ingest

    plan = plan_release(load_spec(write_release(tmp_path, rows=20)))
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    wh.initialize()
    calls: list[str] = []
    real = Warehouse.ingest_source

    def flaky(self, data, run_id, sha256):  # type: ignore[no-untyped-def]
        calls.append(run_id)
        if len(calls) == 1:
            raise OSError(errno.EBUSY, "device busy")
        return real(self, data, run_id, sha256)

    @flow(persist_result=False)
    def just_ingest(run_id: str):  # type: ignore[no-untyped-def]
        return ingest(plan, wh, run_id)

    monkeypatch.setattr(Warehouse, "ingest_source", flaky)
    frame = just_ingest("a" * 32)
    assert len(calls) == 2 and len(frame) == 20

    def bad(self, data, run_id, sha256):  # type: ignore[no-untyped-def]
        calls.append(run_id)
        raise InputError("reserved column", code=Reason.SOURCE_COLUMNS)

    calls.clear()
    monkeypatch.setattr(Warehouse, "ingest_source", bad)
    with pytest.raises(InputError) as e:
        just_ingest("b" * 32)
    assert e.value.code == Reason.SOURCE_COLUMNS and len(calls) == 1


def test_progress_tells_listeners_each_step_and_the_bar_stays_off_without_a_terminal(
    monkeypatch,
):
    import io

    from sdcflow.flows.progress_bar import wanted
    from sdcflow.tasks.progress import Progress, listening

    events: list[tuple[str, str, int, int]] = []
    with listening(lambda *event: events.append(event)):
        progress = Progress("survey", "release", ["ingest", "publish"])
        with progress.step("ingest"):
            pass
        progress.skip("publish")
    assert events == [
        ("release", "ingest", 0, 2), ("release", "ingest", 1, 2), ("release", "publish", 2, 2),
    ]  # fmt: skip
    assert progress.artifact is None  # outside a Prefect run: no artifact, no error
    wall, cpu = progress.seconds["ingest"]  # logged as "step ingest done in ... s CPU"
    assert wall >= 0 and cpu >= 0 and "publish" not in progress.seconds
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not wanted()  # captured or piped: never drawn
    monkeypatch.setattr("sys.stderr", type("Tty", (io.StringIO,), {"isatty": lambda s: True})())
    assert wanted()
    monkeypatch.setenv("SDCFLOW_PROGRESS", "0")
    assert not wanted()


@pytest.mark.parametrize("command", ["check", "release"])
def test_the_bar_names_the_command_that_runs(command):
    from rich.console import Console

    from sdcflow.flows.progress_bar import terminal_progress
    from sdcflow.tasks.progress import Progress

    console = Console(record=True, force_terminal=True, width=120)
    with terminal_progress(True, command=command, console=console):
        steps = Progress("survey", "release", ["ingest", "mask"])
        with steps.step("ingest"):
            pass
        phases = Progress("survey", "mask", ["partition"])
        with phases.step("partition"):
            console.print("drawn")  # the bar is transient: draw it once while it is live
    text = console.export_text()
    assert f"{command}: ingest" in text and "mask: partition" in text
    assert command == "release" or "release:" not in text  # `sdcflow check` releases nothing


def _refused_run_with_secret(wh) -> tuple[str, str]:
    """A refused run whose raw copy holds a random secret, checkpointed into the file:
    (the secret, the run id)."""
    secret = uuid.uuid4().hex
    run_id = uuid.uuid4().hex
    wh.start_run(run_id, "survey", "s" * 64, "mdav")
    wh.ingest(pa.table({"s": [f"{secret}-{i}" for i in range(2000)]}), run_id)
    wh.finish_run(run_id, "refused")
    with wh.connect() as con:
        con.execute("CHECKPOINT")
    return secret, run_id


def test_compact_removes_the_dropped_bytes_from_the_file_and_keeps_the_rest(warehouse, capsys):
    wh, runs = warehouse
    secret, run_id = _refused_run_with_secret(wh)
    assert secret.encode() in wh.path.read_bytes()
    assert main(["prune", "--warehouse", str(wh.path), "--yes"]) == 0
    assert secret.encode() in wh.path.read_bytes()  # DuckDB left the dropped blocks in place
    assert main(["prune", "--warehouse", str(wh.path), "--yes", "--compact"]) == 0
    assert "compacted" in capsys.readouterr().out
    assert secret.encode() not in wh.path.read_bytes()
    assert "raw.mine" in _tables(wh) and len(wh.read_frame("raw", runs["new"])) == 2
    assert set(wh.runs(limit=50)["run_id"]) == {*runs.values(), run_id}
    assert [p.name for p in wh.path.parent.iterdir() if "compact" in p.name] == []


def test_compact_keeps_the_files_permissions_and_a_symbolic_link(warehouse, tmp_path):
    """A warehouse its owner keeps 0600 (raw copies, the owner's secrets) stays 0600 after
    ``--compact``, and one reached through a link is compacted where the link points: the
    link stays a link and the file it names loses the dropped bytes. Before, the new file
    got the umask's 0644 and replaced the link with a file, leaving the bytes in the target."""
    wh, _ = warehouse
    secret, _ = _refused_run_with_secret(wh)
    wh.path.chmod(0o600)
    link = tmp_path / "elsewhere" / "wh.duckdb"
    link.parent.mkdir()
    link.symlink_to(wh.path)
    assert main(["prune", "--warehouse", str(link), "--yes", "--compact"]) == 0
    assert link.is_symlink() and link.resolve() == wh.path.resolve()
    assert secret.encode() not in wh.path.read_bytes()
    assert wh.path.stat().st_mode & 0o777 == 0o600
    assert "raw.mine" in _tables(wh)
    folders = (tmp_path, link.parent)
    assert [p.name for d in folders for p in d.iterdir() if "compact" in p.name] == []


def test_prune_writes_nothing_into_a_duckdb_file_that_is_not_a_warehouse(tmp_path, capsys):
    """``prune --warehouse`` pointed at a DuckDB file of the user's (no sdcflow run in it)
    leaves it as it was, also with ``--yes --compact``: before, ``--yes`` created sdcflow's
    five schemas and audit tables in it and said "nothing to prune"."""
    path = tmp_path / "mine.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS a")
    before = path.read_bytes()
    assert main(["prune", "--warehouse", str(path), "--keep-last", "1", "--yes", "--compact"]) == 0
    assert "records no sdcflow run" in capsys.readouterr().out
    assert path.read_bytes() == before
    with duckdb.connect(str(path), read_only=True) as con:
        schemas = con.execute("SELECT schema_name FROM duckdb_schemas()").fetchall()
    assert {r[0] for r in schemas} & {"audit", "raw", "edited", "masked", "published"} == set()


def test_a_table_of_the_users_named_audit_runs_is_never_altered(tmp_path, prefect_api, capsys):
    """A DuckDB file of the user's with its own ``audit.runs(id, note)``: ``prune --yes``
    adds no columns or schemas to it and ``runs`` does not crash on it; its bytes stay as
    they were, whatever is pointed at it."""
    path = tmp_path / "mine.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE SCHEMA audit")
        con.execute("CREATE TABLE audit.runs (id INTEGER, note VARCHAR)")
        con.execute("INSERT INTO audit.runs VALUES (1, 'my etl run')")
    before = path.read_bytes()
    assert main(["prune", "--warehouse", str(path), "--keep-last", "1", "--yes"]) == 0
    assert "records no sdcflow run" in capsys.readouterr().out
    assert main(["runs", "--warehouse", str(path)]) == 2
    assert cli_error(capsys.readouterr().err)[0] is Reason.WAREHOUSE
    spec = write_release(tmp_path, rows=30, warehouse="mine.duckdb")
    assert main(["release", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err)[0] is Reason.WAREHOUSE and "did not create" in err
    assert path.read_bytes() == before
    assert not (tmp_path / "published").exists()


def test_compact_refuses_a_warehouse_with_another_hard_link(warehouse, capsys):
    """``--compact`` renames a new file over the warehouse's name: a second hard link to the
    file kept the old inode with the dropped tables' bytes while the command said "dropped
    tables' bytes removed". It is refused before anything is dropped."""
    wh, _ = warehouse
    before = _tables(wh)
    other = wh.path.with_name("backup.duckdb")
    os.link(wh.path, other)
    args = ["prune", "--warehouse", str(wh.path), "--keep-last", "1", "--yes", "--compact"]
    assert main(args) == 2
    assert cli_error(capsys.readouterr().err)[0] == Reason.WAREHOUSE
    assert _tables(wh) == before  # nothing dropped
    assert os.path.samefile(wh.path, other)


def test_compact_never_opens_the_file_to_another_group(warehouse, monkeypatch):
    """A warehouse kept 0640 for its group: when the compacted file cannot be given that
    group (a group the user running prune is not in), it took the user's group with the
    group's read bit, opening the raw copies to the members of another group. The group bits
    are dropped then."""
    wh, _ = warehouse
    wh.path.chmod(0o640)
    os.chown(wh.path, os.getuid(), 54321)  # a group that is not the runner's (as root)
    if wh.path.stat().st_gid != 54321:
        pytest.skip("cannot give the file another group here")

    def refused(*args):
        raise PermissionError(errno.EPERM, "not a member of that group")

    monkeypatch.setattr(os, "fchown", refused)
    assert (
        main(["prune", "--warehouse", str(wh.path), "--keep-last", "1", "--yes", "--compact"]) == 0
    )
    info = wh.path.stat()
    assert info.st_gid == 54321 or info.st_mode & 0o070 == 0


def test_a_link_to_a_warehouse_in_a_folder_that_cannot_be_written_is_refused(
    warehouse, tmp_path, monkeypatch, capsys
):
    """The lock goes beside the file a symbolic link names (2f37a54), but the preflight only
    checked the link's folder: with the file's folder read-only, ``prune --yes`` ended with
    exit 3 and a bare PermissionError on the lock. It is refused as the file's own path is
    (reason ``warehouse``), before anything is written."""
    wh, _ = warehouse
    link = tmp_path / "elsewhere" / "wh.duckdb"
    link.parent.mkdir()
    link.symlink_to(wh.path)
    real = os.path.realpath(wh.path.parent)
    import sdcflow.warehouse.warehouse as warehouse_module

    probe = warehouse_module.cannot_create_in

    def read_only_folder(folder):  # root creates files anywhere: say what a read-only one would
        return "Permission denied" if os.path.realpath(folder) == real else probe(folder)

    monkeypatch.setattr(warehouse_module, "cannot_create_in", read_only_folder)
    before = _tables(wh)
    assert main(["prune", "--warehouse", str(link), "--keep-last", "1", "--yes"]) == 2
    assert cli_error(capsys.readouterr().err)[0] == Reason.WAREHOUSE
    assert _tables(wh) == before


def test_the_dry_run_lists_the_copies_of_a_killed_run_that_yes_drops(warehouse, capsys):
    """A run whose process was killed stays ``running`` in ``audit.runs`` until a release or
    ``prune --yes`` settles it ``interrupted`` (``sdcflow runs`` already shows it so). The dry
    run said "nothing to prune" for it, and ``--yes`` then dropped its raw copy: what is typed
    by hand must show first what ``--yes`` drops."""
    wh, _ = warehouse
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    killed = uuid.uuid4().hex
    wh.start_run(killed, "survey", "s" * 64, "mdav", input_sha256="i" * 64)
    wh.ingest(pa.table({"x": [1.0, 2.0]}), killed)
    with wh.connect() as con:  # as its process left it: running, and that process gone
        con.execute("UPDATE audit.runs SET pid = ? WHERE run_id = ?",
                    [int(dead.stdout), killed])  # fmt: skip
    assert main(["prune", "--warehouse", str(wh.path), "--keep-last", "2"]) == 0
    listed = capsys.readouterr().out
    assert f"would drop raw of run {killed} (survey, interrupted" in listed
    assert main(["prune", "--warehouse", str(wh.path), "--keep-last", "2", "--yes"]) == 0
    dropped = capsys.readouterr().out
    assert f"dropped raw of run {killed} (survey, interrupted" in dropped
    assert [line.split(" of run ")[1] for line in listed.splitlines() if " of run " in line] == [
        line.split(" of run ")[1] for line in dropped.splitlines() if " of run " in line
    ]


@pytest.mark.parametrize("days", [1e6, 1e10, float("inf")])
def test_a_keep_days_beyond_any_date_keeps_every_run_and_still_drops_refused_copies(
    warehouse, capsys, days
):
    """``retention: {keep_days: .inf}`` (or 1e10) passes the spec's validation and means
    "forever"; the cutoff date overflowed (``OverflowError``), so ``sdcflow prune`` exited 3
    and the end-of-run retention failed on every run, leaving refused runs' raw copies in
    the warehouse for good."""
    wh, runs = warehouse
    kept = expired(wh, Policy(keep_days=days), release="survey", now=NOW)
    assert [r.run_id for r in kept] == [runs["refused"]]
    # the command line takes the same days as the spec, inf too (`--keep-days inf` as the
    # spec's `.inf`)
    assert main(["prune", "--warehouse", str(wh.path), "--keep-days", f"{days:g}"]) == 0
    out = capsys.readouterr().out
    assert runs["refused"] in out and runs["old"] not in out


def test_prune_of_a_mistyped_warehouse_path_is_an_error_not_nothing_to_do(tmp_path, capsys):
    # `prune --warehouse /typo --yes` exits 2, as `runs --warehouse /typo` does, not
    # "nothing to prune" (exit 0): a path typed by hand that names nothing is a mistake
    typo = tmp_path / "wherehouse.duckdb"
    assert main(["prune", "--warehouse", str(typo), "--keep-last", "1", "--yes"]) == 2
    assert cli_error(capsys.readouterr().err) == (Reason.WAREHOUSE, "warehouse")
    assert not typo.exists()
    spec = write_release(tmp_path, rows=20)  # a spec's warehouse before its first run
    assert main(["prune", str(spec)]) == 0
    assert "nothing to prune" in capsys.readouterr().out


def test_a_warehouse_link_to_nothing_is_named_as_such(tmp_path, capsys):
    # a `warehouse:` link whose file does not exist yet is named as such, not "cannot read
    # ... fix its permissions"
    link = tmp_path / "w.duckdb"
    link.symlink_to(tmp_path / "elsewhere" / "real.duckdb")
    spec = write_release(tmp_path, rows=20, warehouse="w.duckdb")
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert cli_error(err)[0] is Reason.WAREHOUSE and "which does not exist" in err
    assert "permissions" not in err
