"""Helpers of the adversarial tests: real processes, real signals, real small filesystems."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

PYTHON = sys.executable


def spawn(code: str, *args: object, **kwargs: object) -> subprocess.Popen[str]:
    """Run ``code`` (dedented) in a new Python process with ``args`` as ``sys.argv[1:]``."""
    return subprocess.Popen(
        [PYTHON, "-c", textwrap.dedent(code), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,  # type: ignore[arg-type]
    )


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, poll: float = 0.005) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds pass; return whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll)
    return predicate()


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, **popen: Any
) -> subprocess.Popen[str]:
    """The ``sdcflow`` command line as a real process (``python -m sdcflow.cli``);
    ``popen``: more arguments of ``subprocess.Popen`` (e.g. ``start_new_session``).

    Without ``PREFECT_API_URL`` in ``env`` it starts and owns its Prefect server.
    """
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    environment.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    environment.update(env or {})
    return subprocess.Popen(
        [PYTHON, "-m", "sdcflow.cli", *args],
        cwd=cwd,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def _processes() -> Iterator[tuple[int, list[str]]]:
    """Every process's id and the fields of its ``/proc/<pid>/stat`` after the command name
    (state, parent, group, session, ...)."""
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            yield int(entry.parent.name), entry.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue


def children(pid: int) -> list[int]:
    """Process ids whose parent is ``pid`` (from /proc; empty where there is none)."""
    return [child for child, fields in _processes() if int(fields[1]) == pid]


def in_session(sid: int) -> list[int]:
    """The processes of session ``sid`` still alive (a command line started as a session
    leader: anything it left behind, however reparented, is here)."""
    return [p for p, fields in _processes() if int(fields[3]) == sid and fields[0] != "Z"]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _mount(path: Path, options: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount command: the test needs a real small filesystem")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            "cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): "
            + (done.stderr.strip().splitlines() or ["unknown error"])[0]
        )


@contextlib.contextmanager
def small_disk(path: Path, size: str = "256k") -> Iterator[Path]:
    """A real filesystem of ``size`` bytes at ``path`` (a size-limited tmpfs): writing past
    it fails with ENOSPC. Skips the test where no tmpfs can be mounted."""
    _mount(path, f"size={size},mode=0777")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextlib.contextmanager
def read_only_disk(path: Path) -> Iterator[Path]:
    """A real read-only filesystem at ``path`` (a tmpfs mounted ``ro``); skips elsewhere."""
    _mount(path, "ro,size=64k")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes)."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }
