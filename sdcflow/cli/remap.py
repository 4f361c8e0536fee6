"""``sdcflow remap SPEC RULES``: rules mined on fuzzy-mapped columns, mapped back to the
original domain with the mapping in the warehouse (opened read-only)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sdcflow.cli.output import EXIT_OK, Aftermath
from sdcflow.errors import InputError, Reason


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "remap",
        help="map rules mined on fuzzy-mapped columns back to the original domain",
    )
    p.add_argument("spec", help="release spec (YAML) whose warehouse holds the mapping")
    p.add_argument("rules_file", help="text file of rules, e.g. as Weka's Apriori prints them")
    p.add_argument(
        "--run", dest="run_id", help="run whose mapping to use (default: latest published)"
    )
    p.add_argument(
        "--integer",
        action="store_true",
        help="show the integers of each piece (age in 17..44 or 63..71)",
    )
    p.set_defaults(func=command, aftermath=Aftermath())


def command(args: argparse.Namespace) -> int:
    return remap(args.spec, args.rules_file, args.run_id, args.integer)


def remap(spec_path: str, rules_file: str, run_id: str | None, integer: bool) -> int:
    """Print the rules of ``rules_file`` with every interval on a fuzzy-mapped column mapped
    back to the original domain, from the mapping in the warehouse (opened read-only)."""
    from sdcflow.core.fuzzy_mapping import FuzzyMapping
    from sdcflow.core.fuzzy_mapping.remap import parse_intervals, remap_rule_text
    from sdcflow.spec.load import load_spec
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
