"""Parsers of the command line's numeric options (one rule for reading a number and saying
what is wrong with it, used by every subcommand), and the options several commands share."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def number(
    parse: Callable[[str], float], valid: Callable[[float], bool], not_a: str, bound: str
) -> Callable[[str], float]:
    """An argparse ``type=``: ``parse`` the text, else "<not_a>: '<text>'"; keep the value
    if ``valid``, else ``bound``."""

    def convert(text: str) -> float:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{not_a}: {text!r}") from None
        if value in (inf, -inf) and "inf" not in text.strip().lower():
            # 1e400 overflows to inf: "no limit" must be said as inf, not arrive by rounding
            raise argparse.ArgumentTypeError(f"{text!r} is beyond a float's range; {bound}")
        if not valid(value):
            raise argparse.ArgumentTypeError(bound)
        return value

    return convert


inf = float("inf")
INT64_MAX = 2**63 - 1  # what DuckDB takes as a LIMIT

seconds = number(
    float, lambda v: 0 <= v < inf, "not a number of seconds", "give a finite number of seconds >= 0"
)
workers = number(
    int, lambda v: 1 <= v <= 1024, "not a whole number of workers", "give 1 to 1024 workers"
)
runs = number(
    int,
    lambda v: 1 <= v <= INT64_MAX,
    "not a whole number",
    f"give a number of runs from 1 to {INT64_MAX} (2^63 - 1)",
)
# inf as in the spec's `retention: {keep_days: .inf}`: every run is within it
days = number(
    float,
    lambda v: 0 < v <= inf,
    "not a number of days (inf for every run)",
    "give a number of days > 0",
)


WAIT_HELP = (
    "seconds to wait while another release holds the warehouse, then exit 3 (default: "
    "$SDCFLOW_LOCK_WAIT or 60)"
)


def runner_options(p: argparse.ArgumentParser) -> None:
    """--runner, --dask-workers, --dask-address (docs/howto/scale-out.md); they override the
    spec's ``runner:`` and ``dask:``."""
    p.add_argument(
        "--runner",
        choices=["local", "dask"],
        help="local: one process; dask: the mask's cells on a Dask cluster (default: the spec's)",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--dask-workers",
        type=workers,
        metavar="N",
        help="worker processes of the embedded Dask LocalCluster (default: the CPU count)",
    )
    group.add_argument(
        "--dask-address", metavar="ADDRESS", help="scheduler of an existing Dask cluster"
    )
