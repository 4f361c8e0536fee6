"""``sdcflow assess SOURCE --keys ...``: the raw file's risk before any protection, figures
only (:func:`sdcflow.core.risk.assessment.assess`). Reads the file as a release reads it and
writes nothing."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdcflow.cli.output import EXIT_OK, Aftermath, say
from sdcflow.errors import InputError, Reason

if TYPE_CHECKING:
    # numpy, pandas and scipy load in the command that runs: `sdcflow check` imports this
    # module to build the parser, and every import here delays its Prefect API's start
    import numpy as np

    from sdcflow.core.risk.assessment import Assessment

_AFTERMATH = Aftermath(
    busy="nothing was written", interrupted="interrupted; nothing was written",
    failed="nothing was written",
)  # fmt: skip


def _at_least(smallest: int, what: str) -> Any:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = smallest - 1
        if value < smallest:
            raise argparse.ArgumentTypeError(
                f"{what} must be a whole number >= {smallest}, got {text!r}"
            )
        return value

    return convert


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "assess", help="the raw file's disclosure risk on its keys, before any protection"
    )
    p.add_argument("source", help="the confidential file (.csv or .parquet)")
    p.add_argument("--keys", nargs="+", required=True, help="the key columns an intruder knows")
    p.add_argument("--weight", help="sampling weight column (population frequencies)")
    p.add_argument(
        "--missing-values", nargs="+", default=[], metavar="TOKEN",
        help="tokens read as missing, as the spec's missing_values: (an empty cell always is)",
    )  # fmt: skip
    p.add_argument(
        "--k", nargs="+", type=_at_least(2, "k"), default=[2, 3, 5, 10], metavar="K",
        help="records below these k are counted (default 2 3 5 10)",
    )  # fmt: skip
    p.add_argument(
        "--max-combination", type=_at_least(1, "--max-combination"), default=3, metavar="SIZE",
        help="largest set of keys searched for records it singles out (default 3)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="one JSON object instead of the text")
    p.set_defaults(func=command, aftermath=_AFTERMATH)


def _weights(table: Any, column: str) -> np.ndarray:
    import numpy as np

    values = table.column(column).to_pandas()
    numbers = np.asarray(values, dtype=object)
    try:
        w = np.asarray(numbers, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(
            f"weight column {column!r} is not numeric; name a column of positive numbers",
            code=Reason.WEIGHTS,
        ) from None
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise InputError(
            f"weight column {column!r} has missing, non-finite or non-positive values; "
            "every record needs a positive weight",
            code=Reason.WEIGHTS,
        )
    return w


def read_keys(args: argparse.Namespace) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """The key codes (n, d) and weights (n,) of ``args.source``, read as a release reads it."""
    from sdcflow.core.measures.anonymity import key_codes
    from sdcflow.warehouse.sources import read_source

    keys = list(dict.fromkeys(args.keys))
    wanted = keys + ([args.weight] if args.weight and args.weight not in keys else [])
    table = read_source(Path(args.source), args.missing_values or None, columns=wanted)
    missing = [c for c in wanted if c not in table.column_names]
    if missing:
        raise InputError(
            f"{args.source} has no column {', '.join(map(repr, missing))}; its columns are "
            f"{', '.join(table.column_names)}",
            code=Reason.COLUMN_UNKNOWN,
        )
    if table.num_rows == 0:
        raise InputError(f"{args.source} has no records", code=Reason.SOURCE_EMPTY)
    codes = key_codes(table.select(keys).to_pandas())
    weights = _weights(table, args.weight) if args.weight else None
    return keys, codes, weights


def _text(a: Assessment, weight: str | None) -> list[str]:
    pct = 100.0 / a.n
    lines = [
        f"{a.n:,} records, {len(a.keys)} keys ({', '.join(a.keys)})"
        + (f", weights {weight}" if weight else ""),
        "records in classes of identical key rows below k (a missing value is a value):",
    ]
    lines += [f"  k = {k}: {c:,} ({c * pct:.1f} %)" for k, c in a.below_k.items()]
    lines.append(f"sample uniques: {a.sample_uniques:,} ({a.sample_uniques * pct:.1f} %)")
    basis = "weights estimate population frequencies" if a.weighted else "the file as population"
    lines.append(
        f"individual risk ({basis}): max {a.max_risk:.4g}; expected re-identifications "
        f"{a.expected_reidentifications:.4g} ({a.global_risk_percent:.3g} % of records)"
    )
    lines.append("key sets that single records out (records unique on them, on no smaller set):")
    lines += [f"  {' + '.join(keys)}: {count:,}" for keys, count in a.combinations] or ["  none"]
    lines.append("keys that drive the risk (share of SUDA2 scores; sample uniques without it):")
    order = sorted(a.keys, key=lambda key: -a.key_contributions[key])
    lines += [
        f"  {key}: {a.key_contributions[key]:.1f} % ({a.uniques_without[key]:,} without it)"
        for key in order
    ]
    return lines


def command(args: argparse.Namespace) -> int:
    from sdcflow.core.risk.assessment import assess

    keys, codes, weights = read_keys(args)
    found = assess(
        codes, keys, weights=weights, ks=tuple(args.k), max_combination=args.max_combination
    )
    if args.json:
        body = {
            "records": found.n,
            "keys": list(found.keys),
            "weight": args.weight,
            "records_below_k": {str(k): c for k, c in found.below_k.items()},
            "sample_uniques": found.sample_uniques,
            "individual_risk_max": found.max_risk,
            "expected_reidentifications": found.expected_reidentifications,
            "global_risk_percent": found.global_risk_percent,
            "key_sets": [{"keys": list(k), "records": c} for k, c in found.combinations],
            "key_contributions_percent": found.key_contributions,
            "sample_uniques_without_key": found.uniques_without,
        }
        say(json.dumps(body))
    else:
        for line in _text(found, args.weight):
            say(line)
    return EXIT_OK
