"""Scale-out (issue #13, items 6 and 7): the mask's spatial cells as Prefect task runs on a
Dask cluster, the same release as the local runner, the gates over the whole release."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import yaml
from survey import EXAMPLE, QIS, progress_artifacts, progress_descriptions, write_release

from sdcflow.cli.main import main
from sdcflow.core.measures.anonymity import k_anonymity
from sdcflow.core.measures.information_loss import sse_sst_loss
from sdcflow.core.microaggregation import blocked, neighbours
from sdcflow.core.microaggregation.blocked import blocked_groups, blocked_mdav
from sdcflow.core.microaggregation.mdav import mdav_groups
from sdcflow.core.microaggregation.ps import ps_groups
from sdcflow.core.microaggregation.refine import partition_sse
from sdcflow.core.parallel import part_map
from sdcflow.errors import InputError, Reason
from sdcflow.flows.runners import cluster_kwargs, with_cli_options
from sdcflow.preflight.plan import plan_release
from sdcflow.spec.load import load_spec
from sdcflow.warehouse.warehouse import ROW_ID, table_name

ROOT = Path(__file__).resolve().parents[1]


def _records(n: int = 3000, d: int = 4, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d))


@pytest.mark.parametrize("partition", [mdav_groups, ps_groups])
def test_a_part_map_sees_one_piece_at_a_time_and_changes_no_label(partition, monkeypatch):
    # 3000 records, cells <= 400, border parts of about 1000: both kinds of piece are spread
    monkeypatch.setattr(blocked, "BORDER_PART", 1000)
    Z, k, size = _records(), 5, 400
    seen: dict[str, list[int]] = {"cell": [], "border": []}

    def backwards(fn, calls, label):  # another "cluster": pieces in reverse order
        seen[label].extend(
            args[1].shape[0] if label == "cell" else args[0].shape[0] for args in calls
        )
        return [fn(*args) for args in calls[::-1]][::-1]

    serial = blocked_groups(Z, k, size, partition)
    with part_map(backwards):
        mapped = blocked_groups(Z, k, size, partition)
    np.testing.assert_array_equal(mapped, serial)
    # every cell got its own records only: at most cell_size, all of them once; every phase
    # of the border search covered every record once, in parts of whole groups
    cells, border = seen["cell"], seen["border"]
    assert max(cells) <= size and sum(cells) == Z.shape[0] and len(cells) >= Z.shape[0] // size
    assert sum(border) == blocked.BORDER_PHASES * Z.shape[0] and len(border) >= 2
    sizes = np.bincount(serial)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    # outside the block the default (serial) map is back
    np.testing.assert_array_equal(blocked_groups(Z, k, size, partition), serial)


def test_the_border_search_never_raises_the_sse_and_keeps_group_sizes(monkeypatch):
    monkeypatch.setattr(blocked, "BORDER_PART", 800)
    Z, k = _records(4000, 3, seed=8), 4
    cells = blocked_groups(Z, k, 300, mdav_groups)  # groups inside cells, then the search
    # the search alone from a poor start: groups of consecutive records in a random order
    start = np.random.default_rng(1).permutation(4000) // k
    out = blocked.border_search(Z, start, k, 800)
    assert partition_sse(Z, out) < partition_sse(Z, start)
    for labels in (cells, out):
        sizes = np.bincount(labels)
        assert sizes.min() >= k and sizes.max() <= 2 * k - 1 and sizes.sum() == 4000


def test_the_exact_neighbour_search_in_pieces_is_the_same_search(monkeypatch):
    monkeypatch.setattr(neighbours, "_CHUNK", 100)
    Z = _records(1000, 3, seed=5)
    whole = neighbours.exact_neighbours(Z, 6)
    seen: list[tuple[int, int]] = []

    def spread(fn, calls, label):
        seen.extend((args[2], args[3]) for args in calls)
        return [fn(*args) for args in calls]

    with part_map(spread):
        pieces = neighbours.exact_neighbours(Z, 6)
    assert len(seen) == neighbours.PIECES and seen[0][0] == 0 and seen[-1][1] == 1000
    np.testing.assert_array_equal(pieces[0], whole[0])
    np.testing.assert_array_equal(pieces[1], whole[1])
    # the probe decides for both maps: a budget it fits gives the same answer spread or not
    # (a budget per piece made the spread search give up where the serial one finished),
    # one it does not fit gives up before any piece runs
    with part_map(spread):
        budgeted = neighbours.exact_neighbours(Z, 6, seconds=60.0)
    np.testing.assert_array_equal(budgeted[0], whole[0])
    seen.clear()
    with part_map(spread), pytest.raises(neighbours.BudgetExceeded):
        neighbours.exact_neighbours(Z, 6, seconds=1e-9)
    assert not seen


def test_runner_dask_refusal_offers_cell_size_only_to_methods_that_take_it(tmp_path):
    # box is refused; the message listed "univariate with cell_size", an option univariate
    # does not have (the spec would then be refused for an unknown key)
    spec = write_release(
        tmp_path, rows=60, quasi_identifiers=QIS, method={"name": "box", "k": 5}, runner="dask"
    )
    with pytest.raises(InputError) as e:
        plan_release(load_spec(spec))
    assert (e.value.code, e.value.field) == (Reason.RUNNER, "runner")
    assert "mdav, ps with cell_size" in str(e.value)
    assert "univariate with cell_size" not in str(e.value)
    assert "univariate (one pass)" in str(e.value)


def test_heterogeneous_runs_under_dask_in_cells_only_and_cuts_along_ordered_keys(tmp_path):
    spec = write_release(tmp_path, rows=60, method={"name": "heterogeneous", "k": 5}, runner="dask")
    with pytest.raises(InputError) as e:  # one O(n^2) pass: nothing to spread
        plan_release(load_spec(spec))
    assert (e.value.code, e.value.field) == (Reason.RUNNER, "method.cell_size")
    spec = write_release(
        tmp_path, rows=60, method={"name": "heterogeneous", "k": 5, "cell_size": 20}, runner="dask"
    )
    assert plan_release(load_spec(spec)).resolved_keys
    # every key nominal: no coordinate to cut the cells along, refused at preflight
    spec = write_release(
        tmp_path,
        rows=60,
        quasi_identifiers=["region"],
        method={"name": "heterogeneous", "k": 5, "cell_size": 20},
    )
    with pytest.raises(InputError) as e:
        plan_release(load_spec(spec))
    assert e.value.code == Reason.SPEC_CONTRADICTION and "every key is nominal" in str(e.value)


def test_blocked_mdav_is_blocked_groups_with_mdav():
    Z = _records(1200)
    np.testing.assert_array_equal(blocked_mdav(Z, 3, 200), blocked_groups(Z, 3, 200, mdav_groups))


def test_runner_dask_refuses_a_method_without_cells(tmp_path):
    spec = write_release(
        tmp_path,
        rows=60,
        quasi_identifiers=QIS,
        method={"name": "constrained_fuzzy", "k": 5},
        runner="dask",
    )
    with pytest.raises(InputError) as e:
        plan_release(load_spec(spec))
    assert e.value.code == Reason.RUNNER
    # the same method on the local runner passes the preflight
    plan_release(with_cli_options(load_spec(spec), runner="local"))
    # and the command line says so with exit 2, before any flow run
    assert main(["check", str(spec)]) == 2


def test_runner_options(tmp_path):
    spec = load_spec(write_release(tmp_path, rows=20))
    assert spec.runner == "local"
    # --dask-workers implies --runner dask; it replaces the spec's dask settings
    dask = with_cli_options(spec, workers=3)
    assert (dask.runner, dask.dask.workers, dask.dask.address) == ("dask", 3, None)
    assert cluster_kwargs(dask.dask)["n_workers"] == 3
    assert with_cli_options(spec) is spec
    # --runner local with a Dask option ran locally without a word: refused, exit 2
    for option in ({"workers": 2}, {"address": "tcp://127.0.0.1:1"}):
        with pytest.raises(InputError) as e:
            with_cli_options(spec, runner="local", **option)
        assert e.value.code == Reason.RUNNER and e.value.field == "runner"
    assert main(["check", str(tmp_path / "release.yaml"), "--runner", "local",
                 "--dask-workers", "2"]) == 2  # fmt: skip
    # a spec cannot ask for both an embedded cluster and an existing one
    both = write_release(
        tmp_path, rows=20, spec_name="both.yaml", dask={"workers": 2, "address": "tcp://x:1"}
    )
    with pytest.raises(InputError) as e:
        load_spec(both)
    assert e.value.code == Reason.SPEC_FIELD


def test_a_worker_memory_limit_reaches_the_embedded_cluster_and_is_refused_elsewhere(tmp_path):
    limited = load_spec(
        write_release(tmp_path, rows=20, runner="dask", dask={"workers": 2, "memory_limit": "3GB"})
    )
    assert cluster_kwargs(limited.dask)["memory_limit"] == "3GB"
    # --dask-workers resizes the embedded cluster; the spec's limit stays
    assert cluster_kwargs(with_cli_options(limited, workers=1).dask)["memory_limit"] == "3GB"
    assert "memory_limit" not in cluster_kwargs(load_spec(write_release(tmp_path, rows=20)).dask)
    for dask, words in (
        ({"address": "tcp://x:1", "memory_limit": "3GB"}, "drop memory_limit or address"),
        ({"memory_limit": "lots"}, "not an amount of memory"),
    ):
        bad = write_release(tmp_path, rows=20, spec_name="bad.yaml", runner="dask", dask=dask)
        with pytest.raises(InputError) as e:
            load_spec(bad)
        assert e.value.code == Reason.SPEC_FIELD and words in str(e.value)


def test_an_embedded_cluster_is_sized_to_the_machine(tmp_path, monkeypatch, capsys):
    # --dask-workers past the spec's limit of 1024 is bad input in one line, not exit 3
    # with a pydantic traceback line; far more worker processes than CPUs would start for
    # minutes, lose the scheduler and fail, and spawn processes that SIGTERM does not stop.
    import sdcflow.preflight.runner as runner

    spec = write_release(tmp_path, rows=20, method={"name": "mdav", "k": 5, "cell_size": 10})
    with pytest.raises(SystemExit) as e:
        main(["check", str(spec), "--dask-workers", "1025"])
    assert e.value.code == 2 and "give 1 to 1024 workers" in capsys.readouterr().err
    monkeypatch.setattr(runner, "usable_cpus", lambda: 2)
    assert main(["check", str(spec), "--dask-workers", "9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "[runner dask.workers]" in err[0] and "at most 8" in err[0], err
    assert not (tmp_path / "warehouse.duckdb").exists()  # refused before anything is written
    plan_release(with_cli_options(load_spec(spec), workers=8))  # 4 per CPU: allowed


def _task_runs(flow_run_hex: str) -> list[str]:
    import httpx
    from prefect.settings import PREFECT_API_URL

    body = {"flow_runs": {"id": {"any_": [str(uuid.UUID(flow_run_hex))]}}, "limit": 200}
    response = httpx.post(f"{PREFECT_API_URL.value()}/task_runs/filter", json=body, timeout=30)
    response.raise_for_status()
    return [item["name"] for item in response.json()]


def accepting_dominated_groups(spec: dict, rows: int) -> dict:
    """``spec`` with ``max_p_dominated_groups`` at ``rows`` (no release reaches it) under
    ``accept: looser_checks``: the default p % rule gate of group means of magnitudes, which
    these runner tests do not test, loosened explicitly as an office would."""
    key = "max_p_dominated_groups"
    checks = {**spec.get("checks", {}), key: rows}
    return {**spec, "checks": checks, "accept": {"looser_checks": [key]}}


def release_local_and_on_dask(
    tmp_path: Path, rows: int, spec: dict, data: pd.DataFrame | None = None
) -> Path:
    """Release ``spec`` on the local runner and on two Dask workers (threads of a cluster in
    this process, ``--dask-address``); assert the published files are byte for byte the
    same and return the Dask release's folder. ``data``: the source instead of the first
    ``rows`` records of the example. The survey's magnitudes get the p % rule gate by default;
    the runner is what is tested, so dominated groups are accepted explicitly."""
    from distributed import LocalCluster

    spec = accepting_dominated_groups(spec, rows)
    local = write_release(tmp_path, rows=rows, spec_name="local.yaml", output="local", **spec)
    dask = write_release(tmp_path, rows=rows, spec_name="dask.yaml", output="dask", **spec)
    if data is not None:
        data.to_csv(tmp_path / "data.csv", index=False)
    assert main(["release", str(local)]) == 0
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        assert main(["release", str(dask), "--dask-address", cluster.scheduler_address]) == 0
    a, b = tmp_path / "local" / "survey", tmp_path / "dask" / "survey"
    for name in ("data.parquet", "data.csv"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    return b


@pytest.mark.flow
def test_compare_runs_its_variants_on_the_specs_dask_runner(tmp_path, prefect_api):
    """compare ran every variant in its own process whatever the spec's runner (no mask-cell
    task run on the cluster) and ran a variant the preflight refuses under runner: dask
    (fuzzy without cell_size) instead of refusing it before any work."""
    from distributed import LocalCluster

    from sdcflow.flows.compare import compare

    common = {
        "quasi_identifiers": QIS,
        "method": {"name": "mdav", "k": 5},
        "checks": {"k_anonymity": 5, "max_information_loss": 40},
        "seed": 11,
        "runner": "dask",
    }
    spec = write_release(tmp_path, rows=300, **common)
    with pytest.raises(InputError) as e:
        compare(spec, ["fuzzy"], [5])
    assert (e.value.code, e.value.field) == (Reason.RUNNER, "method.cell_size")
    assert not (tmp_path / "warehouse.duckdb").exists()  # refused before any work
    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        spec = write_release(
            tmp_path, rows=300, dask={"address": cluster.scheduler_address}, **common
        )
        table = compare(spec, ["mdav"], [5], params={"cell_size": 100})
    names = _task_runs(table["run_id"].iloc[0])
    assert sum(n.startswith("mask-cell") for n in names) == 4  # 300 records, cells <= 100
    assert table["k_achieved"].iloc[0] >= 5


@pytest.mark.flow
def test_dask_runner_publishes_the_local_release_and_gates_the_whole_of_it(tmp_path, prefect_api):
    """Two Dask workers group the cells; the published files are byte for byte those of the
    local runner; k and IL in the manifest are those of the assembled release (k over the
    published file, IL over every record of the file). The workers are threads of a cluster
    in this process (``--dask-address``), which starts in a second; the embedded cluster of
    worker processes (``--dask-workers``) is exercised by the benchmark script's test."""
    rows, k = 600, 5
    common = {
        "quasi_identifiers": QIS,
        "method": {"name": "mdav", "k": k, "cell_size": 100},
        "checks": {"k_anonymity": k, "max_information_loss": 40},
        "seed": 11,
    }
    b = release_local_and_on_dask(tmp_path, rows, common)
    manifest = json.loads((b / "manifest.json").read_text())
    run_id = manifest["run_id"]
    names = _task_runs(run_id)
    assert sum(n.startswith("mask-cell") for n in names) == 8  # 600 records, cells <= 100
    # every worker loaded the mask's code first
    assert sum(n.startswith("mask-warm") for n in names) >= 1
    # the cells moved their own progress artifact as each one ended, to 100 %
    assert progress_artifacts(["survey-mask-cell-progress"]) == {"survey-mask-cell-progress": 100.0}
    figures = {c["check"]: c["figure"] for c in manifest["checks"]}

    published = pd.read_parquet(b / "data.parquet")
    assert figures["k_anonymity"] == k_anonymity(published[QIS]) >= k
    # IL over the whole file: the assembled release (the warehouse's masked table, by row)
    # against the records as read
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        masked = con.execute(f"SELECT * FROM {table_name('masked', run_id)} ORDER BY {ROW_ID}").df()
    source = pd.read_csv(EXAMPLE / "data.csv").head(rows)
    assert masked[ROW_ID].tolist() == list(range(rows))
    il = sse_sst_loss(source[QIS].to_numpy(float), masked[QIS].to_numpy(float))
    assert figures["max_information_loss"] == pytest.approx(il, rel=1e-12)
    # the published rows are the assembled release's rows (shuffled)
    key = sorted(QIS)
    pd.testing.assert_frame_equal(
        published[QIS].sort_values(key).reset_index(drop=True),
        masked[QIS].sort_values(key).reset_index(drop=True),
        check_dtype=False,
    )


