"""The ``sdcflow`` command line.

Each command imports what it needs when it runs (Prefect, numba and Great Expectations take
seconds to import), so that ``sdcflow --help`` and a bad spec answer at once.

Exit codes: 0 published / all checks passed; 1 a check or edit rule failed (nothing
published); 2 bad input (one line naming the field, file or column and the fix); 3 the run
could not complete (another release holds the warehouse, Prefect's API did not start, an
unexpected error); nothing was published; 130 interrupted before publication, nothing was
published. What it prints agrees with what is on disk: a run interrupted once its release is
live says ``published`` and exits 0.

A release or check reads its spec and source while its temporary Prefect API server starts,
then takes the warehouse's writer lock before its flow run starts (a second release waits
``--wait`` seconds, then exits 3, its server stopped), and runs against a temporary Prefect API
server that this process owns and that dies with it (:mod:`sdcflow.flows.server`) unless
``PREFECT_API_URL`` names one.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import logging
import os
import signal
import sys
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from sdcflow.errors import ChecksFailed, InputError, Reason, WarehouseBusy, WarehouseDamaged
from sdcflow.flows import arguments, prune

if TYPE_CHECKING:
    from sdcflow.preflight.plan import ReleasePlan

EXIT_OK, EXIT_REFUSED, EXIT_INPUT, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def _fail(message: str, code: int) -> int:
    _say(f"sdcflow: {message}", err=True)
    return code


def _say(text: str, *, err: bool = False) -> None:
    """Print ``text`` on stdout (stderr with ``err``). A stream that is closed or fails (a
    full disk, a reader that went away) loses the text, never the exit code, which says what
    happened to the release; stdout's loss is said on stderr, once."""
    # a closed descriptor (`>&-`, `2>&-`) is None: stderr's lines go to stdout, as print's
    stream = sys.stderr if err and sys.stderr is not None else sys.stdout
    if stream is None:
        return
    try:
        print(text, file=stream)
    except (BrokenPipeError, ValueError):
        pass
    except OSError as e:
        if not err:
            _say_output_lost(e)


def _one_line(text: str, limit: int = 300) -> str:
    first = text.splitlines()[0] if text else ""
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _bounded(text: str, lines: int = 4, width: int = 1000) -> str:
    """An error message as it is (a rule error quotes the rule and puts a caret under the
    token), but never longer than ``lines`` lines of ``width`` characters."""
    kept = [_one_line(line, width) for line in text.splitlines()[:lines]]
    return "\n".join(kept)


def _input_error(e: InputError) -> str:
    """``error [<code> <field>]: <message>`` (``error [<code>]: ...`` when no field is at
    fault): the code and the field a script may match, then the message for the person."""
    where = f"{e.code} {_one_line(e.field, 120)}" if e.field else str(e.code)
    return f"error [{where}]: {_bounded(str(e))}"


def _print_outcome(outcome, publish: bool, *, checks_only: bool = False) -> None:  # type: ignore[no-untyped-def]
    for o in outcome.checks:
        if not o.checked:
            shown = f"{'not checked':>12} {o.rule} {o.threshold:<10.6g} {o.unit:<9} {o.verdict}"
            _say(f"  {o.key:<34} {shown}  ({o.note})")
            continue
        note = f"  ({o.note})" if o.note else ""
        figure, threshold = o.shown
        _say(f"  {o.key:<34} {figure:>12} {o.rule} {threshold:<10} {o.unit:<9} {o.verdict}{note}")
    if checks_only:  # a refusal: its one line goes to stderr
        return
    if getattr(outcome, "status", None) == "unchanged":
        _say(
            f"already published as run {outcome.previous_run} from the same input and spec: "
            f"{outcome.published}; nothing new published (--force to publish again; run "
            f"{outcome.run_id})"
        )
    elif publish:
        _say(f"published {outcome.published} (run {outcome.run_id})")
    else:
        _say(f"all checks passed; nothing published (run {outcome.run_id})")
    if getattr(outcome, "report", None):
        _say(f"report {outcome.report}")


