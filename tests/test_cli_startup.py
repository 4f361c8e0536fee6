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


def _imported_after(code: str) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
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
