"""numba's on-disk cache of the core's kernels (sdcflow.core.jit) holds only entries that every
later process loads correctly: when two processes compile one kernel for different types at
the same moment, and when a caller is compiled against kernels loaded from the cache. Real
processes, a real numba cache in a folder of the test's own (NUMBA_CACHE_DIR)."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import pytest

import sdcflow.core
from sdcflow.core.jit import LOCK_NAME, LockedCacheFile, cached_njit

KERNEL = """
from sdcflow.core.jit import cached_njit


@cached_njit()
def total(x):
    s = x[0] - x[0]
    for v in x:
        s += v
    return s
"""

# a: holds its save between reading the index and writing it until b has read it too, then
#    writes its data last; b: writes its index after a's. Unlocked, both take the first data
#    file's name, the index is b's and the data a's: b's key loads code compiled for a's types.
CHILD = """
import pathlib, sys, time

import numpy as np
from numba.core import caching

role, signals = sys.argv[1], pathlib.Path(sys.argv[2])


def wait(name, seconds):
    end = time.monotonic() + seconds
    while not (signals / name).exists() and time.monotonic() < end:
        time.sleep(0.01)


def touch(name):
    (signals / name).touch()


save_index = caching.IndexDataCacheFile._save_index
save_data = caching.IndexDataCacheFile._save_data
load_overload = caching.Cache.load_overload
if role == "a":

    def _save_index(self, overloads):
        touch("a-read")
        wait("b-loading", 120)  # b looks its key up in the cache: under the lock, it waits
        wait("b-read", 3)  # under the lock b cannot read: the wait runs out
        save_index(self, overloads)
        touch("a-indexed")

    def _save_data(self, name, data):
        wait("b-wrote", 3)
        save_data(self, name, data)
        touch("a-wrote")

elif role == "b":

    def _load_overload(self, sig, target_context):
        touch("b-loading")
        return load_overload(self, sig, target_context)

    def _save_index(self, overloads):
        touch("b-read-after-a" if (signals / "a-wrote").exists() else "b-read")
        wait("a-indexed", 3)
        save_index(self, overloads)

    caching.Cache.load_overload = _load_overload

    def _save_data(self, name, data):
        save_data(self, name, data)
        touch("b-wrote")

if role in ("a", "b"):
    caching.IndexDataCacheFile._save_index = _save_index
    caching.IndexDataCacheFile._save_data = _save_data

import kernel

if role == "a":
    print(kernel.total(np.array([1.5, 2.5])))
elif role == "b":
    wait("a-read", 120)  # a has read the index and holds its save
    print(kernel.total(np.array([1, 2, 3], dtype=np.int64)))
else:
    print(kernel.total(np.array([1, 2, 3], dtype=np.int64)), kernel.total(np.array([1.5, 2.5])))
"""


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }


def _child(role: str, tmp_path: Path) -> subprocess.Popen[str]:
    env = _env(tmp_path)
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CHILD), role, str(tmp_path / "signals")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )


def _finish(child: subprocess.Popen[str]) -> str:
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err[-2000:]
    return out.strip()


def test_two_processes_compiling_one_kernel_for_other_types_leave_a_cache_that_loads_right(
    tmp_path,
):
    (tmp_path / "kernel.py").write_text(KERNEL)
    (tmp_path / "signals").mkdir()
    a = _child("a", tmp_path)
    b = _child("b", tmp_path)
    assert _finish(a) == "4.0"
    assert _finish(b) == "6"
    signals = {p.name for p in (tmp_path / "signals").iterdir()}
    # b looked its key up while a held its save; it read the index only after that save ended
    assert {"a-read", "b-loading", "a-wrote", "b-read-after-a", "b-wrote"} <= signals
    # a fresh process loads both keys from the cache: each its own code
    assert _finish(_child("check", tmp_path)) == "6 4.0"
    index = list((tmp_path / "cache").rglob("*.nbi"))
    assert len(index) == 1 and len(list((tmp_path / "cache").rglob("*.nbc"))) == 2
    assert (index[0].parent / LOCK_NAME).stat().st_size == 0  # the lock holds nothing


def test_a_parallel_kernel_is_refused_the_cache():
    with pytest.raises(ValueError, match="uncached_njit"):
        cached_njit(parallel=True)


# --- a caller compiled against kernels loaded from the cache -----------------------------------

CHAIN = """
import numba
import numpy as np

from sdcflow.core.jit import cached_njit, uncached_njit


