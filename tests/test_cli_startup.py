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