@pytest.mark.flow
def test_missing_numbers_in_cells_run_on_dask_with_the_local_release(tmp_path, prefect_api):
    """Numeric keys with missing values and ``cell_size``: MDAV-generic runs within each
    spatial cell, one task run per cell on the cluster, and the published files are byte for
    byte the local runner's (no single quadratic pass is needed)."""

    rows, k = 600, 5
    data = pd.read_csv(EXAMPLE / "data.csv").head(rows)
    rng = np.random.default_rng(4)
    for c in ("employees", "turnover", "other_costs"):
        data.loc[rng.random(rows) < 0.07, c] = np.nan
    body = {
        "quasi_identifiers": ["employees", "turnover", "other_costs"],
        "missing_values": [""],
        "method": {"name": "mdav", "k": k, "cell_size": 100},
        "checks": {"k_anonymity": k},
        "seed": 11,
    }
    b = release_local_and_on_dask(tmp_path, rows, body, data)
    manifest = json.loads((b / "manifest.json").read_text())
    assert sum(n.startswith("mask-cell") for n in _task_runs(manifest["run_id"])) == 8
    assert "within spatial cells of at most 100" in manifest["method_details"]["strategy"]
    published = pd.read_parquet(b / "data.parquet")
    keys = body["quasi_identifiers"]
    assert k_anonymity(published[keys]) >= k
    # every gap stays a gap; a group mixing gaps and values is blanked for all its records
    assert (published[keys].isna().sum() >= data[keys].isna().sum()).all()


