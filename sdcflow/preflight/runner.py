"""Whether the release can run where its spec says, checked before a flow run exists.

:func:`check_runner` refuses a ``runner: dask`` release whose method cannot spread its work
(``Method.scale_out``) or whose embedded cluster would have too many workers;
:func:`check_cluster` refuses a ``dask.address`` that does not answer as a Dask scheduler.
Both raise ``ParameterError`` with reason ``runner`` (exit 2), before any work. How the work
is then spread is :mod:`sdcflow.tasks.scale`.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from typing import Any, NoReturn

from sdcflow.errors import ParameterError, Reason
from sdcflow.methods import METHODS, get_method
from sdcflow.spec.schema import ReleaseSpec


def dask_methods() -> list[str]:
    """The methods that run under ``runner: dask``, by name."""
    return sorted(name for name, m in METHODS.items() if m.scale_out is not None)


def _dask_choices() -> str:
    """The methods that run under Dask as a user can ask for them: those that spread cells
    need ``cell_size``; those that run in one pass take no such option."""
    cells = [n for n in dask_methods() if METHODS[n].scale_out != "one pass"]
    one_pass = [n for n in dask_methods() if n not in cells]
    text = f"one of {', '.join(cells)} with cell_size"
    return text + (f", or {', '.join(one_pass)} (one pass)" if one_pass else "")


WORKERS_PER_CPU = 4  # the embedded LocalCluster's limit (check_runner)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system says, else the count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_runner(spec: ReleaseSpec) -> None:
    """Refuse a ``runner: dask`` release whose method cannot run on it (preflight, exit 2).

    Raises
    ------
    ParameterError
        Reason ``runner``: prefect-dask is not installed (the ``dask`` extra), the method
        declares no way to spread its work (``scale_out``), or the embedded cluster would
        have more than ``WORKERS_PER_CPU`` workers per CPU.
    """
    if spec.runner != "dask":
        return
    if importlib.util.find_spec("prefect_dask") is None:
        # an optional dependency: found here, not by the flow run's task runner
        raise ParameterError(
            "runner: dask needs prefect-dask, which is not installed here: "
            "pip install 'sdcflow[dask]', or use runner: local",
            code=Reason.RUNNER,
            field="runner",
        )
    workers, cpus = spec.dask.workers, usable_cpus()
    if workers is not None and workers > WORKERS_PER_CPU * cpus:
        # each worker is a process of its own: far more workers than CPUs spend minutes
        # starting and can lose the scheduler; more than one per CPU only adds start-up
        raise ParameterError(
            f"dask.workers {workers} is more than {WORKERS_PER_CPU} worker processes per CPU "
            f"of this machine ({cpus} CPUs) for the embedded cluster; give at most "
            f"{WORKERS_PER_CPU * cpus} (one per CPU is the fastest), or run on a larger "
            "cluster with dask.address (--dask-address)",
            code=Reason.RUNNER,
            field="dask.workers",
        )
    method = get_method(spec.method.name)
    if callable(method.scale_out) and method.scaling(spec.method) is None:
        raise ParameterError(
            f"method {spec.method.name} runs under runner: dask only within spatial cells; "
            "add method.cell_size (records per cell, at least 2k, e.g. 10000) or use runner: "
            "local",
            code=Reason.RUNNER,
            field="method.cell_size",
        )
    if method.scaling(spec.method) is None:
        raise ParameterError(
            f"method {spec.method.name} does not run under runner: dask (its work is not cut "
            f"into independent cells); use runner: local, or {_dask_choices()}",
            code=Reason.RUNNER,
            field="runner",
        )


def check_cluster(spec: ReleaseSpec, timeout: float = 5.0) -> None:
    """Refuse a release whose ``dask.address`` (``--dask-address``) does not answer as a Dask
    scheduler, before any work: a TCP connection to its host and port, then a Dask client's
    handshake with the scheduler, each within ``timeout`` seconds. A port that accepts
    connections but is not a scheduler (or one that never answers) held the run, and the
    warehouse's writer lock, at "Connecting to an existing Dask cluster" for minutes.

    Raises
    ------
    ParameterError
        Reason ``runner``, field ``dask.address``: nothing accepts connections there, or what
        does is not a Dask scheduler (no answer to the handshake within ``timeout``).
    """
    address = spec.dask.address if spec.runner == "dask" else None
    if not address:
        return
    scheme, _, rest = address.rpartition("://")  # the shape was checked with the spec
    host, _, port = rest.rpartition(":")
    try:
        if scheme != "inproc":  # (a cluster in this process answers the handshake alone)
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                pass
    except (OSError, ValueError) as e:
        reason = "not a host:port address" if isinstance(e, ValueError) else e.strerror
        _refuse_cluster(address, reason or type(e).__name__)
    try:
        kind = _identity(address, timeout).get("type")
    except TimeoutError:
        _refuse_cluster(address, f"no Dask scheduler answered within {timeout:g} s")
    except ValueError:  # Dask's parser: e.g. an inproc:// address of no cluster here
        _refuse_cluster(address, "not the address of a Dask scheduler")
    except OSError as e:
        _refuse_cluster(address, e.strerror or (str(e).splitlines() or ["no answer"])[0])
    if kind != "Scheduler":
        _refuse_cluster(address, f"a Dask {kind or 'peer'} answered there, not the scheduler")


def _identity(address: str, timeout: float) -> dict[str, Any]:
    """What the Dask server at ``address`` says it is (its ``identity``), within ``timeout``
    seconds in all: ``distributed.Client(timeout=...)`` waited for ever on a port that
    accepts and never answers. Run in a thread of its own (its own event loop)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from distributed.comm import connect  # only for an external cluster
    from distributed.security import Security

    async def ask() -> dict[str, Any]:
        comm = await connect(address, timeout=timeout, **Security().get_connection_args("client"))
        try:
            await comm.write({"op": "identity", "reply": True})
            reply = await comm.read()
        finally:
            comm.abort()
        return reply if isinstance(reply, dict) else {}

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, asyncio.wait_for(ask(), timeout)).result()


def _refuse_cluster(address: str, reason: str) -> NoReturn:
    raise ParameterError(
        f"cannot reach the Dask scheduler at {address} ({reason}); start the cluster, or "
        "correct --dask-address / dask.address (tcp://HOST:PORT), or leave it out for an "
        "embedded cluster",
        code=Reason.RUNNER,
        field="dask.address",
    ) from None
