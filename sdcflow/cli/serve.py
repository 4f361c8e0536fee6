"""``sdcflow serve SPEC``: the release as a Prefect deployment, served by this process
until ``SIGTERM`` or Ctrl-C (:func:`sdcflow.flows.server.serve_flow`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sdcflow.cli.output import EXIT_OK, Aftermath
from sdcflow.errors import InputError, Reason


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="serve the release as a Prefect deployment (long-running)")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--cron", help='schedule, e.g. "0 3 * * *"')
    p.add_argument("--name", help="deployment name (default: the release name)")
    p.set_defaults(func=command, aftermath=Aftermath())


def command(args: argparse.Namespace) -> int:
    return serve(args.spec, args.cron, args.name)


def serve(spec_path: str, cron: str | None, name: str | None) -> int:
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