@pytest.mark.flow
def test_many_pieces_run_in_bundles_with_the_same_release(tmp_path, prefect_api, monkeypatch):
    """More pieces than TASK_RUNS_PER_WORKER per worker run as bundles of consecutive pieces,
    one task run each (a task run costs its worker Prefect's bookkeeping): 8 cells on 2
    workers at 2 task runs per worker are 4 task runs of 2 cells; the published files are
    still byte for byte the local runner's, and the progress reaches 100 %."""
    from sdcflow.tasks import scale

    monkeypatch.setattr(scale, "TASK_RUNS_PER_WORKER", 2)
    common = {
        "quasi_identifiers": QIS,
        "method": {"name": "mdav", "k": 5, "cell_size": 100},
        "checks": {"k_anonymity": 5, "max_information_loss": 40},
        "seed": 11,
    }
    b = release_local_and_on_dask(tmp_path, 600, common)
    names = _task_runs(json.loads((b / "manifest.json").read_text())["run_id"])
    assert sum(n.startswith("mask-cell") for n in names) == 4  # 8 cells, 2 per task run
    assert progress_artifacts(["survey-mask-cell-progress"]) == {"survey-mask-cell-progress": 100.0}


@pytest.mark.flow
def test_pieces_of_each_stratum_say_which_stratum_they_are(tmp_path, prefect_api):
    """With a categorical key the method runs once per stratum, and each stratum's cells
    start their progress count again: the artifact and the bar name the stratum, so that
    going back to 0 % says where the mask is instead of seeming to start over."""
    common = {
        "quasi_identifiers": [*QIS, "region"],
        "method": {"name": "mdav", "k": 5, "cell_size": 100},
        "checks": {"k_anonymity": 5},
        "seed": 11,
    }
    b = release_local_and_on_dask(tmp_path, 600, common)
    strata = json.loads((b / "manifest.json").read_text())["method_details"]["strata"]
    assert strata > 1
    key = "survey-mask-cell-progress"
    assert progress_descriptions([key])[key].startswith(f"stratum {strata} of {strata}: cell")
    assert progress_artifacts([key]) == {key: 100.0}


def _piece_that_ends_its_worker(*args):
    """A cell whose worker shuts down under it (as when every worker of a cluster dies)."""
    import time

    from distributed import get_worker

    worker = get_worker()
    worker.loop.add_callback(worker.close)
    time.sleep(5)


@pytest.mark.flow
def test_a_cluster_whose_workers_all_died_fails_the_run_instead_of_waiting(
    tmp_path, prefect_api, monkeypatch
):
    """An external cluster (``--dask-address``) whose only worker dies while a cell runs:
    the pieces cannot run anywhere, and the run must not wait, "running", for ever. After
    NO_WORKER_SECONDS without any worker it fails (exit 3) and publishes nothing."""
    from distributed import LocalCluster

    from sdcflow.core.microaggregation import blocked
    from sdcflow.tasks import scale

    monkeypatch.setattr(scale, "NO_WORKER_SECONDS", 2.0)
    monkeypatch.setattr(scale, "WATCH_SECONDS", 0.2)
    monkeypatch.setattr(blocked, "group_cell", _piece_that_ends_its_worker)
    spec = write_release(
        tmp_path,
        rows=300,
        quasi_identifiers=QIS,
        method={"name": "mdav", "k": 5, "cell_size": 100},
        seed=11,
    )
    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        started = time.monotonic()
        code = main(["release", str(spec), "--dask-address", cluster.scheduler_address])
        assert time.monotonic() - started < 120
    assert code == 3
    assert not (tmp_path / "published").exists()
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("SELECT status FROM audit.runs").fetchall() == [("failed",)]


