"""``sdcflow check`` on the example from the shell: its wall time beside the 5 s target and
sdcMicro's one try, and where the time goes (issue 43, item 6).

Usage::

    python benchmarks/check_wall.py [--repeats 5] [--no-running-server]

The example is ``examples/business_survey/release.yaml`` (3,000 records, six numeric keys and
``region``, MDAV k = 5 within region, two edit rules), copied with its ``data.csv`` into a
temporary folder. Each figure is the wall time of the whole command as a process
(``python -m sdcflow check release.yaml``: interpreter start, imports, the temporary Prefect
API, the flow run, the report, the exit), median and minimum of ``--repeats`` runs, and the
median CPU seconds of the command and of the processes it waited for (the temporary API
server): on 2 cores the wall cannot fall below half of it, whatever runs in parallel:

* ``cold``: a fresh folder each run (no warehouse, no reports);
* ``warm``: the same folder again (the warehouse and earlier runs' reports exist);
* ``running server``: warm, with ``PREFECT_API_URL`` naming a Prefect API that is already up
  (started here, once, outside the clock), the documented way to skip the temporary one.

The anchor, measured in the same run: sdcMicro's one try from the shell, ``Rscript`` running
``createSdcObj`` + ``microaggregation(method = "mdav", aggr = 5)`` within region + its risk on
the same file (``benchmarks/sdcmicro_working_object.R`` with 0 repeats: its one warm-up try,
library load and reading included), when ``Rscript`` is on the path and ``SDCMICRO_LIB``
names sdcMicro's library; otherwise its line says why it was skipped. The previous figure is
the issue's: 10.3-11.3 s.

The breakdown comes from one more cold run in a process that timestamps the command's phases
(importing the command line, the preflight, the flow's imports, the wait for the API's
``/health``, the flow run, the stop), the CPU seconds of the command and of the API server,
and the flow's own "step ... done in" log lines; beside
it, the import of each heavy library alone (a fresh interpreter each, median of three).

Every line is JSON; ``/proc/loadavg`` is printed before and after (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "business_survey"
R_SCRIPT = Path(__file__).with_name("sdcmicro_working_object.R")
TARGET_SECONDS = 5.0
PREVIOUS = "10.3-11.3 s (issue 43, item 6)"
LIBRARIES = [
    "sdcflow.cli.main",
    "prefect",
    "great_expectations",
    "duckdb",
    "numba",
    "matplotlib.backends.backend_agg",
    "prefect.server.api.server",
]

# A cold run in a process that stamps the phases of `sdcflow check`; private names of
# sdcflow.cli.release and sdcflow.flows.server, so a phase whose hook is gone is left out.
TIMELINE = r"""
import sys, time
T0 = time.perf_counter()
marks = []
def mark(what):
    marks.append((what, time.perf_counter() - T0))
import sdcflow.cli.main as main
mark("imports of the command line")
import sdcflow.cli.release as release
import sdcflow.flows.server as server
def wrap(module, name, before=None, after=None):
    original = getattr(module, name, None)
    if original is None:
        return
    def hooked(*args, **kwargs):
        if before:
            mark(before)
        try:
            return original(*args, **kwargs)
        finally:
            if after:
                mark(after)
    setattr(module, name, hooked)
wrap(server, "_free_port", before="Prefect's settings (import), before the API's spawn")
wrap(release, "_import_flow", before="preflight (spec, source, plan)", after="the flow's imports")
wrap(server, "_wait_healthy", after="the wait for the API's /health")
wrap(server, "_drain_workers", before="the flow run", after="drain of logs and events")
wrap(server, "_stop", after="stop of the temporary API")
code = main._main(sys.argv[1:])
mark("outcome printed")
import resource
cpu = {}
for who, which in (("command", resource.RUSAGE_SELF), ("api_server", resource.RUSAGE_CHILDREN)):
    usage = resource.getrusage(which)
    cpu[who] = round(usage.ru_utime + usage.ru_stime, 2)
