"""Progress and step times of a release run: Prefect progress artifacts, log lines, and the
listeners a terminal progress bar subscribes to.

:class:`Progress` keeps one Prefect progress artifact (``create_progress_artifact`` /
``update_progress_artifact``, Prefect 3) per tracked activity: the release flow tracks its
steps (``<release>-progress``), the mask step its phases (``<release>-mask-progress``). Each
:meth:`Progress.step` logs the step's wall-clock and CPU seconds (``time.perf_counter`` and
``time.process_time``: the CPU of the whole process, every thread, Prefect's included) and,
once it ends, moves the artifact to the share of steps done. Labels and figures only: never a
record value.

A caller in the same process (the command line's progress bar) subscribes with
:func:`listening`; listeners get ``(activity, label, done, total)`` when a step starts and
ends. A listener that raises is dropped, never failing the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from prefect import get_run_logger
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.context import FlowRunContext, TaskRunContext

from sdcflow.tasks import artifact_key

__all__ = ["Listener", "Progress", "listening"]

Listener = Callable[[str, str, int, int], None]
_LISTENERS: list[Listener] = []
_GUARD = threading.Lock()


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Call ``listener(activity, label, done, total)`` on every step start and end of the
    runs of this process while the block runs."""
    with _GUARD:
        _LISTENERS.append(listener)
    try:
        yield
    finally:
        with _GUARD:
            if listener in _LISTENERS:
                _LISTENERS.remove(listener)


def _notify(activity: str, label: str, done: int, total: int) -> None:
    with _GUARD:
        listeners = list(_LISTENERS)
    for listener in listeners:
        try:
            listener(activity, label, done, total)
        except Exception:
            with _GUARD:
                if listener in _LISTENERS:
                    _LISTENERS.remove(listener)


def _in_run() -> bool:
    return FlowRunContext.get() is not None or TaskRunContext.get() is not None


class Progress:
    """The progress of one activity of a run (the release's steps, the mask's phases).

    Parameters
    ----------
    release : the release name (the artifact key is derived from it).
    activity : ``release`` or the step's name (``mask``).
    steps : the labels of the steps, in order; ``total`` is their number.
    run_id : named in the artifact's description.

    Outside a Prefect run (a task's ``.fn()`` in a test) no artifact is made; the log lines
    and listeners still work.
    """

    def __init__(self, release: str, activity: str, steps: Sequence[str], run_id: str = "") -> None:
        self.activity = activity
        self.steps = list(steps)
        self.done = 0
        self.key = f"{artifact_key(release)}{'' if activity == 'release' else '-' + activity}"
        self.key += "-progress"
        self.artifact: UUID | None = None
        self.seconds: dict[str, tuple[float, float]] = {}
        if _in_run():
            what = "steps" if activity == "release" else f"{activity} phases"
            run = f", run {run_id}" if run_id else ""
            try:
                self.artifact = create_progress_artifact(
                    0.0, key=self.key, description=f"{what} done of {self.total}{run}"
                )
            except Exception as e:  # progress is a view: losing it never fails a run
                _logger().warning("progress artifact not created (%s)", type(e).__name__)

    @property
    def total(self) -> int:
        return len(self.steps)

    @contextmanager
    def step(self, label: str) -> Iterator[None]:
        """Time the block as step ``label``: log its wall and CPU seconds, then move the
        progress artifact and tell the listeners."""
        _notify(self.activity, label, self.done, self.total)
        wall, cpu = time.perf_counter(), time.process_time()
        ok = False
        try:
            yield
            ok = True
        finally:
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            self.seconds[label] = (wall, cpu)
            _logger().info(
                "step %s %s in %.2f s wall, %.2f s CPU",
                label,
                "done" if ok else "stopped",
                wall,
                cpu,
            )
        self.done = min(self.done + 1, self.total)
        self._update(label)

    def skip(self, label: str) -> None:
        """Count a step that does not run (no edit rules, nothing to publish) as done."""
        self.advance(label)

    def advance(self, label: str) -> None:
        """Count step ``label`` as done without timing it here (a piece that ran elsewhere,
        e.g. on a Dask worker; its task run has its own times)."""
        self.done = min(self.done + 1, self.total)
        self._update(label)

    def _update(self, label: str) -> None:
        if self.artifact is not None:
            try:
                update_progress_artifact(
                    self.artifact,
                    100.0 * self.done / max(self.total, 1),
                    description=f"{label} done ({self.done} of {self.total})",
                )
            except Exception as e:  # e.g. the API went away after the swap: still published
                _logger().warning("progress artifact not updated (%s)", type(e).__name__)
                self.artifact = None
        _notify(self.activity, label, self.done, self.total)


def _logger() -> Any:
    if _in_run():
        return get_run_logger()
    import logging

    return logging.getLogger("sdcflow")