def _piece_that_fails_on_its_third_cell(partition, cell, k):
    """A cell that raises on the third cell it sees (inside a bundle of four cells)."""
    from sdcflow.core.microaggregation.blocked import refine_part

    _piece_that_fails_on_its_third_cell.seen += 1
    if _piece_that_fails_on_its_third_cell.seen == 3:
        raise ArithmeticError("cell 3 failed")
    return refine_part(cell, partition(cell, k), k)


@pytest.mark.flow
def test_a_piece_that_fails_inside_a_bundle_fails_the_run_and_keeps_the_release(
    tmp_path, prefect_api, monkeypatch
):
    """A bundle is one task run of several cells: when one of its cells raises, the run
    fails (exit 3, audit ``failed``) and the release published before stays as it was,
    file for file, with no partial file beside it."""
    from distributed import LocalCluster

    from sdcflow.tasks import scale

    spec = write_release(
        tmp_path,
        rows=600,
        quasi_identifiers=QIS,
        method={"name": "mdav", "k": 5, "cell_size": 100},
        seed=11,
        **accepting_dominated_groups({"checks": {"k_anonymity": 5}}, 600),
    )
    assert main(["release", str(spec)]) == 0
    before = {p: p.read_bytes() for p in (tmp_path / "published").rglob("*") if p.is_file()}
    assert before
    monkeypatch.setattr(scale, "TASK_RUNS_PER_WORKER", 2)  # 8 cells, 1 worker: 2 bundles of 4
    _piece_that_fails_on_its_third_cell.seen = 0
    monkeypatch.setattr(blocked, "group_cell", _piece_that_fails_on_its_third_cell)
    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        code = main(["release", str(spec), "--force", "--dask-address", cluster.scheduler_address])
    assert code == 3
    after = {p: p.read_bytes() for p in (tmp_path / "published").rglob("*") if p.is_file()}
    assert after == before
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        statuses = con.execute("SELECT status FROM audit.runs ORDER BY started_at").fetchall()
    assert statuses == [("published",), ("failed",)]


