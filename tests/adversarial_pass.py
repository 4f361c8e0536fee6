"""Adversarial pass: signals at random moments against an installed ``sdcflow``.

One release after another on one warehouse, each sent SIGKILL, SIGTERM or SIGINT at a random
moment: half of them in the publish step (when its temporary folder appears, plus 0-0.3 s),
the others anywhere in the flow (0-10 s after its report folder appears). After each, it
checks that the disk, the exit code, what was printed and ``sdcflow runs`` agree, that the
live release is whole (every sha256 of its manifest), that no Prefect server survived and
that a file of the user's beside the release was not touched; a last full run then settles
the killed runs and ``audit.runs`` must agree with the disk.

Usage (a copy of the example folder, N kills, random seed SEED)::

    cp -r examples/business_survey /tmp/work
    python tests/adversarial_pass.py "$(which sdcflow)" /tmp/work N SEED

Prints one JSON line per kill, a JSON summary and the problems found. Not collected by pytest
(minutes of real runs); ``test_adversarial_processes.py::
test_kills_at_random_moments_never_leave_disk_and_audit_disagreeing`` is its short form.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb

RELEASE = "business-survey"
EXITS = {0, 1, 3, 130, -int(signal.SIGKILL)}


def marker_run(target: Path) -> str | None:
    try:
        return json.loads((target / ".sdcflow-release").read_text())["run_id"]
    except OSError:
        return None


def whole(target: Path) -> bool:
    manifest = json.loads((target / "manifest.json").read_text())
    return all(
        hashlib.sha256((target / name).read_bytes()).hexdigest() == entry["sha256"]
        for name, entry in manifest["files"].items()
    )


def servers_of(pid: int) -> set[int]:
    """Children of ``pid`` running uvicorn (the Prefect API server it owns)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if parent == pid and b"uvicorn" in (stat.parent / "cmdline").read_bytes():
                out.add(int(stat.parent.name))
        except OSError:
            continue
    return out


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def attack(
    sdcflow: str, work: Path, rng: random.Random, env: dict[str, str]
) -> tuple[dict[str, Any], list[str]]:
    """One release, one signal; returns what happened and the problems found."""
    target = work / "published" / RELEASE
    runs_dir = work / "reports" / RELEASE
    before = marker_run(target)
    known = set(os.listdir(runs_dir)) if runs_dir.exists() else set()
    proc = subprocess.Popen(
        [sdcflow, "release", "release.yaml", "--force"],  # republish: same input and spec
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    mode = rng.choice(["flow", "publish", "publish"])
    delay = rng.uniform(0, 10) if mode == "flow" else rng.uniform(0, 0.3)
    sig = rng.choice([signal.SIGKILL, signal.SIGTERM, signal.SIGINT])

    def started() -> bool:
        if mode == "flow":
            return runs_dir.exists() and bool(set(os.listdir(runs_dir)) - known)
        return any((work / "published").glob(f".{RELEASE}.tmp-*"))

    servers: set[int] = set()
    while proc.poll() is None and not started():
        servers |= servers_of(proc.pid)
        time.sleep(0.001)
    time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(sig)
    out, err = proc.communicate(timeout=900)
    time.sleep(2)
    after = marker_run(target)
    swapped, said = after != before, any(x.startswith("published ") for x in out.splitlines())
    lines = [x for x in err.splitlines() if x.startswith("sdcflow:")]
    shown = subprocess.run(
        [sdcflow, "runs", "release.yaml", "--limit", "1"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    # the first row of the table: it starts with the (cut) run id
    latest = next((x for x in shown.stdout.splitlines() if re.match(r"[0-9a-f]{8} ", x)), "")
    entry = {
        "mode": mode,
        "delay": round(delay, 3),
        "signal": sig.name,
        "exit": proc.returncode,
        "swapped": swapped,
        "said_published": said,
        "sdcflow_lines": len(lines),
        "orphaned_servers": sum(alive(s) for s in servers),
    }
    problems = [
        text
        for text, bad in [
            ("orphaned Prefect server", entry["orphaned_servers"] > 0),
            ("live release not whole", after is not None and not whole(target)),
            ("exit 0 without 'published'", proc.returncode == 0 and not said),
            ("printed != disk", sig != signal.SIGKILL and swapped != said),
            ("unexpected exit code", proc.returncode not in EXITS and proc.returncode != -sig),
            ("more than one sdcflow line", len(lines) > 1),
            ("`sdcflow runs` failed", shown.returncode != 0),
            ("`sdcflow runs` != disk", bool(latest) and swapped != (" published " in latest)),
        ]
        if bad
    ]
    return entry, problems


def main() -> None:
    sdcflow, work, kills, seed = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = random.Random(int(seed))
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    (work / "notes.txt").write_text("a file of the user's")
    problems: list[tuple[int, str, dict[str, Any]]] = []
    for i in range(kills):
        entry, found = attack(sdcflow, work, rng, env)
        print(json.dumps({"kill": i, **entry, "problems": found}), flush=True)
        problems += [(i, p, entry) for p in found]
    final = subprocess.run(
        [sdcflow, "release", "release.yaml", "--force"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    with duckdb.connect(str(work / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT status, published_to FROM audit.runs").fetchall()
    statuses = sorted({s for s, _ in rows})
    summary = {
        "final_exit": final.returncode,
        # the line that says why, when the final run did not publish (an API that did not
        # start in time on a loaded machine exits 3 and records nothing)
        "final_said": final.stderr.strip().splitlines()[-1:] if final.returncode else [],
        "runs": len(rows),
        "statuses": {s: sum(1 for t, _ in rows if t == s) for s in statuses},
        "still_running": sum(1 for s, _ in rows if s == "running"),
        "audit_disagrees": sum(1 for s, p in rows if (s == "published") != (p is not None)),
        "temporary_leftovers": [x for x in os.listdir(work / "published") if x.startswith(".")],
        "user_file_intact": (work / "notes.txt").read_text() == "a file of the user's",
        "problems": len(problems),
    }
    print(json.dumps(summary))
    for problem in problems:
        print("PROBLEM", problem)


if __name__ == "__main__":
    main()
