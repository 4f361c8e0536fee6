"""The task runner a release flow runs with: ``local`` (Prefect's default) or ``dask``.

``runner: dask`` in the spec, or ``--runner dask`` on the command line, runs the release flow
with prefect-dask's ``DaskTaskRunner``: an embedded ``distributed.LocalCluster`` of
``dask.workers`` (``--dask-workers``) single-threaded worker processes, or the existing
cluster whose scheduler is at ``dask.address`` (``--dask-address``). What runs there is
described in :mod:`sdcflow.tasks.scale`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from sdcflow.errors import InputError, Reason
from sdcflow.spec.schema import DaskSettings, ReleaseSpec

if TYPE_CHECKING:
    from prefect import Flow
    from prefect.task_runners import TaskRunner


def with_cli_options(
    spec: ReleaseSpec,
    runner: str | None = None,
    workers: int | None = None,
    address: str | None = None,
) -> ReleaseSpec:
    """The spec with the command line's ``--runner``, ``--dask-workers`` and
    ``--dask-address`` in place of its own (``--dask-*`` imply ``--runner dask``)."""
    if runner is None and workers is None and address is None:
        return spec
    if runner == "local" and (workers is not None or address is not None):
        # the Dask options would be dropped without a word and the run would be local
        given = "--dask-workers" if workers is not None else "--dask-address"
        raise InputError(
            f"{given} sets up the Dask runner and --runner local was asked for; drop "
            f"{given}, or use --runner dask",
            code=Reason.RUNNER,
            field="runner",
        )
    if workers is not None or address is not None:
        try:
            # the spec's worker limit stays for the embedded cluster --dask-workers sizes
            limit = spec.dask.memory_limit if address is None else None
            dask = DaskSettings(workers=workers, address=address, memory_limit=limit)
        except ValidationError as e:
            first = e.errors()[0]
            option = "--dask-address" if "address" in map(str, first["loc"]) else "--dask-workers"
            raise InputError(
                f"{option}: {first['msg'].removeprefix('Value error, ')}",
                code=Reason.RUNNER,
                field="dask.address" if option == "--dask-address" else "dask.workers",
            ) from None
        runner = runner or "dask"
    else:
        dask = spec.dask
    return spec.model_copy(update={"runner": runner, "dask": dask})


def cluster_kwargs(settings: DaskSettings) -> dict[str, Any]:
    """Arguments of the embedded ``LocalCluster``: one single-threaded process per worker
    (the cells' grouping is numba code holding one core), no dashboard."""
    workers = settings.workers or os.cpu_count() or 1
    limit = {"memory_limit": settings.memory_limit} if settings.memory_limit else {}
    return {
        "n_workers": workers,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": None,
        **limit,
    }


def task_runner(spec: ReleaseSpec) -> TaskRunner | None:
    """prefect-dask's ``DaskTaskRunner`` for ``runner: dask``; None for the local runner."""
    if spec.runner != "dask":
        return None
    from prefect_dask import DaskTaskRunner

    if spec.dask.address is not None:
        return DaskTaskRunner(address=spec.dask.address)
    return DaskTaskRunner(cluster_kwargs=cluster_kwargs(spec.dask))


def with_runner(flow: Flow, spec: ReleaseSpec) -> Flow:
    """``flow`` with the task runner the spec asks for."""
    runner = task_runner(spec)
    return flow if runner is None else flow.with_options(task_runner=runner)