@pytest.mark.flow
def test_benchmark_script_prints_every_figure_beside_its_target(tmp_path, prefect_api):
    """benchmarks/scale.py at a tiny n (structure only, never a timed assertion): one
    ``sdcflow release --runner dask --dask-workers 1`` process, an embedded LocalCluster of
    worker processes; it uses the session's Prefect API instead of starting its own."""
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "scale.py"),
            "--n",
            "3000",
            "--cell-size",
            "1000",
            "--workers",
            "1",
            "--json",
            str(tmp_path / "scale.json"),
            "--work",
            str(tmp_path / "work"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads((tmp_path / "scale.json").read_text())
    assert {"n", "d", "k", "seed", "runs", "il_unpartitioned", "targets", "load"} <= set(result)
    for run in result["runs"]:
        assert {"workers", "wall_seconds", "steps", "peak_rss_mb", "il", "status"} <= set(run)
        assert run["status"] == "published"
        # the release's process tree did work, and at most all the CPUs' worth of it
        assert 0 < run["cpu_seconds"] and 0 < run["cores_busy"] <= (os.cpu_count() or 1) + 0.1
    for target in result["targets"]:
        assert {"figure", "target", "met"} <= set(target)
    assert "target" in out.stdout
    # every piece's task run logged its time on the worker process: 3 cells and the border
    # search's parts, within the run
    for run in result["runs"]:
        pieces = run["pieces"]
        assert pieces is not None and pieces["pieces"] >= 3 and pieces["task_runs"] >= 1
        assert 0 < pieces["wall_seconds"] and 0 < pieces["span_seconds"] < run["wall_seconds"]
    assert "the mask's pieces:" in out.stdout


def test_the_benchmark_reads_the_pieces_span_from_their_log_lines():
    """By hand: two workers' lines; the earliest start is 10:00:02.000 - 2.5 s = 09:59:59.500,
    the latest end 10:00:04.000, so the span is 4.5 s; a bundle counts its pieces; the
    warm-up and other lines are not pieces. With a 9 s span on 1 worker, the span's speed-up
    is 9 / 4.5 = 2."""
    spec = importlib.util.spec_from_file_location("scale_bench", ROOT / "benchmarks" / "scale.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    log = "\n".join(
        [
            "09:59:58.000 | INFO    | Task run 'mask-warm-1a2' - piece done in 0.50 s wall, "
            "0.40 s CPU",
            "10:00:02.000 | INFO    | Task run 'mask-cell-0f3' - piece done in 2.50 s wall, "
            "2.40 s CPU",
            "10:00:03.000 | INFO    | Task run 'mask-cell-9b1' - 4 pieces done in 3.00 s wall, "
            "2.90 s CPU",
            "10:00:04.000 | INFO    | Task run 'mask-border-77c' - piece done in 1.00 s wall, "
            "1.00 s CPU",
            "10:00:04.500 | INFO    | Task run 'mask-border-77c' - Finished in state Completed()",
        ]
    )
    pieces = bench.piece_seconds(log)
    assert pieces == {
        "pieces": 6,
        "task_runs": 3,
        "wall_seconds": 6.5,
        "cpu_seconds": 6.3,
        "span_seconds": 4.5,
    }
    assert bench.piece_seconds("no pieces here") is None
    runs = [
        {
            "workers": w,
            "runner": "dask",
            "status": "published",
            "wall_seconds": wall,
            "cpu_seconds": 20.0,
            "peak_rss_mb": 1.0,
            "steps": {},
            "pieces": {"span_seconds": span},
        }
        for w, wall, span in ((1, 20.0, 9.0), (2, 15.0, 4.5))
    ]
    result = {"n": 1000, "method": "mdav", "load": {"cpus": 2}, "runs": runs}
    figures = {t["figure"]: t["value"] for t in bench.targets(result)}
    span = next(v for f, v in figures.items() if f.startswith("speed-up of the pieces' span"))
    assert span == 2.0


def test_the_benchmark_ceiling_is_the_1_worker_wall_over_the_2_worker_cpu_per_core():
    """By hand: 1 worker 100 s wall; 2 workers 70 s wall and 120 CPU s over 2 cores: no
    schedule of 120 CPU s on 2 cores ends before 60 s, so the ratio cannot pass 100 / 60."""
    spec = importlib.util.spec_from_file_location("scale_bench", ROOT / "benchmarks" / "scale.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    def run(workers: int, wall: float, cpu: float) -> dict:
        return {
            "workers": workers,
            "runner": "dask",
            "status": "published",
            "wall_seconds": wall,
            "cpu_seconds": cpu,
            "peak_rss_mb": 1.0,
            "steps": {},
        }

    result = {
        "n": 1000,
        "method": "mdav",
        "load": {"cpus": 2},
        "runs": [run(1, 100.0, 110.0), run(2, 70.0, 120.0)],
    }
    figures = {t["figure"]: t["value"] for t in bench.targets(result)}
    assert figures["speed-up, 2 workers over 1 (wall, end to end)"] == round(100 / 70, 3)
    ceiling = next(v for f, v in figures.items() if f.startswith("speed-up ceiling on 2 CPUs"))
    assert ceiling == round(100 / 60, 3)


def test_the_benchmark_amdahl_bound_halves_the_mask_step_and_keeps_the_rest():
    """By hand: 1 worker 100 s wall of which the mask step 70 s; halving the mask step alone
    leaves 30 + 35 = 65 s, so the end-to-end speed-up cannot pass 100 / 65."""
    spec = importlib.util.spec_from_file_location("scale_bench", ROOT / "benchmarks" / "scale.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    runs = [
        {
            "workers": w,
            "runner": "dask",
            "status": "published",
            "wall_seconds": wall,
            "cpu_seconds": 110.0,
            "peak_rss_mb": 1.0,
            "steps": {"ingest": 2.0, "mask": mask},
        }
        for w, wall, mask in ((1, 100.0, 70.0), (2, 70.0, 40.0))
    ]
    result = {"n": 1000, "method": "mdav", "load": {"cpus": 2}, "runs": runs}
    figures = {t["figure"]: t["value"] for t in bench.targets(result)}
    bound = next(v for f, v in figures.items() if f.startswith("speed-up bound, mask step"))
    assert bound == round(100 / 65, 3)
    assert figures["speed-up of the mask step, 2 workers over 1 (wall)"] == round(70 / 40, 3)


@pytest.mark.flow
def test_dask_address_runs_the_cells_on_an_existing_cluster(tmp_path, prefect_api, monkeypatch):
    """--dask-address: the release connects to a running scheduler instead of starting one
    (here an in-process cluster of three worker threads); a worker receives its piece, not
    the file; each of the cluster's workers gets one warm-up piece (the local CPU count gave
    two here)."""
    from distributed import LocalCluster

    spec = write_release(
        tmp_path,
        rows=300,
        quasi_identifiers=QIS,
        method={"name": "ps", "k": 5, "cell_size": 100},
        **accepting_dominated_groups(
            {"checks": {"k_anonymity": 5, "max_information_loss": 40}}, 300
        ),
    )
    import prefect_dask.client

    sent: list[dict] = []  # what each task sent to the cluster carries besides its piece
    serialize = prefect_dask.client.serialize_context

    def spy(*args, **kwargs):
        context = serialize(*args, **kwargs)
        sent.append(context)
        return context

    monkeypatch.setattr(prefect_dask.client, "serialize_context", spy)
    with LocalCluster(n_workers=3, processes=False, dashboard_address=None) as cluster:
        code = main(["release", str(spec), "--dask-address", cluster.scheduler_address])
        assert code == 0
        assert (
            cluster.scheduler_address
        )  # still up: sdcflow does not stop a cluster it did not start
    manifest = json.loads((tmp_path / "published" / "survey" / "manifest.json").read_text())
    runs = _task_runs(manifest["run_id"])
    assert sum(n.startswith("mask-cell") for n in runs) == 4
    assert sum(n.startswith("mask-warm") for n in runs) == 3
    assert manifest["method"]["cell_size"] == 100
    assert manifest["method_details"]["algorithm"] == "ps in cells of 100"
    # Prefect serializes the submitting flow run's and task run's contexts into every task:
    # with their parameters, that was the flow's plan (the whole file as read) and the mask
    # task's frame (every record) sent along with each cell. Now no parameter travels.
    assert len(sent) >= 4
    for context in sent:
        assert not context["flow_run_context"].get("parameters")
        assert not context["task_run_context"].get("parameters")


def test_exact_neighbours_gives_up_early_when_projected_over_budget(monkeypatch):
    """The lower bound's exact search times 256 evenly spaced queries before it starts and
    gives up at once when they project it beyond 1.5 x its budget (at 1M records in 10
    dimensions it would take tens of minutes; giving up took 10.8 CPU s after a first chunk
    of 8192 queries, the probe about 1.5 s); a clock that advances 1 s per look makes it
    deterministic."""
    from sdcflow.core.microaggregation import neighbours

    ticks = iter(range(10**6))
    monkeypatch.setattr(neighbours.time, "process_time", lambda: float(next(ticks)))
    Z = np.random.default_rng(0).standard_normal((50000, 2))
    # t0 = 0, built = 1, probe done at 2: projected 1 + 1 x 50000 / 256 = 196.3 s
    with pytest.raises(neighbours.BudgetExceeded, match="projected"):
        neighbours.exact_neighbours(Z, 3, seconds=100.0)  # 196.3 > 1.5 x 100
    # 196.3 < 1.5 x 200: the search starts, and runs to its end
    idx, _ = neighbours.exact_neighbours(Z, 3, seconds=200.0)
    assert idx.shape == (50000, 3)


def _cells_spec(tmp_path: Path, **spec: object) -> Path:
    """60 survey records, MDAV in cells of 20, the numeric keys only."""
    cells = {"name": "mdav", "k": 5, "cell_size": 20}
    return write_release(tmp_path, rows=60, quasi_identifiers=QIS, method=cells, **spec)


def test_a_dask_address_nobody_answers_is_refused_before_any_work(tmp_path):
    """--dask-address of a scheduler that is not there: exit 2 at the preflight with reason
    ``runner`` and field ``dask.address``, no run recorded and nothing published (before,
    the run started and failed at its mask step with exit 3)."""
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = _cells_spec(tmp_path, dask={"address": f"tcp://127.0.0.1:{port}"}, runner="dask")
    with pytest.raises(InputError) as e:
        plan_release(load_spec(spec))
    assert (e.value.code, e.value.field) == (Reason.RUNNER, "dask.address")
    assert main(["release", str(spec)]) == 2
    assert not (tmp_path / "published").exists()
    assert not (tmp_path / "warehouse.duckdb").exists()


def test_a_port_that_listens_but_is_no_scheduler_is_refused_before_any_work(tmp_path):
    """A --dask-address whose port accepts connections and never answers does not pass the
    preflight (a TCP connection alone would, then hold the run and the warehouse's writer
    lock at "Connecting to an existing Dask cluster" for minutes). The preflight asks for
    a Dask handshake: exit 2 within seconds, nothing created."""
    import socket
    import time

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts, never answers
        port = silent.getsockname()[1]
        spec = _cells_spec(tmp_path)
        start = time.monotonic()
        assert main(["release", str(spec), "--dask-address", f"tcp://127.0.0.1:{port}"]) == 2
        assert time.monotonic() - start < 60
    assert not (tmp_path / "published").exists()
    assert not (tmp_path / "warehouse.duckdb").exists()


@pytest.mark.parametrize(
    "address", ["", "inproc://nothing", "127.0.0.1", "tcp://127.0.0.1:x", "tcp://:8786"]
)
def test_a_malformed_dask_address_is_bad_input_in_one_line(tmp_path, capsys, address):
    """An empty address and inproc:// are bad input, not exit 3 with a Python error (a
    pydantic ValidationError, a ValueError from Dask's parser): the address is checked with
    the spec and the option, exit 2, one line naming the option and the fix."""
    spec = write_release(tmp_path, rows=60, method={"name": "mdav", "k": 5, "cell_size": 20})
    assert main(["release", str(spec), "--dask-address", address]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "dask.address" in err[0] and "tcp://" in err[0]
    assert "Error" not in err[0].split("]", 1)[-1]  # no Python exception's name
    assert not (tmp_path / "warehouse.duckdb").exists()
    body = yaml.safe_load(spec.read_text())
    spec.write_text(yaml.safe_dump({**body, "runner": "dask", "dask": {"address": address}}))
    assert main(["release", str(spec)]) == 2  # the same in the spec
    assert "dask.address" in capsys.readouterr().err


def test_pieces_go_to_the_cluster_largest_first_and_come_back_in_order(monkeypatch):
    """The cluster starts pieces in the order they are submitted: the largest go first, so
    that no large piece starts last while the other workers wait (five border parts of a
    million records on two workers: 8.8 s, largest first 6.8 s). Results come back in the
    order of the calls, bundles included, and distributed's "large graph" warning (its
    advice does not apply to data sent once) does not reach the user."""
    import logging
    import warnings

    from sdcflow.tasks import scale

    submitted = []

    class Future:
        def __init__(self, value):
            self.value = value

        def wait(self):
            pass

        def result(self):
            return self.value

    class Runner:
        def submit(self, fn, args):
            warnings.warn("Sending large graph of size 21.02 MiB.", UserWarning, stacklevel=1)
            submitted.append(args)
            return Future(fn(*args))

    class Part:
        def with_options(self, name):
            return Runner()

    monkeypatch.setattr(scale, "run_part", Part())
    monkeypatch.setattr(scale, "get_run_logger", lambda: logging.getLogger("test"))
    sizes = [3, 9, 1, 7, 5]
    calls = [(np.zeros(m),) for m in sizes]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = scale.submitted_parts(len, calls, "border")
    assert out == sizes  # in the order of the calls
    assert [len(args[0]) for args in submitted] == [9, 7, 5, 3, 1]
    assert not [w for w in seen if "large graph" in str(w.message)]
    submitted.clear()
    monkeypatch.setattr(scale, "TASK_RUNS_PER_WORKER", 1)  # bundles of 3, 2: the 3 first
    out = scale.submitted_parts(len, calls[::-1], "border", workers=2)
    assert out == sizes[::-1]
    assert [[len(c[0]) for c in args[1]] for args in submitted] == [[5, 7, 1], [9, 3]]
