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
    arguments.runner_options(p)
    p.set_defaults(func=command, aftermath=Aftermath())


def command(args: argparse.Namespace) -> int:
    return run_release(args.spec, publish=False, wait=args.wait, runner=runner_of(args))
