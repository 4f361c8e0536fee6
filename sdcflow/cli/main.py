"""The ``sdcflow`` command line's entry point: the parser, the dispatch to the command
modules, the exit codes of what could not complete, and the process's signals and end.

This is the one module of sdcflow that touches the interpreter's signal handlers and exit
path; each command (one module each in :mod:`sdcflow.cli`) registers its subparser with
``set_defaults(func=..., aftermath=...)`` and returns its exit code.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import signal
import sys
import typing
from collections.abc import Sequence

from sdcflow.cli import assess, check, compare, init, prune, release, remap, runs, serve
from sdcflow.cli.output import (
    EXIT_ERROR,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    Aftermath,
    fail,
    input_error,
    one_line,
    say,
    say_output_lost,
)
from sdcflow.errors import InputError, WarehouseBusy, WarehouseDamaged

# in the order `sdcflow --help` lists them
COMMANDS = (init, assess, release, check, runs, prune, serve, compare, remap)


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose refusal is one line, as every other bad input's (exit 2), with
    where to read the usage instead of the usage itself."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (`{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    from sdcflow import __version__

    parser = _Parser(
        prog="sdcflow", description="Statistical disclosure control releases with Prefect."
    )
    parser.add_argument("--version", action="version", version=f"sdcflow {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; return its exit code.

    Called as the process's entry point (``argv`` None: the ``sdcflow`` script, ``python -m
    sdcflow.cli``), it ignores ``SIGINT`` and ``SIGTERM`` once the outcome is decided and
    printed: Python restores the default handlers while the interpreter shuts down, and a
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
        sys.exit(code)  # a thread that is not a daemon still runs: the normal exit
    return code


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    # `kill` (SIGTERM) unwinds like Ctrl-C, so Prefect stops its temporary server and an
    # interrupted publication cleans up after itself.
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return int(args.func(args))
    except BaseException as e:
        if isinstance(e, SystemExit):
            raise
        return _could_not_complete(e, args.aftermath)


def _could_not_complete(e: BaseException, aftermath: Aftermath) -> int:
    """The exit code and the one line of a command that ``e`` ended."""
    if isinstance(e, InputError):
        return fail(input_error(e), EXIT_INPUT)
    if isinstance(e, (WarehouseBusy, WarehouseDamaged)):  # nothing was done
        return fail(f"could not complete: {one_line(str(e))}; {aftermath.busy}", EXIT_ERROR)
    from sdcflow.warehouse.transient import is_interrupted

    if type(e).__name__ == "TerminationSignal" or is_interrupted(e):
        # Prefect turns SIGTERM into TerminationSignal during a flow run; DuckDB turns a
        # signal during a query into RuntimeError('Query interrupted')
        return fail(aftermath.interrupted, EXIT_INTERRUPTED)
    if os.environ.get("SDCFLOW_DEBUG"):
        # the traceback, then the same line and code: a re-raise would exit 1, which says a
        # check failed
        import traceback

        say("".join(traceback.format_exception(e)).rstrip(), err=True)
    # the run could not complete: say so in one line
    return fail(
        f"run failed: {type(e).__name__}: {one_line(str(e))}; {aftermath.failed} "
        "(set SDCFLOW_DEBUG=1 for the traceback)",
        EXIT_ERROR,
    )


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


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
    stderr -- and the normal exit is kept whenever a thread that is not a daemon still runs
    (this function then returns).
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
                say_output_lost(e, code)
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
    say(
        f"sdcflow: the exit hooks did not finish in {timeout:g} s (Prefect's log "
        f"service); exit code {code} stands",
        err=True,
    )
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