class _WithoutTraceback(logging.Formatter):
    """Formats a record as ``inner`` does, without its traceback: the console gets Prefect's
    one-line messages, the run's failure one ``sdcflow:`` line (set SDCFLOW_DEBUG=1 for the
    tracebacks; Prefect's API logs keep them)."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        saved = record.exc_info, record.exc_text, record.stack_info
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        try:
            return self.inner.format(record)
        finally:
            record.exc_info, record.exc_text, record.stack_info = saved


def _console_without_tracebacks() -> None:
    if os.environ.get("SDCFLOW_DEBUG"):
        return
    from prefect.logging.handlers import PrefectConsoleHandler

    loggers = [logging.getLogger(), *map(logging.getLogger, ("prefect", "uvicorn", "fastapi"))]
    for logger in loggers:
        for handler in logger.handlers:
            if isinstance(handler, PrefectConsoleHandler) and not isinstance(
                handler.formatter, _WithoutTraceback
            ):
                handler.setFormatter(_WithoutTraceback(handler.formatter))


def _published_here() -> dict:  # type: ignore[type-arg]
    """Runs this process published: run id -> the flow's outcome when it got that far, else
    the release folder the swap put in place (the publisher records every swap)."""
    swapped = sys.modules.get("sdcflow.warehouse.publish")
    module = sys.modules.get("sdcflow.flows.release")
    return {
        **dict(getattr(swapped, "SWAPPED_IN", {})),
        **dict(getattr(module, "PUBLISHED", {}) if module else {}),
    }


def _signal_names(signals: list[int]) -> str:
    return ", ".join(signal.Signals(s).name for s in dict.fromkeys(signals))


def _run_release(
    spec_path: str,
    *,
    publish: bool,
    wait: float | None,
    runner: dict | None = None,
    force: bool = False,
) -> int:
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
        _import_flow(planned[0])

    try:
        with owned_prefect_api(meanwhile=preflight):
            from sdcflow.flows.progress_bar import terminal_progress
            from sdcflow.flows.release import release
            from sdcflow.flows.runners import with_runner
            from sdcflow.warehouse.warehouse import Warehouse

            plan = planned[0]
            # One writer per warehouse: wait for it before any flow run starts.
            command = "release" if publish else "check"
            with (
                Warehouse(plan.spec.warehouse_path).lock(wait),
                terminal_progress(command=command),
            ):
                _console_without_tracebacks()
                outcome = with_runner(release, plan.spec)(
                    str(Path(spec_path).resolve()),
                    publish=publish,
                    plan=plan,
                    wait=wait,
                    force=force,
                )
    except ChecksFailed as e:
        if getattr(e.outcome, "checks", None):  # a refusal shows every figure too
            _print_outcome(e.outcome, publish, checks_only=True)
        report = getattr(e.outcome, "report", None)
        return _fail(f"refused: {e}" + (f"\nreport {report}" if report else ""), EXIT_REFUSED)
    from sdcflow.warehouse.ownership import take_pending_signals

    _print_outcome(outcome, publish)
    pending = take_pending_signals()
    if pending:
        _say(
            f"sdcflow: {_signal_names(pending)} received during publication; the publication "
            "was completed first",
            err=True,
        )
    return EXIT_OK


_PATH_ERRNOS = {errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG}


def _import_flow(plan: ReleasePlan) -> None:
    """Import the release flow (Prefect, the steps, the methods' kernels) and, when the spec
    has edit rules, Great Expectations: slow imports that overlap the temporary API server's
    start, after the preflight has accepted the input."""
    import sdcflow.flows.release

    if plan.rules:
        import sdcflow.expectations.suite  # noqa: F401


def _checks_cell(checks_json: str) -> str:
    """``3/3 pass`` or ``FAIL k_anonymity, max_information_loss`` from the JSON summary."""
    import json

    checks = json.loads(checks_json or "{}")
    if not checks:
        return "—"
    # a check the spec accepts unchecked ("... (accepted)") did not fail the run
    failed = [
        k
        for k, v in checks.items()
        if v.get("verdict") != "pass" and "(accepted)" not in str(v.get("verdict"))
    ]
    if failed:
        return "FAIL " + ", ".join(failed)
    return f"{len(checks)}/{len(checks)} pass"


def _runs(
    target: str | None,
    warehouse: str | None,
    limit: int,
    release: str | None = None,
    status: str | None = None,
    full_ids: bool = False,
) -> int:
    from sdcflow.spec.load import load_spec
    from sdcflow.warehouse.warehouse import Warehouse

    if warehouse:
        path = Path(warehouse)
    elif target:
        path = load_spec(target).warehouse_path
    else:
        raise InputError("give a spec file or --warehouse PATH", code=Reason.SPEC_MISSING)
    from sdcflow.warehouse.warehouse import warehouse_exists

    if not warehouse_exists(path):
        if warehouse:  # named by hand: a mistyped path must not read as "no runs"
            raise InputError(
                f"no warehouse at {path}; check the path (a spec's warehouse before its first "
                "run has no runs: give the spec instead)",
                code=Reason.WAREHOUSE,
                field="warehouse",
            )
        print(f"no runs recorded in {path}")
        return EXIT_OK
    from sdcflow.warehouse.warehouse import check_warehouse_file

    check_warehouse_file(path)
    runs = Warehouse(path).runs(limit, release=release, status=status)
    if runs.empty:
        which = " ".join(f"{k} {v}" for k, v in (("release", release), ("status", status)) if v)
        print(f"no runs{' of ' + which if which else ''} recorded in {path}")
        return EXIT_OK
    import pandas as pd
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"runs in {path} (times UTC)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        collapse_padding=True,
    )
    for name in ("run", "release", "kind", "method", "status", "started", "took", "rows",
                 "checks"):  # fmt: skip
        fixed = name in ("run", "kind", "status", "started", "took", "rows")
        width = len("3/3 pass") if name == "checks" else None
        table.add_column(name, overflow="fold", no_wrap=fixed, min_width=width)
    colours = {"published": "green", "refused": "red", "failed": "red", "checked": "green"}
    for r in runs.itertuples(index=False):
        started = _utc(r.started_at)
        ended = _utc(r.ended_at)
        took = f"{(ended - started).total_seconds():.0f}s" if started and ended else "—"
        table.add_row(
            r.run_id if full_ids else r.run_id[:8],
            r.release,
            f"[magenta]{r.kind}[/]" if r.kind == "compare" else r.kind,
            r.method or "—",
            f"[{colours.get(r.status, 'yellow')}]{r.status}[/]" + _pruned_mark(r.copies_pruned_at),
            started.strftime("%m-%d %H:%M") if started else "—",
            took,
            "—" if pd.isna(r.n_rows) else f"{int(r.n_rows)}",
            _checks_cell(r.checks),
        )
    notes = []
    if not full_ids:
        notes.append("run ids cut to 8 characters; --full-ids prints them whole")
    if runs["copies_pruned_at"].notna().any():
        notes.append("pruned: the run's raw, edited and masked copies were dropped by retention")
    if notes:
        table.caption = "\n".join(notes)
        table.caption_justify = "left"
    # a pipe or a file is not 80 columns wide: give the table room instead of folding names
    width = None if sys.stdout is not None and sys.stdout.isatty() else 200
    Console(soft_wrap=False, width=width).print(table)
    return EXIT_OK


def _pruned_mark(pruned_at: object) -> str:
    """A second line under the status of a run whose copies retention dropped."""
    return "" if _utc(pruned_at) is None else "\n[dim]pruned[/]"


def _utc(value: object):  # type: ignore[no-untyped-def]
    """A pandas timestamp in UTC, or None for a missing one."""
    import pandas as pd

    if value is None or pd.isna(value):
        return None
    stamp = pd.Timestamp(value)
    return stamp.tz_convert("UTC") if stamp.tzinfo else stamp.tz_localize("UTC")


def _serve(spec_path: str, cron: str | None, name: str | None) -> int:
    from sdcflow.flows.release import release
    from sdcflow.flows.runners import with_runner
    from sdcflow.flows.server import serve_flow
    from sdcflow.spec.load import load_spec

    spec = load_spec(spec_path)
    if cron is not None:
        _check_cron(cron)
    serve_flow(
        with_runner(release, spec),
        name=name or spec.release,
        cron=cron,
        parameters={"spec_path": str(Path(spec_path).resolve()), "publish": True},
    )
    print("stopped; the deployment's schedule is paused")
    return EXIT_OK


def _check_cron(cron: str) -> None:
    """Refuse a schedule Prefect cannot read before anything is registered (exit 2, not an
    unexpected error from inside the runner)."""
    from prefect.client.schemas.schedules import CronSchedule
    from pydantic import ValidationError

    try:
        CronSchedule(cron=cron)
    except ValidationError:
        raise InputError(
            f"--cron {cron!r} is not a cron schedule; give five fields, minute hour day month "
            'weekday, e.g. "0 3 * * *"',
            code=Reason.PARAMETER,
            field="cron",
        ) from None


def _compare(
    spec_path: str,
    methods: list[str],
    ks: list[int],
    out: str | None,
    pairs: list[str],
    intruder: str,
) -> int:
    from sdcflow.flows.compare import compare

    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(
                f"--param takes KEY=VALUE (e.g. m2=1.5), got {pair!r}", code=Reason.PARAMETER
            )
        params[key.strip()] = yaml.safe_load(value)
    from sdcflow.flows.server import owned_prefect_api

    _console_without_tracebacks()
    try:
        with owned_prefect_api():
            table = compare(spec_path, methods, ks, params=params, intruder=intruder, out_dir=out)
    except ChecksFailed as e:
        return _fail(f"refused: {e}", EXIT_REFUSED)
    print(table.drop(columns=["run_id"]).to_string(index=False, float_format="{:.4g}".format))
    print(f"risk-utility map {table.attrs['png']}\nreport {table.attrs['report']}")
    return EXIT_OK


def _remap(spec_path: str, rules_file: str, run_id: str | None, integer: bool) -> int:
    """Print the rules of ``rules_file`` with every interval on a fuzzy-mapped column mapped
    back to the original domain, from the mapping in the warehouse (opened read-only)."""
    from sdcflow.core.fuzzy_mapping import FuzzyMapping
    from sdcflow.core.fuzzy_mapping.remap import parse_intervals, remap_rule_text
    from sdcflow.spec.load import load_spec
    from sdcflow.warehouse.secrets import load_fuzzy_maps

    spec = load_spec(spec_path)
    if not spec.fuzzy_map:
        raise InputError(
            f"{spec_path}: the spec maps no column (no fuzzy_map:); there is nothing to remap",
            code=Reason.SPEC_CONTRADICTION,
        )
    path = Path(rules_file)
    if not path.is_file():
        raise InputError(f"rules file {path} does not exist", code=Reason.REMAP_INPUT)
    lines = path.read_text(encoding="utf-8").splitlines()
    if not any(parse_intervals(line, set(spec.fuzzy_map)) for line in lines):
        raise InputError(
            f"{path}: no interval on a mapped column ({', '.join(sorted(spec.fuzzy_map))}) "
            "was found; write items as Weka prints them, age='(1.77-2.51]', or as "
            "age in (1.77, 2.51]",
            code=Reason.REMAP_INPUT,
        )
    run, stored = load_fuzzy_maps(spec.warehouse_path, spec.release, run_id)
    mappings = {}
    for column, data in stored.items():
        mapping = FuzzyMapping.from_dict(data)
        mappings[column] = (mapping.sets, mapping.combiner)
    print(f"# remapped with the fuzzy mapping of run {run} (the data owner's secret)")
    for line in lines:
        print(remap_rule_text(line, mappings, integer=integer))
    return EXIT_OK


def _runner_options(p: argparse.ArgumentParser) -> None:
    """--runner, --dask-workers, --dask-address (README, Scale-out); they override the
    spec's ``runner:`` and ``dask:``."""
    p.add_argument(
        "--runner",
        choices=["local", "dask"],
        help="local: one process; dask: the mask's cells on a Dask cluster (default: the spec's)",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--dask-workers",
        type=arguments.workers,
        metavar="N",
        help="worker processes of the embedded Dask LocalCluster (default: the CPU count)",
    )
    group.add_argument(
        "--dask-address", metavar="ADDRESS", help="scheduler of an existing Dask cluster"
    )


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose refusal is one line, as every other bad input's (exit 2), with
    where to read the usage instead of the usage itself."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (`{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    from sdcflow import __version__

    parser = _Parser(
        prog="sdcflow", description="Statistical disclosure control releases with Prefect."
    )
    parser.add_argument("--version", action="version", version=f"sdcflow {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    wait_help = (
        "seconds to wait while another release holds the warehouse, then exit 3 (default: "
        "$SDCFLOW_LOCK_WAIT or 60)"
    )
    p = sub.add_parser("release", help="mask, check and publish the release a spec describes")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--wait", type=arguments.seconds, metavar="SECONDS", help=wait_help)
    p.add_argument(
        "--force",
        action="store_true",
        help="publish even when the live release came from the same input and spec, and "
        "replace a live release whose files were edited since it was published",
    )
    _runner_options(p)
    p = sub.add_parser("check", help="everything but publishing, with the same exit codes")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--wait", type=arguments.seconds, metavar="SECONDS", help=wait_help)
    _runner_options(p)
    p = sub.add_parser("runs", help="list the runs recorded in the warehouse (audit.runs)")
    p.add_argument("spec", nargs="?", help="release spec whose warehouse to read")
    p.add_argument("--warehouse", help="path of a warehouse DuckDB file")
    p.add_argument("--limit", type=arguments.runs, default=50, help="most recent runs shown (>= 1)")
    p.add_argument("--release", help="only the runs of this release")
    p.add_argument(
        "--status",
        choices=[
            "running",
            "published",
            "checked",
            "unchanged",
            "refused",
            "failed",
            "interrupted",
        ],
        help="only the runs that ended so",
    )
    p.add_argument("--full-ids", action="store_true", help="print whole run ids")
    prune.add_parser(sub, wait_help)
    p = sub.add_parser("serve", help="serve the release as a Prefect deployment (long-running)")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--cron", help='schedule, e.g. "0 3 * * *"')
    p.add_argument("--name", help="deployment name (default: the release name)")
    p = sub.add_parser("compare", help="run method variants without publishing; risk-utility map")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--methods", nargs="+", required=True, help="method names, e.g. mdav fuzzy")
    p.add_argument("--k", nargs="+", type=int, required=True, dest="ks", help="e.g. 3 5 10")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="method parameter for every variant that has it, e.g. m2=1.5",
    )
    p.add_argument(
        "--intruder",
        choices=["manifest", "refit"],
        default="manifest",
        help="fuzzy methods: memberships with the recorded draw fuzziness, or refit the method",
    )
    p.add_argument("--out", help="output folder (default: <reports>/<release>/compare-<time>)")
    p = sub.add_parser(
        "remap",
        help="map rules mined on fuzzy-mapped columns back to the original domain",
    )
    p.add_argument("spec", help="release spec (YAML) whose warehouse holds the mapping")
    p.add_argument("rules_file", help="text file of rules, e.g. as Weka's Apriori prints them")
    p.add_argument(
        "--run", dest="run_id", help="run whose mapping to use (default: latest published)"
    )
    p.add_argument(
        "--integer",
        action="store_true",
        help="show the integers of each piece (age in 17..44 or 63..71)",
    )
    return parser


