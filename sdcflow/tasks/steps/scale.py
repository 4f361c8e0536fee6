"""Scale-out: the mask's spatial cells as Prefect tasks on the flow's Dask task runner.

Under ``runner: dask`` the release flow runs with prefect-dask's ``DaskTaskRunner``
(:mod:`sdcflow.flows.runners`). A method that groups within spatial cells (``cell_size``;
:func:`~sdcflow.tasks.microaggregation.blocked.blocked_groups`, the recursive median cuts of
:func:`~sdcflow.tasks.microaggregation.neighbours.spatial_cells`) then has every cell grouped
by one :func:`mask_cell` task run, submitted to the cluster: a worker receives that cell's
standardized keys (an (m, d) float64 array, m <= ``cell_size``) and returns its labels, never
the whole file. The border search and everything after it (group means, checks, publication)
run on the assembled release in the flow's process, so every gate is computed over the whole
release and the labels are those of the local runner, record for record.

Which methods run under Dask is declared by the method (``Method.scale_out``);
:func:`check_runner` refuses the others before any work (reason ``runner``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from prefect import get_run_logger, task
from prefect.context import FlowRunContext

from sdcflow.errors import ParameterError, Reason
from sdcflow.tasks.methods import METHODS, get_method
from sdcflow.tasks.microaggregation.blocked import Partition, cell_map
from sdcflow.tasks.spec import ReleaseSpec
from sdcflow.tasks.steps import STEP


def dask_methods() -> list[str]:
    """The methods that run under ``runner: dask``, by name."""
    return sorted(name for name, m in METHODS.items() if m.scale_out is not None)


def check_runner(spec: ReleaseSpec) -> None:
    """Refuse a ``runner: dask`` release whose method cannot run on it (preflight, exit 2).

    Raises
    ------
    ParameterError
        Reason ``runner``: the method declares no way to spread its work (``scale_out``).
    """
    if spec.runner != "dask":
        return
    if get_method(spec.method.name).scale_out is None:
        raise ParameterError(
            f"method {spec.method.name} does not run under runner: dask (its work is not cut "
            f"into independent cells); use runner: local, or one of {', '.join(dask_methods())}"
            " with cell_size",
            code=Reason.RUNNER,
            field="runner",
        )


def on_dask() -> bool:
    """True inside a flow run whose task runner is prefect-dask's ``DaskTaskRunner``."""
    context = FlowRunContext.get()
    if context is None:
        return False
    from prefect_dask import DaskTaskRunner  # imports distributed: only when asked

    return isinstance(context.task_runner, DaskTaskRunner)


@task(name="mask-cell", **STEP)
def mask_cell(partition: Partition, cell: np.ndarray, k: int) -> np.ndarray:
    """Group one spatial cell: ``partition(cell, k)``; shapes (m, d) -> (m,) labels."""
    return partition(cell, k)


def submitted_cells(partition: Partition, cells: Sequence[np.ndarray], k: int) -> list[np.ndarray]:
    """A :data:`~sdcflow.tasks.microaggregation.blocked.CellMap` that submits one
    :func:`mask_cell` task run per cell to the flow's task runner and collects the labels in
    the order of ``cells``."""
    futures = [mask_cell.submit(partition, cell, k) for cell in cells]
    labels = [future.result() for future in futures]
    get_run_logger().info(
        "grouped %d cells (largest %d records) in %d task runs",
        len(cells),
        max((c.shape[0] for c in cells), default=0),
        len(futures),
    )
    return labels


@contextmanager
def scaled_out() -> Iterator[bool]:
    """Inside this block, cells are grouped on the Dask cluster when the flow runs on one;
    yields whether it does."""
    if not on_dask():
        yield False
        return
    with cell_map(submitted_cells):
        yield True
