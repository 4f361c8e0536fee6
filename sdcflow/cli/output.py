"""What the command line prints, and its exit codes.

Every line goes through :func:`say`, which loses the text, never the exit code: a closed or
failing stream (a full disk, a reader that went away) cannot change what the code says
happened to the release.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import Any

from sdcflow.errors import InputError

EXIT_OK, EXIT_REFUSED, EXIT_INPUT, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


@dataclass(frozen=True)
class Aftermath:
    """What a command that could not complete says was left undone: after the warehouse was
    busy or damaged (``busy``), after a signal (``interrupted``, the whole line) and after
    an unexpected error (``failed``). A command registers its own with ``set_defaults``."""

    busy: str = "nothing was published"
    interrupted: str = "interrupted; nothing was published"
    failed: str = "nothing was published"


def fail(message: str, code: int) -> int:
    """Say ``sdcflow: <message>`` on stderr; return ``code``."""
    say(f"sdcflow: {message}", err=True)
    return code


def say(text: str, *, err: bool = False) -> None:
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
            say_output_lost(e)


def say_output_lost(error: OSError, code: int | None = None) -> None:
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


def one_line(text: str, limit: int = 300) -> str:
    first = text.splitlines()[0] if text else ""
    return first if len(first) <= limit else first[: limit - 3] + "..."


def bounded(text: str, lines: int = 4, width: int = 1000) -> str:
    """An error message as it is (a rule error quotes the rule and puts a caret under the
    token), but never longer than ``lines`` lines of ``width`` characters."""
    kept = [one_line(line, width) for line in text.splitlines()[:lines]]
    return "\n".join(kept)


def input_error(e: InputError) -> str:
    """``error [<code> <field>]: <message>`` (``error [<code>]: ...`` when no field is at
    fault): the code and the field a script may match, then the message for the person."""
    where = f"{e.code} {one_line(e.field, 120)}" if e.field else str(e.code)
    return f"error [{where}]: {bounded(str(e))}"


def print_outcome(outcome: Any, publish: bool, *, checks_only: bool = False) -> None:
    """Each check's figure, threshold and verdict, then the decision and the report."""
    for o in outcome.checks:
        if not o.checked:
            shown = f"{'not checked':>12} {o.rule} {o.threshold:<10.6g} {o.unit:<9} {o.verdict}"
            say(f"  {o.key:<34} {shown}  ({o.note})")
            continue
        note = f"  ({o.note})" if o.note else ""
        figure, threshold = o.shown
        say(f"  {o.key:<34} {figure:>12} {o.rule} {threshold:<10} {o.unit:<9} {o.verdict}{note}")
    if checks_only:  # a refusal: its one line goes to stderr
        return
    if getattr(outcome, "status", None) == "unchanged":
        say(
            f"already published as run {outcome.previous_run} from the same input and spec: "
            f"{outcome.published}; nothing new published (--force to publish again; run "
            f"{outcome.run_id})"
        )
    elif publish:
        say(f"published {outcome.published} (run {outcome.run_id})")
    else:
        say(f"all checks passed; nothing published (run {outcome.run_id})")
    if getattr(outcome, "report", None):
        say(f"report {outcome.report}")


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


def console_without_tracebacks() -> None:
    """Prefect's console handlers print records without their tracebacks (unless
    ``SDCFLOW_DEBUG`` is set)."""
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
