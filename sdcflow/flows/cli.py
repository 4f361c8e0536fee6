"""The ``sdcflow`` command line.

Each command imports what it needs when it runs (Prefect, numba and Great Expectations take
seconds to import), so that ``sdcflow --help`` and a bad spec answer at once.

Exit codes: 0 published / all checks passed; 1 a check or edit rule failed (nothing
published); 2 bad input (one line naming the field, file or column and the fix); 3 the run
could not complete (e.g. Prefect's API did not start); nothing was published.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from sdcflow.errors import ChecksFailed, InputError, Reason

EXIT_OK, EXIT_REFUSED, EXIT_INPUT, EXIT_ERROR = 0, 1, 2, 3


def _fail(message: str, code: int) -> int:
    print(f"sdcflow: {message}", file=sys.stderr)
    return code


def _run_release(spec_path: str, *, publish: bool) -> int:
    # The preflight runs before a flow run exists, so that bad input gives one clean line
    # (and no failed run in the Prefect UI); the flow reuses its plan.
    from sdcflow.tasks.spec import load_spec
    from sdcflow.tasks.steps.plan import plan_release

    plan = plan_release(load_spec(spec_path))

    from sdcflow.flows.release import release  # imports Prefect: after the preflight

    try:
        outcome = release(str(Path(spec_path).resolve()), publish=publish, plan=plan)
    except ChecksFailed as e:
        return _fail(f"refused: {e}", EXIT_REFUSED)
    for o in outcome.checks:
        verdict = "pass" if o.passed else "FAIL"
        print(
            f"  {o.key:<34} {o.figure:>12.6g} {o.rule} {o.threshold:<10.6g} {o.unit:<9} {verdict}"
        )
    if publish:
        print(f"published {outcome.published} (run {outcome.run_id})")
    else:
        print(f"all checks passed; nothing published (run {outcome.run_id})")
    return EXIT_OK


def _runs(target: str | None, warehouse: str | None, limit: int) -> int:
    from sdcflow.tasks.spec import load_spec
    from sdcflow.warehouse.warehouse import Warehouse

    if warehouse:
        path = Path(warehouse)
    elif target:
        path = load_spec(target).warehouse_path
    else:
        raise InputError("give a spec file or --warehouse PATH", code=Reason.SPEC_MISSING)
    runs = Warehouse(path).runs(limit)
    if runs.empty:
        print(f"no runs recorded in {path}")
        return EXIT_OK
    with_cols = ["run_id", "release", "method", "status", "started_at", "ended_at", "checks"]
    print(runs[with_cols].to_string(index=False))
    return EXIT_OK


def _serve(spec_path: str, cron: str | None, name: str | None) -> int:
    from sdcflow.flows.release import release
    from sdcflow.tasks.spec import load_spec

    spec = load_spec(spec_path)
    release.serve(
        name=name or spec.release,
        cron=cron,
        parameters={"spec_path": str(Path(spec_path).resolve()), "publish": True},
    )
    return EXIT_OK


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
    try:
        table = compare(spec_path, methods, ks, params=params, intruder=intruder, out_dir=out)
    except ChecksFailed as e:
        return _fail(f"refused: {e}", EXIT_REFUSED)
    print(table.drop(columns=["run_id"]).to_string(index=False, float_format="{:.4g}".format))
    print(f"risk-utility map {table.attrs['png']}\nreport {table.attrs['report']}")
    return EXIT_OK


def _remap(spec_path: str, rules_file: str, run_id: str | None, integer: bool) -> int:
    """Print the rules of ``rules_file`` with every interval on a fuzzy-mapped column mapped
    back to the original domain, from the mapping in the warehouse (opened read-only)."""
    from sdcflow.tasks.fuzzy_mapping import FuzzyMapping
    from sdcflow.tasks.fuzzy_mapping.remap import parse_intervals, remap_rule_text
    from sdcflow.tasks.spec import load_spec
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sdcflow", description="Statistical disclosure control releases with Prefect."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("release", help="mask, check and publish the release a spec describes")
    p.add_argument("spec", help="release spec (YAML)")
    p = sub.add_parser("check", help="everything but publishing, with the same exit codes")
    p.add_argument("spec", help="release spec (YAML)")
    p = sub.add_parser("runs", help="list the runs recorded in the warehouse (audit.runs)")
    p.add_argument("spec", nargs="?", help="release spec whose warehouse to read")
    p.add_argument("--warehouse", help="path of a warehouse DuckDB file")
    p.add_argument("--limit", type=int, default=50)
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
    p.add_argument("--integer", action="store_true", help="show integer ranges (age in 17..71)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # The machine may have no internet: do not let Prefect's ephemeral server phone home;
    # and on a small, busy machine its start-up can take longer than the 20 s default.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    # `kill` (SIGTERM) unwinds like Ctrl-C, so Prefect stops its temporary server and an
    # interrupted publication cleans up after itself.
    signal.signal(signal.SIGTERM, _terminate)
    try:
        if args.command in ("release", "check"):
            return _run_release(args.spec, publish=args.command == "release")
        if args.command == "runs":
            return _runs(args.spec, args.warehouse, args.limit)
        if args.command == "serve":
            return _serve(args.spec, args.cron, args.name)
        if args.command == "remap":
            return _remap(args.spec, args.rules_file, args.run_id, args.integer)
        if args.command == "compare":
            return _compare(args.spec, args.methods, args.ks, args.out, args.param, args.intruder)
    except InputError as e:
        return _fail(f"error [{e.code}]: {e}", EXIT_INPUT)
    except KeyboardInterrupt:
        return _fail("interrupted; nothing was published", 130)
    except Exception as e:  # the run could not complete: say so in one line, keep the cause
        if os.environ.get("SDCFLOW_DEBUG"):
            raise
        first = str(e).splitlines()[0] if str(e) else ""
        return _fail(
            f"run failed: {type(e).__name__}: {first}; nothing was published "
            "(set SDCFLOW_DEBUG=1 for the traceback)",
            EXIT_ERROR,
        )
    return EXIT_INPUT


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