import json
print("TIMELINE " + json.dumps({"code": code, "marks": marks, "cpu": cpu}), flush=True)
main._end_process(code)  # as the command ends: exit hooks, then os._exit
"""

# the flow's own steps (its "Flow run" lines; a task's sub-steps are inside them)
_STEP = re.compile(r"Flow run .*? step (.+?) done in ([0-9.]+) s wall")


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "unknown"


def _fresh_copy() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="sdcflow-check-wall-"))
    for name in ("release.yaml", "data.csv"):
        shutil.copy2(EXAMPLE / name, folder / name)
    return folder


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _check(folder: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one ``sdcflow check``; the CPU counts the command and every
    process it waited for (the temporary API server), which a loaded machine disturbs less."""
    command = [sys.executable, "-m", "sdcflow", "check", "release.yaml"]
    cpu, start = _cpu_of_children(), time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env)
    seconds, cpu = time.perf_counter() - start, _cpu_of_children() - cpu
    if done.returncode != 0:
        raise SystemExit(f"sdcflow check exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds, cpu


def _figures(label: str, runs: list[tuple[float, float]]) -> dict:
    times = [wall for wall, _ in runs]
    median = statistics.median(times)
    return {
        "tool": "sdcflow check",
        "case": label,
        "median_wall_seconds": round(median, 2),
        "min_wall_seconds": round(min(times), 2),
        "median_cpu_seconds": round(statistics.median(cpu for _, cpu in runs), 2),
        "runs": len(times),
        "target_seconds": TARGET_SECONDS,
        "within_target": median < TARGET_SECONDS,
        "previous": PREVIOUS,
    }


def sdcflow_runs(repeats: int, running_server: bool) -> list[dict]:
    folders: list[Path] = []
    try:
        _check(_fresh_copy())  # warm-up: the file system's cache, numba's on-disk cache
        cold = []
        for _ in range(repeats):
            folders.append(_fresh_copy())
            cold.append(_check(folders[-1]))
        warm = [_check(folders[0]) for _ in range(repeats)]
        lines = [_figures("cold", cold), _figures("warm", warm)]
        if running_server:
            lines.append(_with_running_server(folders[0], repeats))
        return lines
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def _with_running_server(folder: Path, repeats: int) -> dict:
    from sdcflow.flows.server import owned_prefect_api

    with owned_prefect_api() as url:  # up before the clock starts, as a team's server is
        env = {**os.environ, "PREFECT_API_URL": url}
        times = [_check(folder, env) for _ in range(repeats)]
    return _figures("warm, PREFECT_API_URL set to a running server", times)


def breakdown() -> dict:
    folder = _fresh_copy()
    try:
        command = [sys.executable, "-c", TIMELINE, "check", "release.yaml"]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
        wall = time.perf_counter() - start
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    found = [line for line in done.stdout.splitlines() if line.startswith("TIMELINE ")]
    if not found:
        return {"breakdown": "skipped", "why": done.stderr[-2000:]}
    timeline = json.loads(found[-1].removeprefix("TIMELINE "))
    phases, last = {}, 0.0
    for what, at in timeline["marks"]:
        phases[what] = round(at - last, 2)
        last = at
    steps = {m.group(1): float(m.group(2)) for m in _STEP.finditer(done.stderr)}
    return {
        "breakdown": "one cold run, seconds per phase in order",
        "process_wall_seconds": round(wall, 2),
        "phases": phases,
        "interpreter_start_and_end": round(wall - last, 2),
        "cpu_seconds": timeline.get("cpu"),
        "flow_steps": steps,
        "flow_steps_total": round(sum(steps.values()), 2),
    }


def import_times() -> dict:
    times = {}
    for module in LIBRARIES:
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
            runs.append(time.perf_counter() - start)
        times[module] = round(statistics.median(runs), 2)
    return {"imports": "a fresh interpreter each, median of 3, wall seconds", **times}


def sdcmicro_one_try() -> dict:
    lib = os.environ.get("SDCMICRO_LIB")
    if shutil.which("Rscript") is None or not lib:
        why = "Rscript not on the path" if lib else "SDCMICRO_LIB is not set"
        return {"tool": "sdcMicro", "skipped": why}
    env = {**os.environ, "R_LIBS": lib}
    command = ["Rscript", "--vanilla", str(R_SCRIPT), str(EXAMPLE / "data.csv"), "0"]
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(command, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return {
        "tool": "sdcMicro",
        "case": "one try from the shell (Rscript, library load included)",
        "median_wall_seconds": round(statistics.median(times), 2),
        "min_wall_seconds": round(min(times), 2),
        "runs": len(times),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--no-running-server",
        action="store_true",
        help="leave out the runs against an API that is already up",
    )
    args = parser.parse_args(argv)
    print(json.dumps({"loadavg_before": loadavg(), "cpus": os.cpu_count()}), flush=True)
    for line in sdcflow_runs(args.repeats, not args.no_running_server):
        print(json.dumps(line), flush=True)
    print(json.dumps(sdcmicro_one_try()), flush=True)
    print(json.dumps(breakdown()), flush=True)
    print(json.dumps(import_times()), flush=True)
    print(json.dumps({"loadavg_after": loadavg()}), flush=True)


if __name__ == "__main__":
    main()
