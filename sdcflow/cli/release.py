"""``sdcflow release SPEC``: mask, check and publish the release a spec describes.

The spec and its source are read (the preflight) while the temporary Prefect API server
starts; the warehouse's writer lock is taken before the flow run starts (a second release
waits ``--wait`` seconds, then exits 3, its server stopped); the flow runs against a
temporary Prefect API server that this process owns and that dies with it
(:mod:`sdcflow.flows.server`) unless ``PREFECT_API_URL`` names one.

What it prints agrees with what is on disk: the run's
:class:`~sdcflow.flows.publications.Publications` holds the release from its swap on, so
that a run an interrupt or an error ends after the swap says ``published`` and exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdcflow.cli import arguments
from sdcflow.cli.output import (
    EXIT_OK,
    EXIT_REFUSED,
    Aftermath,
    console_without_tracebacks,
    fail,
    one_line,
    print_outcome,
    say,
)
from sdcflow.errors import ChecksFailed, InputError, Reason

if TYPE_CHECKING:
    from sdcflow.flows.publications import Publications
    from sdcflow.preflight.plan import ReleasePlan


def add_parser(sub: Any) -> None:
    p = sub.add_parser("release", help="mask, check and publish the release a spec describes")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--wait", type=arguments.seconds, metavar="SECONDS", help=arguments.WAIT_HELP)
    p.add_argument(
        "--force",
        action="store_true",
        help="publish even when the live release came from the same input and spec, and "
        "replace a live release whose files were edited since it was published",
    )
    arguments.runner_options(p)
    p.set_defaults(func=command, aftermath=Aftermath())


def command(args: argparse.Namespace) -> int:
    return run_release(
        args.spec, publish=True, wait=args.wait, runner=runner_of(args), force=args.force
    )


def runner_of(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--runner``, ``--dask-workers`` and ``--dask-address`` options."""
    return {"runner": args.runner, "workers": args.dask_workers, "address": args.dask_address}


def run_release(
    spec_path: str,
    *,
    publish: bool,
    wait: float | None,
    runner: dict[str, Any] | None = None,
    force: bool = False,
    data_docs: bool = True,
) -> int:
    """Run the release (``publish``) or the check of ``spec_path``; return the exit code.
    ``data_docs``: Great Expectations validates the edit rules and writes its Data Docs
    (else DuckDB's SQL counts them alone).

    A refusal is exit 1 with every figure and one line; an error or a signal after the
    release went live is exit 0, saying so; any other error propagates to the caller."""
    from sdcflow.flows.publications import Publications

    publications = Publications()
    try:
        outcome = _run(spec_path, publish, wait, runner, force, publications, data_docs)
        print_outcome(outcome, publish)
        from sdcflow.warehouse.ownership import take_pending_signals

        pending = take_pending_signals()
        if pending:
            say(
                f"sdcflow: {_signal_names(pending)} received during publication; the "
                "publication was completed first",
                err=True,
            )
        return EXIT_OK
    except ChecksFailed as e:
        if getattr(e.outcome, "checks", None):  # a refusal shows every figure too
            print_outcome(e.outcome, publish, checks_only=True)
        report = getattr(e.outcome, "report", None)
        return fail(f"refused: {e}" + (f"\nreport {report}" if report else ""), EXIT_REFUSED)
    except BaseException as e:
        if isinstance(e, SystemExit) or not publications:
            raise
        return _after_publication(publications, e)


def _run(
    spec_path: str,
    publish: bool,
    wait: float | None,
    runner: dict[str, Any] | None,
    force: bool,
    publications: Publications,
    data_docs: bool = True,
) -> Any:
    from sdcflow.flows.server import owned_prefect_api

    planned: list[ReleasePlan] = []

    def preflight() -> None:
        # Before a flow run exists, so that bad input gives one clean line (and no failed
        # run in the Prefect UI); the flow reuses the plan. It and the flow's imports run
        # while the temporary API server boots in its own process (an error here stops it).
        from sdcflow.flows.runners import with_cli_options
        from sdcflow.preflight.plan import plan_release
        from sdcflow.spec.load import load_spec

        try:
            spec = with_cli_options(load_spec(spec_path), **(runner or {}))
            planned.append(plan_release(spec, force=force))
        except OSError as e:
            if e.errno not in _PATH_ERRNOS or e.filename is None:
                raise
            # a path the spec names that cannot be looked at (a folder not searchable,
            # /proc/1/cwd): bad input, found before anything is written
            raise InputError(
                f"cannot reach {e.filename} ({e.strerror}), on a path the spec names; check "
                "that path and the permissions of its folders",
                code=Reason.SPEC_FIELD,
            ) from None
        _import_flow(planned[0], data_docs)

    with owned_prefect_api(meanwhile=preflight):
        from sdcflow.flows.progress_bar import terminal_progress
        from sdcflow.flows.release import release
        from sdcflow.flows.runners import with_runner
        from sdcflow.warehouse.warehouse import Warehouse

        plan = planned[0]
        # One writer per warehouse: wait for it before any flow run starts.
        command = "release" if publish else "check"
        with Warehouse(plan.spec.warehouse_path).lock(wait), terminal_progress(command=command):
            console_without_tracebacks()
            return with_runner(release, plan.spec)(
                str(Path(spec_path).resolve()),
                publish=publish,
                plan=plan,
                wait=wait,
                force=force,
                publications=publications,
                data_docs=data_docs,
            )


_PATH_ERRNOS = {errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG}


def _import_flow(plan: ReleasePlan, data_docs: bool) -> None:
    """Import the release flow (Prefect, the steps, the methods' kernels) and, when the spec
    has edit rules that Great Expectations validates, GE: slow imports that overlap the
    temporary API server's start, after the preflight has accepted the input."""
    import sdcflow.flows.release
    from sdcflow.methods import get_method

    if plan.rules and data_docs:
        import sdcflow.expectations.suite  # noqa: F401
    method = get_method(plan.spec.method.name)
    if method.scaling(plan.spec.method) is not None:
        # numba loads the grouping's compiled kernels (and its own typing context) on their
        # first call, half a second; here that load overlaps the server's start instead (the
        # methods that group in cells, as a Dask worker warms up: tasks.scale.warm_up)
        from sdcflow.core.microaggregation.blocked import warm_mask

        with contextlib.suppress(Exception):  # a failure costs the mask that time, no more
            warm_mask()


def _signal_names(signals: list[int]) -> str:
    return ", ".join(signal.Signals(s).name for s in dict.fromkeys(signals))


def _after_publication(publications: Publications, error: BaseException) -> int:
    """The run published its release before ``error`` ended it (an interrupt after the
    swap, a warehouse busy when recording...): the release is live, say so, exit 0."""
    run_id, done = publications.first()  # type: ignore[misc]
    if isinstance(done, Path):  # the swap happened, the flow did not get to its outcome
        say(f"published {done} (run {run_id})")
    else:
        print_outcome(done, publish=True)
    interrupt = isinstance(error, KeyboardInterrupt) or type(error).__name__ == "TerminationSignal"
    what = "an interrupt" if interrupt else f"{type(error).__name__}: {one_line(str(error))}"
    say(
        f"sdcflow: {what} arrived after the release was published; it is live and recorded",
        err=True,
    )
    return EXIT_OK
