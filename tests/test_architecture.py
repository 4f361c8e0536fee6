"""The architecture is a contract the tests run: the import-linter contracts in
pyproject.toml (the numerical core imports no Prefect, DuckDB or Great Expectations; flows on
top, never imported; no import circles)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        pytest.fail("lint-imports is not installed: pip install '.[test]'")
    run = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


def test_package_is_the_folder_a_reader_opens():
    """No ``__path__`` hook: every subpackage lives in the one folder of the package."""
    import sdcflow
    import sdcflow.core.microaggregation
    import sdcflow.flows

    (root,) = sdcflow.__path__
    for module in (sdcflow.flows, sdcflow.core.microaggregation):
        assert Path(module.__file__).resolve().is_relative_to(Path(root).resolve())


# -- what only the command line's entry point may touch -------------------------------------

PACKAGE = REPO / "sdcflow"
_ENVIRON_WRITES = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
# the interpreter's exit path and its signal handlers: the command line's main module only;
# ownership.deferred_signals holds SIGINT/SIGTERM back during a publication (its promise)
_EXIT_PATH = {
    ("sys", "exit"): {"sdcflow/cli/main.py"},
    ("os", "_exit"): {"sdcflow/cli/main.py"},
    ("atexit", "_run_exitfuncs"): {"sdcflow/cli/main.py"},
    ("threading", "_shutdown"): {"sdcflow/cli/main.py"},
    ("signal", "signal"): {"sdcflow/cli/main.py", "sdcflow/warehouse/ownership.py"},
}


def _is_environ(node) -> bool:  # type: ignore[no-untyped-def]
    import ast

    if isinstance(node, ast.Attribute):
        return node.attr == "environ" and isinstance(node.value, ast.Name)
    return isinstance(node, ast.Name) and node.id == "environ"


def _package_trees():  # type: ignore[no-untyped-def]
    import ast

    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(REPO).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def test_the_library_never_writes_the_process_environment():
    """``os.environ[...] =``, ``del os.environ[...]``, ``os.environ.update/setdefault/pop``,
    ``os.putenv``/``unsetenv``: nowhere in sdcflow. Prefect's settings go through its settings
    context (``sdcflow.flows.server.prefect_defaults``, the temporary API's URL)."""
    import ast

    found = []
    for name, tree in _package_trees():
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = (
                    node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                )
            for target in targets:
                if isinstance(target, ast.Subscript) and _is_environ(target.value):
                    found.append(f"{name}:{node.lineno}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                func = node.func
                if func.attr in _ENVIRON_WRITES and _is_environ(func.value):
                    found.append(f"{name}:{node.lineno}")
                if func.attr in ("putenv", "unsetenv"):
                    found.append(f"{name}:{node.lineno}")
    assert not found, f"the process environment is written at {found}"


def test_only_the_entry_point_touches_the_exit_path_and_signal_handlers():
    """``sys.exit``, ``os._exit``, ``atexit._run_exitfuncs``, ``threading._shutdown`` (also
    through ``getattr``) and ``signal.signal``: in ``sdcflow/cli/main.py`` only (and
    ``signal.signal`` in the publication's deferred signals)."""
    import ast

    found = []
    for name, tree in _package_trees():
        for node in ast.walk(tree):
            used = None
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                used = (node.value.id, node.attr)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) >= 2
                and isinstance(node.args[0], ast.Name)
                and isinstance(node.args[1], ast.Constant)
            ):
                used = (node.args[0].id, node.args[1].value)
            if used in _EXIT_PATH and name not in _EXIT_PATH[used]:
                found.append(f"{name}:{node.lineno} {'.'.join(used)}")
    assert not found, f"the exit path or a signal handler is touched at {found}"