@uncached_njit(parallel=True)
def doubled(x):
    out = np.empty(x.shape[0])
    for i in numba.prange(x.shape[0]):
        out[i] = 2.0 * x[i]
    return out


@uncached_njit()
def doubled_sum(x):
    return doubled(x).sum()


@cached_njit()
def square(v):
    return v * v


@cached_njit()
def entry(x):
    return doubled_sum(x) + square(x[0])
"""


def _run_entry(tmp_path: Path) -> str:
    code = "import numpy as np, chain; print(chain.entry(np.arange(4.0) + 1.0))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]  # before: -11 in the third process
    return done.stdout.strip()


def test_a_caller_compiled_against_cached_kernels_leaves_an_entry_the_next_process_loads(
    tmp_path,
):
    """The entry point's cache entry is removed and its cached callee's kept (a process
    stopped between the two saves, or an upgrade that changed only the entry's module): the
    next process compiles the entry against the cached callee and the parfor compiled in
    that process; the one after loads the entry. With the parfor's kernels cached, that
    third process crashed (numba links a cached parfor into the caller's entry by a name
    no later process defines)."""
    (tmp_path / "chain.py").write_text(CHAIN)
    assert _run_entry(tmp_path) == "21.0"  # 2 * (1 + 2 + 3 + 4) + 1
    entries = list((tmp_path / "cache").rglob("chain.entry-*"))
    assert entries and list((tmp_path / "cache").rglob("chain.square-*"))
    assert not list((tmp_path / "cache").rglob("chain.doubled*"))  # never cached
    for path in entries:
        path.unlink()
    assert _run_entry(tmp_path) == "21.0"  # compiles entry against the cached square
    assert _run_entry(tmp_path) == "21.0"  # loads that entry


def _kernels() -> dict[str, numba.core.registry.CPUDispatcher]:
    found = {}
    for info in pkgutil.walk_packages(sdcflow.core.__path__, "sdcflow.core."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, numba.core.registry.CPUDispatcher) and (
                value.py_func.__module__ == info.name
            ):
                found[f"{info.name}.{name}"] = value
    return found


def test_no_cached_kernel_that_runs_a_parfor_is_called_by_another_kernel():
    """The rule of sdcflow.core.jit, over every kernel of the core: a kernel that runs a
    parfor, itself or through kernels it calls, is uncached unless no kernel calls it. A call
    is a kernel's module-level name in another's code, the one form the core's kernels use;
    every cached kernel keeps its cache under the lock."""
    kernels = _kernels()
    by_function = {id(d): name for name, d in kernels.items()}

    def callees(name: str) -> set[str]:
        code, scope = kernels[name].py_func.__code__, kernels[name].py_func.__globals__
        return {by_function[id(scope[n])] for n in code.co_names if id(scope.get(n)) in by_function}

    calls = {name: callees(name) for name in kernels}
    # the kernels that run a parfor, themselves or through the kernels they call
    runs_parfor = {name for name, d in kernels.items() if d.targetoptions.get("parallel")}
    while grown := {n for n in kernels if calls[n] & runs_parfor} - runs_parfor:
        runs_parfor |= grown

    def cached(name: str) -> bool:
        return type(kernels[name]._cache).__name__ != "NullCache"

    called = {c for name in kernels for c in calls[name]}
    assert runs_parfor  # MDAV's threaded sweep: the rule is live
    wrong = sorted(name for name in runs_parfor if cached(name) and name in called)
    assert not wrong, f"cached kernels that run a parfor and are called by another: {wrong}"
    assert all(
        isinstance(k._cache._cache_file, LockedCacheFile) for n, k in kernels.items() if cached(n)
    )


@pytest.mark.slow
def test_mdav_compiled_against_its_cached_sweeps_loads_in_the_next_process(tmp_path):
    """MDAV's kernel, its cache entry removed and its sweeps' kept: the next process
    compiles it against the cached sweeps, the one after loads it and groups as the first
    (before: a segfault in every process after the second). About 80 CPU s of compiling."""
    code = (
        "import numpy as np; from sdcflow.core.microaggregation.mdav import mdav_groups; "
        "print(mdav_groups(np.random.default_rng(0).standard_normal((64, 3)), 3).tolist())"
    )

    def run() -> str:
        done = subprocess.run(
            [sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, text=True,
            timeout=900, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    first = run()
    entries = list((tmp_path / "cache").rglob("mdav._mdav_kernel-*"))
    assert entries
    for path in entries:
        path.unlink()
    assert run() == first
    assert run() == first