def _after_publication(before: set[str], error: BaseException) -> int | None:
    """When this command published a release before ``error`` ended it (an interrupt after
    the swap, a warehouse busy when recording...), the release is live: say so, exit 0."""
    fresh = {k: v for k, v in _published_here().items() if k not in before}
    if not fresh:
        return None
    run_id, done = next(iter(fresh.items()))
    if isinstance(done, Path):  # the swap happened, the flow did not get to its outcome
        _say(f"published {done} (run {run_id})")
    else:
        _print_outcome(done, publish=True)
    interrupt = isinstance(error, KeyboardInterrupt) or type(error).__name__ == "TerminationSignal"
    what = "an interrupt" if interrupt else f"{type(error).__name__}: {_one_line(str(error))}"
    _say(
        f"sdcflow: {what} arrived after the release was published; it is live and recorded",
        err=True,
    )
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; return its exit code.

    Called as the process's entry point (``argv`` None: the ``sdcflow`` script, ``python -m
    sdcflow.flows.cli``), it ignores ``SIGINT`` and ``SIGTERM`` once the outcome is decided
    and printed: Python restores the default handlers while the interpreter shuts down, and a
    signal then would replace the exit code that was just reported by "killed". Once the
    command has returned, the process ends without tearing down its modules (see
    :func:`_end_process`).
    """
    if argv is None:
        _in_utf8_mode()
    try:
        code = _main(argv)
    finally:
        if argv is None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if argv is None:
        _end_process(code)
    return code


def _in_utf8_mode() -> None:
    """Run again in Python's UTF-8 mode when the locale's file names are ASCII (``LC_ALL=C``
    or ``POSIX`` with ``PYTHONUTF8=0``): a spec's names are Unicode text, and an accented
    source or folder name could not be encoded (``UnicodeEncodeError``, exit 3) in whatever
    step first touched it. The command line's own bytes are handed on as they came."""
    import codecs

    if sys.flags.utf8_mode or not sys.executable:
        return
    if codecs.lookup(sys.getfilesystemencoding()).name != "ascii":
        return
    os.execv(sys.executable, [sys.executable, "-X", "utf8", *sys.orig_argv[1:]])


