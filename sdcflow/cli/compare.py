"""``sdcflow compare SPEC``: method variants run without publishing, and their
risk-utility map (:mod:`sdcflow.flows.compare`)."""

from __future__ import annotations

import argparse
from typing import Any

import yaml

from sdcflow.cli.output import EXIT_OK, EXIT_REFUSED, Aftermath, console_without_tracebacks, fail
from sdcflow.errors import ChecksFailed, InputError, Reason


def add_parser(sub: Any) -> None:
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
    p.set_defaults(func=command, aftermath=Aftermath())


def command(args: argparse.Namespace) -> int:
    return compare_methods(args.spec, args.methods, args.ks, args.out, args.param, args.intruder)


def compare_methods(
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

    console_without_tracebacks()
    try:
        with owned_prefect_api():
            table = compare(spec_path, methods, ks, params=params, intruder=intruder, out_dir=out)
    except ChecksFailed as e:
        return fail(f"refused: {e}", EXIT_REFUSED)
    print(table.drop(columns=["run_id"]).to_string(index=False, float_format="{:.4g}".format))
    print(f"risk-utility map {table.attrs['png']}\nreport {table.attrs['report']}")
    return EXIT_OK
