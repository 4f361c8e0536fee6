"""sdcflow never removes or renames what it did not create, and what it reports about a
publication is true of the disk, under real signals (issue #11, defects 1, 2, 8, 9)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import uuid
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from adversarial import read_only_disk, spawn, tree, wait_for
from errorline import cli_error
from survey import write_release

from sdcflow.cli.main import main
from sdcflow.errors import InputError, Reason
from sdcflow.warehouse import publish as publish_mod
from sdcflow.warehouse.ownership import IncompleteFolder, hold, sweep_incomplete
from sdcflow.warehouse.warehouse import Warehouse

DEAD = 2**22 + 12345  # above the default pid_max: no such process


def _spec(tmp: Path, **overrides) -> Path:
    return write_release(tmp, rows=60, seed=3, **overrides)


def _refused(capsys, code: Reason) -> str:
    err = capsys.readouterr().err
    assert cli_error(err)[0] is code and err.count("\n") == 1 and "Traceback" not in err
    return err


# -- what may be replaced -------------------------------------------------------------------------


def test_a_folder_named_like_the_release_is_refused_before_the_run(tmp_path, capsys):
    # output: ., release: rawdata, source: rawdata/data.csv and a notes file beside it
    raw = tmp_path / "rawdata"
    raw.mkdir()
    spec = write_release(raw, rows=60, spec_name="../release.yaml")
    body = spec.read_text().replace("source: data.csv", "source: rawdata/data.csv")
    spec.write_text(body.replace("release: survey", "release: rawdata") + "output: .\n")
    (raw / "notes.txt").write_text("keep me")
    before = tree(raw)
    assert main(["release", str(spec)]) == 2
    _refused(capsys, Reason.OUTPUT)
    assert tree(raw) == before  # nothing renamed, nothing removed
    assert not (tmp_path / "warehouse.duckdb").exists()  # refused before anything was written
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(
    "overrides",
    [
        {"release": "data.csv", "output": "."},  # the source
        {"release": "warehouse.duckdb", "output": "."},  # the warehouse
        # its write-ahead log and its writer lock (a release named like the WAL would leave
        # DuckDB unable to open the warehouse, and every later command would exit 2)
        {"release": "warehouse.duckdb.wal", "output": "."},
        {"release": "warehouse.duckdb.lock", "output": "."},
        {"release": "warehouse.duckdb.tmp", "output": "."},  # DuckDB's spill folder
        {"release": "w", "output": ".", "warehouse": "w/warehouse.duckdb"},  # inside it
        {"reports": "published"},  # the run reports inside the release
        {"release": "x", "output": "..", "source": "../x/data.csv"},  # the spec's folder
    ],
    ids=[
        "source",
        "warehouse",
        "wal",
        "lock",
        "spill",
        "warehouse-inside",
        "reports-equal-output",
        "spec-folder",
    ],
)
def test_the_source_warehouse_reports_and_spec_can_never_be_a_release_target(
    tmp_path, capsys, overrides
):
    base = tmp_path / "x" if overrides.get("release") == "x" else tmp_path
    base.mkdir(exist_ok=True)
    spec = _spec(base, **overrides)
    if "warehouse" in overrides:
        (base / "w").mkdir()
    Warehouse(base / "warehouse.duckdb").initialize()  # an existing warehouse file
    before = tree(tmp_path)
    assert main(["release", str(spec)]) == 2
    _refused(capsys, Reason.OUTPUT)
    assert tree(tmp_path) == before


@pytest.mark.parametrize("suffix", [".wal", ".lock"])
def test_the_log_and_lock_beside_a_linked_warehouse_file_are_no_release_target(
    tmp_path, capsys, suffix
):
    # With `warehouse:` a link to real/w.duckdb, a release named w.duckdb.wal in real/
    # would take the name of the log DuckDB writes beside the real file, and the warehouse
    # could no longer be opened. Both places are protected.
    spec = _spec(tmp_path, release=f"w.duckdb{suffix}", output="real", warehouse="wl.duckdb")
    (tmp_path / "real").mkdir()
    Warehouse(tmp_path / "real" / "w.duckdb").initialize()
    (tmp_path / "wl.duckdb").symlink_to(tmp_path / "real" / "w.duckdb")
    before = tree(tmp_path)
    assert main(["release", str(spec)]) == 2
    _refused(capsys, Reason.OUTPUT)
    assert tree(tmp_path) == before


@pytest.mark.parametrize(
    ("field", "place", "release"),
    [
        ("reports", "../out/survey", "other"),
        ("warehouse", "../out/survey/w.duckdb", "other"),
        ("output", "../out/survey/inner", "other"),
        # `reports:` A's *output* folder and A's release name: B's run reports
        # (<reports>/<release>/<run id>) would go into A's live release
        ("reports", "../out", "survey"),
    ],
    ids=["reports", "warehouse", "output", "reports-of-the-same-release"],
)
def test_another_spec_never_writes_into_a_live_release(
    tmp_path, prefect_api, capsys, field, place, release
):
    # Spec B's `reports:` names spec A's published release: `sdcflow check` would write its
    # report and Data Docs into it, and A's next release would be refused ("it holds files
    # sdcflow did not write"). B is refused before it writes anything; A is untouched.
    a = _spec(tmp_path, output="out", checks={"max_information_loss": 60})
    assert main(["release", str(a)]) == 0
    live = tmp_path / "out" / "survey"
    before = tree(live)
    other = tmp_path / "b"
    other.mkdir()
    b = _spec(other, release=release, **{field: place})
    capsys.readouterr()
    for command in ("check", "release"):
        assert main([command, str(b)]) == 2
        err = _refused(capsys, Reason.OUTPUT)
        assert f"`{field}:`" in err and "inside the published release" in err
    assert tree(live) == before and not (other / "warehouse.duckdb").exists()
    assert main(["release", str(a), "--force"]) == 0  # A publishes again as before


@pytest.mark.parametrize("field", ["output", "reports"])
def test_the_root_of_the_file_system_is_no_output_folder(tmp_path, capsys, field):
    # `output: /` is refused: the release would be published as /<release>.
    spec = _spec(tmp_path, **{field: "/"})
    before = sorted(p.name for p in Path("/").iterdir())
    for command in ("check", "release"):
        assert main([command, str(spec)]) == 2
        assert "root of the file system" in _refused(capsys, Reason.OUTPUT)
    assert sorted(p.name for p in Path("/").iterdir()) == before
    assert not (tmp_path / "warehouse.duckdb").exists()


def test_output_that_is_a_file_fails_at_preflight(tmp_path, capsys):
    spec = _spec(tmp_path, output="published")
    (tmp_path / "published").write_text("not a folder")
    assert main(["release", str(spec)]) == 2
    _refused(capsys, Reason.OUTPUT)
    assert not (tmp_path / "warehouse.duckdb").exists()


def test_output_on_a_read_only_filesystem_fails_at_preflight(tmp_path, capsys):
    with read_only_disk(tmp_path / "ro"):
        spec = _spec(tmp_path, output="ro/published")
        assert main(["release", str(spec)]) == 2
        _refused(capsys, Reason.OUTPUT)
    assert not (tmp_path / "warehouse.duckdb").exists()


@pytest.mark.parametrize("command", ["release", "check"])
def test_reports_on_a_read_only_filesystem_fail_at_preflight(tmp_path, capsys, command):
    # refused before the run, exit 2, rather than mask the file and then fail writing its
    # report (exit 3, "run failed: OSError", a failed run in the warehouse)
    with read_only_disk(tmp_path / "ro"):
        spec = _spec(tmp_path, reports="ro/reports")
        assert main([command, str(spec)]) == 2
        err = _refused(capsys, Reason.OUTPUT)
    assert "`reports:`" in err and "Traceback" not in err
    assert not (tmp_path / "warehouse.duckdb").exists()


@pytest.mark.parametrize(
    ("field", "folder", "code"),
    [
        ("reports", "/proc/sdcflow-reports", Reason.OUTPUT),
        ("output", "/sys/sdcflow-published", Reason.OUTPUT),
        ("warehouse", "/proc/sdcflow/warehouse.duckdb", Reason.WAREHOUSE),
    ],
)
def test_a_folder_access_calls_writable_that_takes_no_file_fails_at_preflight(
    tmp_path, capsys, field, folder, code
):
    # For root, access(2) calls /proc and /sys writable, yet no file can be made there: the
    # preflight makes a file to know, so the run is refused before it masks anything, exit
    # 2, in one line, nothing left behind
    top = Path("/", Path(folder).parts[1])
    if not top.is_dir():
        pytest.skip(f"no {top} on this system")
    spec = _spec(tmp_path, **{field: folder})
    assert main(["release", str(spec)]) == 2
    err = _refused(capsys, code)
    assert f"`{field}:`" in err and "cannot write into /" in err
    assert not (tmp_path / "warehouse.duckdb").exists()
    assert not list(tmp_path.rglob(".sdcflow-probe-*"))


def test_the_write_probe_leaves_nothing_and_names_the_refusal(tmp_path):
    from sdcflow.warehouse.writable import cannot_create_in

    before = sorted(tmp_path.iterdir())
    assert cannot_create_in(tmp_path) is None
    assert sorted(tmp_path.iterdir()) == before  # its probe made and removed
    if Path("/proc/self").is_dir():
        assert cannot_create_in(Path("/proc")) in {"No such file or directory", "Permission denied"}


def test_reports_under_a_file_are_refused_saying_it_is_no_folder(tmp_path, capsys):
    spec = _spec(tmp_path, reports="data.csv/reports")
    assert main(["check", str(spec)]) == 2
    err = _refused(capsys, Reason.OUTPUT)
    assert "data.csv is not a folder" in err and "make it writable" not in err
    assert not (tmp_path / "warehouse.duckdb").exists()


@pytest.mark.parametrize("kind", ["csv", "folder", "empty"])
def test_a_warehouse_that_is_not_duckdb_fails_at_preflight(tmp_path, capsys, kind):
    if kind == "csv":
        spec = _spec(tmp_path, warehouse="data.csv")
    elif kind == "folder":
        spec = _spec(tmp_path, warehouse="wh")
        (tmp_path / "wh").mkdir()
    else:
        spec = _spec(tmp_path, warehouse="empty.duckdb")
        (tmp_path / "empty.duckdb").write_bytes(b"")
    before = tree(tmp_path)
    assert main(["release", str(spec)]) == 2
    if kind == "empty":  # a warehouse cut to nothing reads as no DuckDB file: say both
        err = capsys.readouterr().err
        assert "restore it from a backup" in err and "not a DuckDB database" in err
    else:
        _refused(capsys, Reason.WAREHOUSE)
    assert tree(tmp_path) == before


def _previous(out: Path, run: str = "a" * 32) -> Path:
    return publish_mod.write_release(out, "r", pd.DataFrame({"x": [1.0, 2.0]}), {"run_id": run})


def test_only_an_untouched_sdcflow_release_counts_as_previous(tmp_path):
    out = tmp_path / "out"
    target = _previous(out)
    assert publish_mod.previous_release_problem(target, "r") is None
    assert publish_mod.published_run(target, "r") == "a" * 32
    assert publish_mod.previous_release_problem(target, "other") is not None  # another name
    (target / "notes.txt").write_text("added by hand")
    assert "notes.txt" in publish_mod.previous_release_problem(target, "r")
    (target / "notes.txt").unlink()
    manifest = json.loads((target / "manifest.json").read_text())
    (target / "manifest.json").write_text(json.dumps({**manifest, "rows": 7}))  # tampered
    assert publish_mod.previous_release_problem(target, "r") is not None
    link = out / "link"
    link.symlink_to(target)
    assert publish_mod.previous_release_problem(link, "link") is not None
    plain = out / "plain"
    plain.mkdir()
    assert publish_mod.previous_release_problem(plain, "plain") is not None
    assert publish_mod.previous_release_problem(out / "absent", "absent") is None


@pytest.mark.parametrize("edit", ["appended", "same-size", "removed", "linked", "report"])
def test_a_release_whose_files_were_edited_is_refused_unless_forced(tmp_path, capsys, edit):
    # Issue 41, item 6: a line appended to the live data.csv was republished over (exit 0).
    # Any listed file whose bytes are not the published ones makes the folder the user's.
    spec = _spec(tmp_path, output="out")
    out = tmp_path / "out"
    frame = pd.DataFrame({"x": [1.0, 2.0]})
    live = publish_mod.write_release(
        out, "survey", frame, {"run_id": "a" * 32}, extra_files={"report.html": b"<p>r</p>"}
    )
    name = "report.html" if edit == "report" else "data.csv"
    path = live / name
    if edit in ("appended", "report"):
        with path.open("ab") as fh:
            fh.write(b"1\n")
    elif edit == "same-size":
        body = path.read_bytes()
        path.write_bytes(body[:-2] + (b"9" if body[-2:-1] != b"9" else b"8") + body[-1:])
    elif edit == "removed":
        path.unlink()
    else:  # the same bytes, but through a link to a file elsewhere
        (tmp_path / "elsewhere.csv").write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(tmp_path / "elsewhere.csv")
    before = tree(out)
    assert main(["release", str(spec)]) == 2
    err = _refused(capsys, Reason.OUTPUT)
    assert f"its {name} is not the file sdcflow published" in err and "--force" in err
    assert tree(out) == before and not (tmp_path / "warehouse.duckdb").exists()
    assert publish_mod.published_run(live, "survey") == "a" * 32  # still that run's
    assert not publish_mod.files_intact(live)
    with pytest.raises(InputError) as e:  # and again just before the swap
        publish_mod.write_release(out, "survey", frame, {"run_id": "b" * 32})
    assert e.value.code == Reason.OUTPUT and tree(out) == before
    publish_mod.write_release(out, "survey", frame, {"run_id": "b" * 32}, force=True)
    assert publish_mod.published_run(live, "survey") == "b" * 32
    assert publish_mod.files_intact(live) and sorted(p.name for p in out.iterdir()) == ["survey"]


def test_a_release_turned_foreign_just_before_the_swap_is_left_alone(tmp_path):
    out = tmp_path / "out"
    target = _previous(out)

    def meddle(tmp: Path) -> None:
        (target / "notes.txt").write_text("written meanwhile")

    before = tree(target)
    with pytest.raises(InputError) as e:
        publish_mod.write_release(
            out, "r", pd.DataFrame({"x": [9.0]}), {"run_id": "b" * 32}, before_swap=meddle
        )
    assert e.value.code == Reason.OUTPUT
    assert tree(target) == {**before, "notes.txt": b"written meanwhile"}
    assert sorted(p.name for p in out.iterdir()) == ["r"]  # its temporary folder is gone


def test_recovery_removes_only_its_own_leftovers(tmp_path):
    out = tmp_path / "out"
    _previous(out)
    key = uuid.uuid4().hex
    ours = out / f".r.tmp-{DEAD}-{key}"
    ours.mkdir()
    (ours / publish_mod.MARKER).write_text(json.dumps({"sdcflow": 1, "state": "building"}))
    (ours / "data.csv").write_text("half written")
    other_release = out / f".q.tmp-{DEAD}-{uuid.uuid4().hex}"  # another release in the folder
    other_release.mkdir()
    foreign = out / f".r.tmp-{DEAD}-{uuid.uuid4().hex}"  # the pattern, but not sdcflow's
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("mine")
    odd = out / f".r.tmp-{DEAD}-not-hex"
    odd.mkdir()
    in_use = out / f".r.tmp-{DEAD}-{uuid.uuid4().hex}"  # its run is alive and holds it
    in_use.mkdir()
    with hold(in_use):
        removed = publish_mod.recover(out)
    assert sorted(removed) == sorted([ours, other_release])
    assert foreign.exists() and (foreign / "thesis.tex").read_text() == "mine"
    assert odd.exists() and in_use.exists()


def test_a_run_killed_while_writing_its_first_marker_leaves_nothing_behind(tmp_path):
    """SIGKILL between the first marker's write and its rename leaves a temporary folder
    holding only `.sdcflow-release.part`: recovery recognises it as sdcflow's and removes
    it (otherwise a `.r.tmp-*` would stay, also failing the SIGKILL test below under
    load)."""
    out = tmp_path / "out"
    _previous(out)
    killed = out / f".r.tmp-{DEAD}-{uuid.uuid4().hex}"
    killed.mkdir()
    (killed / f"{publish_mod.MARKER}.part").write_text('{"sdcflow": 1, "sta')
    foreign = out / f".r.tmp-{DEAD}-{uuid.uuid4().hex}"
    foreign.mkdir()
    (foreign / f"{publish_mod.MARKER}.part").write_text("x")
    (foreign / "notes.txt").write_text("mine")
    assert publish_mod.recover(out) == [killed]
    assert not killed.exists() and (foreign / "notes.txt").read_text() == "mine"


def test_partial_report_folders_of_ended_runs_are_swept(tmp_path):
    child = spawn(
        """
        import sys, time
        from pathlib import Path
        from sdcflow.warehouse.ownership import IncompleteFolder
        folder = IncompleteFolder(Path(sys.argv[1])).create()
        (folder.path / "data-docs.html").write_text("half")
        print("ready", flush=True)
        time.sleep(60)
        """,
        tmp_path / "reports" / "r" / "run1",
    )
    assert child.stdout.readline().strip() == "ready"
    mine = IncompleteFolder(tmp_path / "reports" / "r" / "run2").create()  # this process: live
    done = tmp_path / "reports" / "r" / "run0"
    done.mkdir()
    (done / "report.html").write_text("complete")
    assert sweep_incomplete(tmp_path / "reports") == []  # the child still runs
    child.kill()  # SIGKILL: no chance to clean up
    child.wait()
    assert sweep_incomplete(tmp_path / "reports") == [tmp_path / "reports" / "r" / "run1"]
    assert mine.path.exists() and done.exists()
    mine.complete()
    assert not (mine.path / ".sdcflow-incomplete").exists()


def test_a_discard_stopped_halfway_leaves_a_folder_the_sweep_still_removes(tmp_path, monkeypatch):
    """A burst of SIGTERMs can stop a run's removal of its partial report folder halfway
    (``rmtree`` takes entries in directory order). The marker goes last, so what a stopped
    removal leaves is still marked and swept."""
    import sdcflow.warehouse.ownership as ownership

    folder = IncompleteFolder(tmp_path / "reports" / "r" / "run1").create()
    for name in ("a.html", "b.html", "c.html"):
        (folder.path / name).write_text("half")
    (folder.path / "data-docs").mkdir()
    (folder.path / "data-docs" / "index.html").write_text("half")
    real_unlink, real_scandir, calls = os.unlink, os.scandir, []

    class MarkerFirst:  # a directory order that lists the marker first, as some do
        def __init__(self, *args, **kwargs):
            with real_scandir(*args, **kwargs) as it:
                self.entries = sorted(it, key=lambda e: e.name != ".sdcflow-incomplete")

        def __iter__(self):
            return iter(self.entries)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def close(self):
            pass

    def stopped(path, *args, **kwargs):  # the second signal lands in the second removal
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(ownership.os, "scandir", MarkerFirst)
    monkeypatch.setattr(ownership.os, "unlink", stopped)
    with pytest.raises(KeyboardInterrupt):
        folder.discard()
    monkeypatch.setattr(ownership.os, "unlink", real_unlink)
    monkeypatch.setattr(ownership.os, "scandir", real_scandir)
    assert (folder.path / ".sdcflow-incomplete").exists()  # still marked
    folder._close()  # the process that held it has ended
    assert sweep_incomplete(tmp_path / "reports") == [folder.path]
    assert not folder.path.exists()
    # and a whole discard leaves nothing
    other = IncompleteFolder(tmp_path / "reports" / "r" / "run2").create()
    (other.path / "x.html").write_text("half")
    other.discard()
    assert not other.path.exists()
    # an entry that cannot go (busy, a file of NFS's) keeps the marker
    held = IncompleteFolder(tmp_path / "reports" / "r" / "run3").create()
    (held.path / "busy.html").write_text("half")

    def busy(path, *args, **kwargs):
        raise OSError(16, "Device or resource busy")

    monkeypatch.setattr(ownership.os, "unlink", busy)
    held.discard()
    monkeypatch.setattr(ownership.os, "unlink", real_unlink)
    assert (held.path / ".sdcflow-incomplete").exists()
    assert sweep_incomplete(tmp_path / "reports") == [held.path]


# -- what audit.runs says -------------------------------------------------------------------------


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_run_killed_after_the_swap_is_recorded_as_published(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    out = tmp_path / "out"
    run_after, run_before = "c" * 32, "d" * 32
    for run_id in (run_before, run_after):
        wh.start_run(run_id, "r", "0" * 64, "mdav", target=out / "r")
        with wh.connect() as con:  # as if its process had been killed
            con.execute("UPDATE audit.runs SET pid = ? WHERE run_id = ?", [DEAD, run_id])
        if run_id == run_after:
            _previous(out, run_after)  # its swap happened, then SIGKILL before its record
    stored = _sha(wh.path)
    shown = wh.runs().set_index("run_id")
    assert _sha(wh.path) == stored  # `runs` wrote nothing
    assert shown.loc[run_after, "status"] == "published"
    assert "not yet recorded" in shown.loc[run_after, "message"]
    # the earlier run was settled when the later one started: its release never appeared
    assert shown.loc[run_before, "status"] == "interrupted"
    assert dict(wh.resolve_ended_runs()) == {run_after: "published"}
    with duckdb.connect(str(wh.path), read_only=True) as con:
        rows = dict(
            con.execute(
                "SELECT run_id, published_to FROM audit.runs WHERE ended_at IS NOT NULL"
            ).fetchall()
        )
    assert rows == {run_after: str(out / "r"), run_before: None}


SIGNAL_SCRIPT = """
import signal, sys, time
from pathlib import Path
import pandas as pd
from sdcflow.warehouse.ownership import deferred_signals, pending_signals
from sdcflow.warehouse.publish import write_release
from sdcflow.warehouse.warehouse import Warehouse

