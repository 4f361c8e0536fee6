"""The command line's progress bar: one line per activity of the run (the release's steps,
the mask's phases), drawn with rich on stderr while a release or check runs.

Only when stderr is a terminal (and ``SDCFLOW_PROGRESS`` is not ``0``): piped or captured
output, which scripts and the tests parse, is never touched. The bar is transient (erased
when the run ends), so the lines printed after it are the same with or without it. It shows
step labels and counts only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["terminal_progress", "wanted"]


def wanted() -> bool:
    """Whether to draw the bar: stderr is a terminal and ``SDCFLOW_PROGRESS`` is not 0."""
    if os.environ.get("SDCFLOW_PROGRESS", "").strip() == "0":
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stream
        return False


@contextmanager
def terminal_progress(
    enabled: bool | None = None, *, command: str = "release", console: object | None = None
) -> Iterator[None]:
    """Draw the bar for the runs of this process while the block runs (see the module).

    ``command`` names the run's own row (``check`` or ``release``): the flow tracks its
    steps as activity ``release`` in both, which on the terminal of ``sdcflow check``
    would read as if something were being released. ``console``: a rich console to draw on
    (a test's recording console); by default stderr's.
    """
    if not (wanted() if enabled is None else enabled):
        yield
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from sdcflow.tasks.progress import listening

    bar = Progress(
        TextColumn("{task.description:<48}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console if console is not None else Console(stderr=True),
        transient=True,
    )
    rows: dict[str, int] = {}

    def show(activity: str, label: str, done: int, total: int) -> None:
        name = command if activity == "release" else activity
        if activity not in rows:
            rows[activity] = bar.add_task(name, total=total)
        bar.update(rows[activity], completed=done, total=total, description=f"{name}: {label}")

    with bar, listening(show), _logs_above(bar.console):
        yield


@contextmanager
def _logs_above(console: object) -> Iterator[None]:
    """Route Prefect's console log lines through the bar's console meanwhile, so that they
    print above the bar instead of through it (its handler prints with its ``console``)."""
    import logging

    from prefect.logging.handlers import PrefectConsoleHandler

    handlers = {
        h
        for name in ("", "prefect", "prefect.flow_runs", "prefect.task_runs")
        for h in logging.getLogger(name).handlers
        if isinstance(h, PrefectConsoleHandler)
    }
    saved = {h: h.console for h in handlers}
    for h in handlers:
        h.console = console  # type: ignore[assignment]
    try:
        yield
    finally:
        for h, previous in saved.items():
            h.console = previous