def _end_process(code: int) -> None:
    """End the process with ``code`` now that the command has returned: its files, the
    warehouse, the lock and the temporary server are closed and its outcome is printed.

    The interpreter's own exit would then tear down every module the command imported, which
    is slow after Great Expectations and Prefect and does nothing for the release.
    Exactly what an exit must do is done first -- the exit handlers (``atexit``: the logging
    handlers' flush, temporary folders), the threads' shutdown hooks, the flush of stdout and
    stderr -- and the normal exit is kept whenever a thread that is not a daemon still runs.
    """
    import threading

    # a hook that never returns must not keep a decided process alive: after a burst of
    # SIGTERMs Prefect's log service can drain to the stopped temporary API for good, and
    # the process, having said "interrupted", would never end; also when the normal exit
    # is kept for a thread that still runs
    timeout = _exit_timeout()
    watchdog = threading.Timer(timeout, _exit_now, args=(code, timeout))
    watchdog.daemon = True
    watchdog.start()
    if any(
        t is not threading.main_thread() and t is not watchdog and not t.daemon
        for t in threading.enumerate()
    ):
        return
    shutdown = getattr(threading, "_shutdown", None)  # joins what concurrent.futures left
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # the descriptor was closed (`>&-`, `2>&-`)
            continue
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # a reader that went away, a closed stream
            pass
        except OSError as e:  # a full disk, an I/O error: the output is lost, say so
            if stream is sys.stdout:
                _say_output_lost(e, code)
    os._exit(code)


