"""``sdcflow check SPEC``: every step and check of a release, publishing nothing, with the
same exit codes (:mod:`sdcflow.cli.release`)."""

from __future__ import annotations

import argparse
from typing import Any

from sdcflow.cli import arguments
from sdcflow.cli.output import Aftermath
from sdcflow.cli.release import run_release, runner_of


def add_parser(sub: Any) -> None:
    p = sub.add_parser("check", help="everything but publishing, with the same exit codes")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--wait", type=arguments.seconds, metavar="SECONDS", help=arguments.WAIT_HELP)
    p.add_argument(
        "--data-docs",
        action="store_true",
        help="validate the edit rules with Great Expectations and write its Data Docs "
        "beside the report, as sdcflow release does (seconds more); without it the rules "
        "are counted by DuckDB's SQL alone: the same counts",
    )
    arguments.runner_options(p)
    p.set_defaults(func=command, aftermath=Aftermath())


def command(args: argparse.Namespace) -> int:
    return run_release(
        args.spec,
        publish=False,
        wait=args.wait,
        runner=runner_of(args),
        data_docs=args.data_docs,
    )
