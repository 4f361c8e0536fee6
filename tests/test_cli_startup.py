"""What ``sdcflow check`` pays before it starts its Prefect API (issue 43, item 6): the command
line's parser imports none of the heavy libraries. They load in the command that runs, while
the temporary API server boots in its own process (:mod:`sdcflow.flows.server`); one imported
by the parser delays that server's start by its whole import time on every command."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "numpy",
    "pandas",
    "scipy",
    "numba",
    "duckdb",
    "pyarrow",
    "prefect",
    "great_expectations",
    "matplotlib",
    "pydantic",
)


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def _imported_after(code: str) -> list[str]:
    loaded = _modules_after(code)
    return [name for name in HEAVY if name in loaded]


def test_building_the_parser_imports_no_heavy_library() -> None:
    assert _imported_after("from sdcflow.cli.main import build_parser; build_parser()") == []


def test_parsing_a_check_imports_no_heavy_library() -> None:
    code = (
        "from sdcflow.cli.main import build_parser\n"
        "args = build_parser().parse_args(['check', 'release.yaml'])\n"
        "assert args.command == 'check'"
    )
    assert _imported_after(code) == []


def test_the_release_flow_loads_neither_great_expectations_nor_scipy_stats() -> None:
    # a spec without edit rules or fuzzy mapping never needs them: GE loads for edit rules
    # (sdcflow.cli.release._import_flow), scipy.stats in the fuzzy mapping's rank figures
    loaded = _modules_after("import sdcflow.flows.release, sdcflow.preflight.plan")
    assert "prefect" in loaded
    assert "great_expectations" not in loaded and "scipy.stats" not in loaded


def test_the_release_and_its_report_draw_without_matplotlib() -> None:
    # the report's charts are SVG written by sdcflow.report.svg, so no release pays for
    # matplotlib's import and drawing; only ``sdcflow compare`` draws a PNG with it
    loaded = _modules_after(
        "import sdcflow.flows.release, sdcflow.flows.streamed, sdcflow.report.release, "
        "sdcflow.report.aggregated, sdcflow.working"
    )
    assert "matplotlib" not in loaded


def test_check_counts_edit_rules_without_great_expectations_and_with_the_same_counts(
    tmp_path,
) -> None:
    """``sdcflow check`` counts the edit rules by DuckDB's SQL and never loads Great
    Expectations (seconds of its start-up); ``--data-docs`` validates them with GE and writes
    its Data Docs, as ``sdcflow release`` does. The rules' counts and the decision are the
    same either way."""
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "examples" / "business_survey"
    for name in ("release.yaml", "data.csv", "rules.yaml"):
        if (root / name).exists():
            shutil.copy(root / name, tmp_path / name)
    probe = (
        "import json, sys\n"
        "from sdcflow.cli.main import main\n"
        "rc = main(sys.argv[1:])\n"
        "print(json.dumps([rc, 'great_expectations' in sys.modules]))"
    )
    runs = {}
    for extra in ([], ["--data-docs"]):
        done = subprocess.run(
            [sys.executable, "-c", probe, "check", "release.yaml", *extra],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        rc, ge_loaded = json.loads(done.stdout.splitlines()[-1])
        counts = [line for line in done.stderr.splitlines() + done.stdout.splitlines()
                  if "violating" in line and "edit rule" in line]  # fmt: skip
        runs[bool(extra)] = (rc, ge_loaded, sorted(c.split("edit rule", 1)[1] for c in counts))
    assert runs[False][:2] == (0, False)
    assert runs[True][:2] == (0, True)
    assert runs[False][2] and runs[False][2] == runs[True][2]
    docs = list(tmp_path.rglob("data-docs"))
    assert docs, "check --data-docs wrote no Data Docs"
