"""``sdcflow runs``: the runs recorded in a warehouse (``audit.runs``), as a table. The
warehouse is opened read-only, for one query; nothing is written."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sdcflow.cli import arguments
from sdcflow.cli.output import EXIT_OK, Aftermath
from sdcflow.errors import InputError, Reason

_AFTERMATH = Aftermath(busy="nothing was changed", failed="nothing was changed")


def add_parser(sub: Any) -> None:
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
    p.set_defaults(func=command, aftermath=_AFTERMATH)


def command(args: argparse.Namespace) -> int:
    return list_runs(
        args.spec, args.warehouse, args.limit, args.release, args.status, args.full_ids
    )


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


def list_runs(
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