def _exit_timeout() -> float:
    """Seconds the exit hooks may take (``$SDCFLOW_EXIT_TIMEOUT``, default 30)."""
    try:
        return max(0.1, float(os.environ.get("SDCFLOW_EXIT_TIMEOUT", "30")))
    except ValueError:
        return 30.0


def _exit_now(code: int, timeout: float) -> None:
    """End the process with ``code`` when its exit hooks hang (:func:`_end_process`): the
    outcome was decided and printed; what the hooks still held (Prefect's logs to its API)
    is lost, and one line says so."""
    _say(
        f"sdcflow: the exit hooks did not finish in {timeout:g} s (Prefect's log "
        f"service); exit code {code} stands",
        err=True,
    )
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(code)


def _say_output_lost(error: OSError, code: int | None = None) -> None:
    """One line on stderr when what the command printed could not be written to stdout (the
    interpreter's own exit would have said so and exited 120): the exit code still tells
    what happened to the release, the line that the printed outcome did not arrive. Said
    once per process, however many writes fail."""
    if _LOST or sys.stderr is None:
        return
    _LOST.append(error)
    stands = "the exit code stands" if code is None else f"exit code {code} stands"
    try:
        print(
            f"sdcflow: the output could not be written to stdout ({error.strerror or error}); "
            f"{stands}",
            file=sys.stderr,
            flush=True,
        )
    except (OSError, ValueError):
        pass


