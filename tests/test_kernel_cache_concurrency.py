"""Two processes that compile one kernel for different types at the same moment leave a cache
every later process loads correctly (sdcflow.core.jit). Real processes, a real numba cache in
a folder of the test's own (NUMBA_CACHE_DIR); the only patch holds each process at the
moment of numba's save where the interleaving that corrupts an unlocked cache happens."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

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
if role == "a":

    def _save_index(self, overloads):
        touch("a-read")
        wait("b-read", 3)  # under the lock b cannot read: the wait runs out
        save_index(self, overloads)
        touch("a-indexed")

    def _save_data(self, name, data):
        wait("b-wrote", 3)
        save_data(self, name, data)

elif role == "b":

    def _save_index(self, overloads):
        touch("b-read")
        wait("a-indexed", 3)
        save_index(self, overloads)

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


def _child(role: str, tmp_path: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }
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
    assert {"a-read", "a-indexed", "b-wrote"} <= signals  # both saved, in the held order
    # a fresh process loads both keys from the cache: each its own code
    assert _finish(_child("check", tmp_path)) == "6 4.0"
    index = list((tmp_path / "cache").rglob("*.nbi"))
    assert len(index) == 1 and len(list((tmp_path / "cache").rglob("*.nbc"))) == 2
    assert (index[0].parent / LOCK_NAME).stat().st_size == 0  # the lock holds nothing


def test_the_core_kernels_read_and_write_their_cache_under_the_lock():
    from sdcflow.core.microaggregation import mdav

    assert type(mdav._sq_dist_to._cache._cache_file) is LockedCacheFile

    @cached_njit(nogil=True)
    def double(x):
        return 2 * x

    assert double(np.int64(21)) == 42
