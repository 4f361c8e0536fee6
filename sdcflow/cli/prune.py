"""``sdcflow prune``: drop the confidential copies (``raw``, ``edited``, ``masked`` tables)
of expired runs from a warehouse, under a retention policy.

Dry run by default: it lists what it would drop and drops nothing until ``--yes``. Dropping
is irreversible and those copies are the only record of what a run ingested, so the command
a person types by hand shows first; the policy that runs unattended is the spec's
``retention:``, applied at the end of every release.

With ``--yes`` it takes the warehouse's writer lock (waiting ``--wait`` seconds for a
release, like a release does; exit 3 after), settles runs whose process has ended, lists
again under the lock and drops (:mod:`sdcflow.warehouse.retention`); ``--compact`` then
rewrites the warehouse file so that the dropped tables' bytes leave the disk. Imports are
deferred so that ``sdcflow --help`` stays quick.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sdcflow.cli import arguments
from sdcflow.cli.output import Aftermath
from sdcflow.errors import InputError, Reason

__all__ = ["add_parser", "prune"]

# one transaction: an interrupted or failed prune dropped all or nothing
_AFTERMATH = Aftermath(
    busy="nothing was dropped",
    interrupted="interrupted; `sdcflow runs` shows which runs' copies were dropped",
    failed="`sdcflow runs` shows which runs' copies were dropped",
)


def add_parser(sub: Any) -> None:
    """Add the ``prune`` subcommand to the command line's subparsers."""
    p = sub.add_parser(
        "prune",
        help="drop the raw, edited and masked copies of expired runs (dry run unless --yes)",
    )
    p.add_argument("spec", nargs="?", help="release spec: its warehouse, release and retention")
    p.add_argument("--warehouse", help="path of a warehouse DuckDB file (every release in it)")
    p.add_argument("--release", help="only the runs of this release")
    p.add_argument(
        "--keep-last",
        type=arguments.runs,
        metavar="N",
        help="keep the last N published runs, and the last N checked ones",
    )
    p.add_argument(
        "--keep-days", type=arguments.days, metavar="D", help="keep runs of the last D days"
    )
    p.add_argument(
        "--keep-refused",
        action="store_true",
        help="keep the copies of refused, failed and interrupted runs too",
    )
    p.add_argument("--yes", action="store_true", help="drop them (default: only list them)")
    p.add_argument(
        "--compact",
        action="store_true",
        help="with --yes: then rewrite the warehouse file so that the dropped tables' bytes "
        "leave the disk",
    )
    p.add_argument("--wait", type=arguments.seconds, metavar="SECONDS", help=arguments.WAIT_HELP)
    p.set_defaults(func=prune, aftermath=_AFTERMATH)


def prune(args: argparse.Namespace) -> int:
    """Run ``sdcflow prune``; return the exit code (0)."""
    from sdcflow.warehouse.leftovers import sweep_run_leftovers
    from sdcflow.warehouse.retention import (
        Policy,
        compact,
        drop_copies,
        expired,
        sweep_compactions,
    )
    from sdcflow.warehouse.warehouse import Warehouse, check_warehouse_file, warehouse_exists

    release = args.release
    options = {"keep_last": args.keep_last, "keep_days": args.keep_days}
    if args.spec:
        from sdcflow.spec.load import load_spec

        spec = load_spec(args.spec)
        path = Path(args.warehouse) if args.warehouse else spec.warehouse_path
        release = release or spec.release
        given = any(v is not None for v in options.values()) or args.keep_refused
        policy = (
            Policy(**options, keep_refused=args.keep_refused)
            if given
            else Policy(**spec.retention.model_dump())
        )
    elif args.warehouse:
        path, policy = Path(args.warehouse), Policy(**options, keep_refused=args.keep_refused)
    else:
        raise InputError("give a spec file or --warehouse PATH", code=Reason.SPEC_MISSING)
    if not warehouse_exists(path):
        if args.warehouse:  # named by hand: a mistyped path must not read as "nothing to do"
            raise InputError(
                f"no warehouse at {path}; check the path (a spec's warehouse before its first "
                "run has nothing to prune: give the spec instead)",
                code=Reason.WAREHOUSE,
                field="warehouse",
            )
        print(f"no warehouse at {path}; nothing to prune")
        return 0
    check_warehouse_file(path)
    warehouse = Warehouse(path)
    if not _records_runs(warehouse):  # a DuckDB file of yours: neither initialized nor compacted
        print(
            f"{path} records no sdcflow run (no audit.runs of sdcflow's); nothing to prune, "
            "nothing written"
        )
        return 0
    exposure = warehouse.exposure()
    if exposure is not None:  # reported, not refused: its mode is the owner's decision
        print(f"warning: {exposure}", file=sys.stderr)
    if not args.yes:
        runs = expired(warehouse, policy, release=release)
        _print(runs, "would drop")
        tables = sum(len(r.schemas) for r in runs)
        print(
            f"{len(runs)} run(s), {tables} table(s) to drop; nothing dropped (dry run): "
            "add --yes to drop them"
            if runs
            else "nothing to prune"
        )
        if args.compact:
            print("nothing compacted (dry run): --compact acts with --yes")
        return 0
    with warehouse.lock(args.wait):
        warehouse.initialize()
        warehouse.resolve_ended_runs()  # holding the lock, every running run here has ended
        sweep_compactions(warehouse)  # and no compaction runs: a killed one's copy goes
        for folder in sweep_run_leftovers(warehouse):  # killed runs' copies of the source
            print(f"removed {folder}, left by a run that was killed")
        runs = expired(warehouse, policy, release=release)
        dropped = drop_copies(warehouse, runs)
        sizes = compact(warehouse) if args.compact else None
    _print(runs, "dropped")
    print(
        f"dropped {dropped} table(s) of {len(runs)} run(s); their figures stay in audit.runs"
        if runs
        else "nothing to prune"
    )
    if sizes is not None:
        print(f"compacted {path}: {sizes[0]} -> {sizes[1]} bytes; dropped tables' bytes removed")
    return 0


def _records_runs(warehouse: Any) -> bool:
    """Whether the warehouse has sdcflow's ``audit.runs`` (read-only), so that ``--yes``
    neither creates sdcflow's schemas and audit tables in any DuckDB file it is pointed at
    nor alters a table of the user's named ``audit.runs``."""
    from sdcflow.warehouse.warehouse import audit_kind

    with warehouse.connect(read_only=True) as con:
        return audit_kind(con) == "sdcflow"


def _print(runs: list[Any], verb: str) -> None:
    for r in runs:
        started = f"{r.started_at:%Y-%m-%d %H:%M}"
        print(
            f"{verb} {', '.join(r.schemas)} of run {r.run_id} ({r.release}, {r.status}, "
            f"started {started}): {r.why}"
        )