root, run_id, window, hold_back = Path(sys.argv[1]), sys.argv[2], *map(float, sys.argv[3:5])

def interrupt(signum, frame):  # as the command line does
    raise KeyboardInterrupt

signal.signal(signal.SIGTERM, interrupt)
wh = Warehouse(root / "w.duckdb")

def pause(tmp):
    (root / "swapping").touch()
    time.sleep(hold_back)

with wh.lock(0):
    wh.start_run(run_id, "r", "0" * 64, "mdav", target=root / "out" / "r")
    status = "interrupted"
    try:
        (root / "started").touch()
        time.sleep(window)
        with deferred_signals():  # as the flow does around publication and its record
            path = write_release(
                root / "out", "r", pd.DataFrame({"x": [1.0, 2.0]}), {"run_id": run_id},
                before_swap=pause,
            )
            wh.finish_run(run_id, "published", published_to=str(path))
            status = "published"
        print("published", pending_signals(), flush=True)
    finally:
        if status != "published":
            with deferred_signals():
                wh.finish_run(run_id, status)
"""


def _status(root: Path, run_id: str) -> str:
    with duckdb.connect(str(root / "w.duckdb"), read_only=True) as con:
        return con.execute("SELECT status FROM audit.runs WHERE run_id = ?", [run_id]).fetchone()[0]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_publication_waits_for_the_swap_and_its_record(tmp_path, sig):
    run_id = uuid.uuid4().hex
    child = spawn(SIGNAL_SCRIPT, tmp_path, run_id, 0, 0.8)
    assert wait_for(lambda: (tmp_path / "swapping").exists(), timeout=60)
    child.send_signal(sig)  # a real signal, while the release is being built
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert out.split()[0] == "published" and str(int(sig)) in out  # held back, then reported
    assert _status(tmp_path, run_id) == "published"
    assert publish_mod.published_run(tmp_path / "out" / "r", "r") == run_id


def test_a_signal_before_publication_publishes_nothing(tmp_path):
    run_id = uuid.uuid4().hex
    child = spawn(SIGNAL_SCRIPT, tmp_path, run_id, 30, 0)
    assert wait_for(lambda: (tmp_path / "started").exists(), timeout=60)
    child.send_signal(signal.SIGTERM)
    child.communicate(timeout=60)
    assert child.returncode != 0
    assert _status(tmp_path, run_id) == "interrupted"
    assert not (tmp_path / "out" / "r").exists()


def test_sigkill_at_any_moment_of_publication_leaves_disk_and_audit_consistent(tmp_path):
    """SIGKILL a real publishing process at spread-out moments; after each, the release is
    either the previous one or the new one, whole, and audit (once settled) says which."""
    out = tmp_path / "out"
    first = uuid.uuid4().hex
    child = spawn(SIGNAL_SCRIPT, tmp_path, first, 0, 0)
    child.communicate(timeout=60)
    outcomes = {"published": 0, "interrupted": 0}
    for delay in (0.05, 0.3, 0.52, 0.7):  # the swap comes 0.5 s after "started"
        for name in ("started", "swapping"):
            (tmp_path / name).unlink(missing_ok=True)
        run_id = uuid.uuid4().hex
        child = spawn(SIGNAL_SCRIPT, tmp_path, run_id, 0, 0.5)
        assert wait_for(lambda: (tmp_path / "started").exists(), timeout=60)
        wait_for(lambda: False, timeout=delay)
        child.kill()
        child.wait()
        Warehouse(tmp_path / "w.duckdb").resolve_ended_runs()
        live = publish_mod.published_run(out / "r", "r")
        status = _status(tmp_path, run_id)
        assert (live == run_id) == (status == "published"), (delay, status)
        assert live is not None  # never an empty or partial release
        manifest = json.loads((out / "r" / "manifest.json").read_text())
        for name, entry in manifest["files"].items():
            assert _sha(out / "r" / name) == entry["sha256"]
        outcomes[status] += 1
        publish_mod.recover(out)
        assert sorted(p.name for p in out.iterdir()) == ["r"]
    assert outcomes["interrupted"] > 0


def test_runs_is_read_only_and_never_creates_what_is_missing(tmp_path, capsys):
    path = tmp_path / "w.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS a")
    stored = _sha(path)
    assert main(["runs", "--warehouse", str(path)]) == 0
    assert "no runs recorded" in capsys.readouterr().out
    assert _sha(path) == stored and not Path(str(path) + ".wal").exists()
    with duckdb.connect(str(path), read_only=True) as con:
        schemas = {r[0] for r in con.execute("SELECT schema_name FROM duckdb_schemas()").fetchall()}
    assert "audit" not in schemas
    # a mistyped --warehouse is exit 2, not "no runs recorded" with exit 0, and nothing is
    # created; a spec whose warehouse does not exist yet has no runs, exit 0
    typo = tmp_path / "w.duckbd"
    capsys.readouterr()
    assert main(["runs", "--warehouse", str(typo)]) == 2
    err = capsys.readouterr().err
    assert f"no warehouse at {typo}" in err and "[warehouse" in err and not typo.exists()
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    assert main(["runs", "--warehouse", str(tmp_path / "data.csv")]) == 2
    assert cli_error(capsys.readouterr().err)[0] is Reason.WAREHOUSE


def test_runs_into_a_pipe_keeps_each_run_on_one_line(tmp_path, capsys):
    # piped or redirected, the table is not laid out at 80 columns with folded names
    from sdcflow.warehouse.warehouse import Warehouse

    path = tmp_path / "w.duckdb"
    release = "quarterly-business-survey-public-use-file"
    Warehouse(path).start_run("a" * 32, release, "0" * 64, "mdav")
    Warehouse(path).finish_run("a" * 32, "published")
    assert main(["runs", "--warehouse", str(path)]) == 0
    row = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("a" * 8))
    assert release in row and "published" in row


def test_the_lock_file_is_the_only_thing_a_held_lock_adds(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    with wh.lock(0):
        assert wh.locked_here
        with wh.lock(0):  # re-entrant in one process
            assert wh.lock_path.read_text().strip() == str(os.getpid())
    assert not wh.locked_here
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.duckdb.lock"]


@pytest.mark.flow
def test_an_error_after_the_swap_still_reports_and_records_the_release(
    tmp_path, prefect_api, monkeypatch, capsys
):
    """Anything that fails once the new release is live (here the publish step's logger, as a
    lost API connection would) must not turn it into 'nothing was published'."""
    from sdcflow.tasks import publish as publish_step

    spec = _spec(tmp_path)

    def broken_logger():
        raise RuntimeError("the Prefect API went away")

    monkeypatch.setattr(publish_step, "get_run_logger", broken_logger)
    assert main(["release", str(spec)]) == 0
    captured = capsys.readouterr()
    (line,) = [x for x in captured.out.splitlines() if x.startswith("published")]
    run_id = line.rsplit("run ", 1)[1].rstrip(")")
    assert "after the release was published" in captured.err
    assert "nothing was published" not in captured.err
    target = tmp_path / "published" / "survey"
    assert publish_mod.published_run(target, "survey") == run_id
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        status, where = con.execute(
            "SELECT status, published_to FROM audit.runs WHERE run_id = ?", [run_id]
        ).fetchone()
    assert status == "published" and where == str(target.resolve())


def test_a_release_that_appears_at_the_swap_is_named_in_the_error(tmp_path, monkeypatch):
    """Two runs of one release on two warehouses publish to one folder at once: the one
    whose swap finds the other's release there (it appeared after the last check) fails
    with a message that says so and what to do, not the kernel's bare "File exists"."""
    out = tmp_path / "out"
    real = publish_mod._renameat2

    def other_run_first(a: Path, b: Path, flags: int) -> bool:
        if flags == publish_mod._RENAME_NOREPLACE:
            b.mkdir()
            (b / "data.csv").write_text("the other run's release")
        return real(a, b, flags)

    monkeypatch.setattr(publish_mod, "_renameat2", other_run_first)
    with pytest.raises(FileExistsError) as e:
        publish_mod.write_release(out, "r", pd.DataFrame({"x": [9.0]}), {"run_id": "b" * 32})
    assert "another run" in str(e.value) and "run again" in str(e.value)
    assert tree(out / "r") == {"data.csv": b"the other run's release"}
    assert sorted(p.name for p in out.iterdir()) == ["r"]  # its temporary folder is gone


def test_runs_limit_below_one_is_bad_input(tmp_path, capsys):
    # --limit 0 printed "no runs recorded" over a warehouse that held runs; --limit -1 was
    # DuckDB's BinderException, exit 3 "run failed ... nothing was published"
    from sdcflow.warehouse.warehouse import Warehouse

    path = tmp_path / "w.duckdb"
    Warehouse(path).start_run("a" * 32, "r", "0" * 64, "mdav")
    Warehouse(path).finish_run("a" * 32, "published")
    for limit in ("0", "-1"):
        with pytest.raises(SystemExit) as e:
            main(["runs", "--warehouse", str(path), "--limit", limit])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert "--limit" in err and "from 1 to" in err and "no runs recorded" not in err
    assert main(["runs", "--warehouse", str(path), "--limit", "1"]) == 0
    assert "a" * 8 in capsys.readouterr().out