_LOST: list[OSError] = []  # stdout failed, and it was said


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    before = set(_published_here())
    # `kill` (SIGTERM) unwinds like Ctrl-C, so Prefect stops its temporary server and an
    # interrupted publication cleans up after itself.
    signal.signal(signal.SIGTERM, _terminate)
    try:
        if args.command in ("release", "check"):
            runner = {
                "runner": args.runner,
                "workers": args.dask_workers,
                "address": args.dask_address,
            }
            return _run_release(
                args.spec,
                publish=args.command == "release",
                wait=args.wait,
                runner=runner,
                force=getattr(args, "force", False),
            )
        if args.command == "prune":
            return prune.prune(args)
        if args.command == "runs":
            return _runs(
                args.spec, args.warehouse, args.limit, args.release, args.status, args.full_ids
            )
        if args.command == "serve":
            return _serve(args.spec, args.cron, args.name)
        if args.command == "remap":
            return _remap(args.spec, args.rules_file, args.run_id, args.integer)
        if args.command == "compare":
            return _compare(args.spec, args.methods, args.ks, args.out, args.param, args.intruder)
    except BaseException as e:
        if isinstance(e, SystemExit):
            raise
        done = _after_publication(before, e)
        if done is not None:
            return done
        if isinstance(e, InputError):
            return _fail(_input_error(e), EXIT_INPUT)
        if isinstance(e, (WarehouseBusy, WarehouseDamaged)):  # nothing was done
            nothing = {"prune": "nothing was dropped", "runs": "nothing was changed"}.get(
                args.command, "nothing was published"
            )
            return _fail(f"could not complete: {_one_line(str(e))}; {nothing}", EXIT_ERROR)
        from sdcflow.warehouse.transient import is_interrupted

        if type(e).__name__ == "TerminationSignal" or is_interrupted(e):
            # Prefect turns SIGTERM into TerminationSignal during a flow run; DuckDB turns a
            # signal during a query into RuntimeError('Query interrupted')
            if args.command == "prune":
                return _fail(
                    "interrupted; `sdcflow runs` shows which runs' copies were dropped",
                    EXIT_INTERRUPTED,
                )
            return _fail("interrupted; nothing was published", EXIT_INTERRUPTED)
        if os.environ.get("SDCFLOW_DEBUG"):
            # the traceback, then the same line and code: a re-raise would exit 1, which
            # says a check failed
            import traceback

            _say("".join(traceback.format_exception(e)).rstrip(), err=True)
        # the run could not complete: say so in one line
        said = {
            "prune": "`sdcflow runs` shows which runs' copies were dropped",  # one transaction
            "runs": "nothing was changed",
        }.get(args.command, "nothing was published")
        return _fail(
            f"run failed: {type(e).__name__}: {_one_line(str(e))}; {said} "
            "(set SDCFLOW_DEBUG=1 for the traceback)",
            EXIT_ERROR,
        )
    return EXIT_INPUT


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
