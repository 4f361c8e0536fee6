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

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from prefect import get_run_logger, task
from prefect.context import FlowRunContext

from sdcflow.errors import ParameterError, Reason
from sdcflow.tasks.methods import METHODS, get_method
from sdcflow.tasks.parallel import part_map
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


@task(name="mask-part", **STEP)
def run_part(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """One independent piece of the mask: ``fn(*args)`` on a worker (a cell to group, a part
    of the border search, a chunk of a neighbour query); it receives only that piece's data."""
    return fn(*args)


def submitted_parts(
    fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], label: str
) -> list[Any]:
    """A :data:`~sdcflow.tasks.parallel.PartMap` that submits one task run per piece
    (``mask-<label>``: ``mask-cell``, ``mask-border``, ``mask-bound``) to the flow's task
    runner and collects the results in the order of ``calls``."""
    runner = run_part.with_options(name=f"mask-{label}")
    futures = [runner.submit(fn, args) for args in calls]
    results = [future.result() for future in futures]
    get_run_logger().info("ran %d %s pieces as task runs on the cluster", len(futures), label)
    return results


@contextmanager
def scaled_out() -> Iterator[bool]:
    """Inside this block, the mask's independent pieces run on the Dask cluster when the flow
    runs on one; yields whether it does."""
    if not on_dask():
        yield False
        return
    with part_map(submitted_parts):
        yield True
