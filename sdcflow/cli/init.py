"""``sdcflow init SOURCE``: a commented release spec drafted from the file, which
``sdcflow check`` runs as it is. Reads the file as a release reads it; writes only the spec,
and never over an existing file."""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any

from sdcflow.cli.output import EXIT_OK, Aftermath, say
from sdcflow.errors import InputError, Reason

_AFTERMATH = Aftermath(
    busy="nothing was written", interrupted="interrupted; nothing was written",
    failed="nothing was written",
)  # fmt: skip

#: Whole values that files use for "missing", looked for in every text column.
MISSING_TOKENS = ("?", "NA", "N/A", "n/a", "-", ".", "NULL", "null", "missing")
_WEIGHT_NAME = re.compile(r"(weight|wgt|wght|^wt$|^w$|fnlwgt)", re.IGNORECASE)
_ID_NAME = re.compile(r"(^id$|_id$|^id_|identifier|respondent|record)", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
#: A text column with more distinct values than this share of its records identifies them:
#: it is left out of the release rather than made a key that suppression would blank.
IDENTIFYING_SHARE = 0.5
DEFAULT_K = 5


def add_parser(sub: Any) -> None:
    p = sub.add_parser("init", help="draft a commented release spec from a source file")
    p.add_argument("source", help="the confidential file (.csv, .parquet, .sav, .dta...)")
    p.add_argument(
        "-o", "--output", help="where to write the spec (default release.yaml beside the file)"
    )
    p.set_defaults(func=command, aftermath=_AFTERMATH)


def _profile(table: Any) -> dict[str, dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {}
    n = table.num_rows
    for name in table.column_names:
        column = table.column(name)
        present = n - column.null_count
        kind = "other"
        if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
            kind = "numeric"
        elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            kind = "text"
        elif pa.types.is_boolean(column.type) or pa.types.is_dictionary(column.type):
            kind = "text"
        elif pa.types.is_temporal(column.type):
            kind = "temporal"
        distinct = len(pc.unique(column.drop_null())) if present else 0
        info: dict[str, Any] = {"kind": kind, "present": present, "distinct": distinct}
        if kind == "numeric" and present:
            info["min"] = pc.min(column).as_py()
        if kind == "text" and pa.types.is_string(column.type):
            values = column.drop_null().to_pylist()
            info["numbers_as_text"] = bool(values) and all(_NUMBER.fullmatch(v.strip() or "x")
                                                           for v in values)  # fmt: skip
            info["tokens"] = sorted({v for v in values if v in MISSING_TOKENS})
        out[name] = info
    return out


def draft(source: Path, target: Path) -> tuple[str, dict[str, Any]]:
    """The text of a spec at ``target`` for ``source``, and what was decided (for the summary
    line)."""
    from sdcflow.methods.microaggregation import MDAV
    from sdcflow.methods.suppression import LOCAL_SUPPRESSION
    from sdcflow.warehouse.sources import read_source

    first = _profile(read_source(source))
    tokens = sorted({t for info in first.values() for t in info.get("tokens", [])})
    profile = _profile(read_source(source, tokens or None)) if tokens else first
    n = max((info["present"] for info in profile.values()), default=0)
    names = list(profile)
    id_column = next(
        (c for c in names if profile[c]["distinct"] == n == profile[c]["present"]
         and (_ID_NAME.search(c) or c == names[0])),
        None,
    )  # fmt: skip
    weight = next(
        (c for c in names if c != id_column and profile[c]["kind"] == "numeric"
         and _WEIGHT_NAME.search(c) and profile[c]["present"] == n
         and (profile[c].get("min") or 0) > 0),
        None,
    )  # fmt: skip
    numeric, nominal, coded, left_out = [], [], [], []
    for c in names:
        if c in (id_column, weight):
            continue
        info = profile[c]
        if info["kind"] == "numeric":
            numeric.append(c)
        elif info["kind"] == "text" and info.get("numbers_as_text"):
            coded.append(c)
        elif info["kind"] == "text" and info["distinct"] <= max(1, IDENTIFYING_SHARE * n):
            nominal.append(c)
        else:
            left_out.append(c)
    keys = numeric + nominal + coded
    if not keys:
        raise InputError(
            f"{source}: no column can be a key (every column is an identifier, a weight, "
            "free text or a date); write the spec by hand",
            code=Reason.COLUMN_TYPE,
        )
    method = MDAV.name if numeric else LOCAL_SUPPRESSION.name
    lines = [
        f"# Drafted by `sdcflow init` from {source.name}: {n:,} records, {len(names)} columns.",
        "# Read every line; `sdcflow check` runs it as it is, publishing nothing.",
        f"release: {_name(source)}",
        f"source: {json.dumps(os.path.relpath(source, target.parent))}",
    ]
    if id_column:
        lines += ["# a value per record: never published", f"id_column: {json.dumps(id_column)}"]
    if tokens:
        lines += [
            "# whole values read as missing (a missing value is a value of its own for k)",
            f"missing_values: {json.dumps(tokens)}",
        ]
    if weight:
        lines += ["# sampling weights: population frequencies for the risk",
                  f"weight_column: {json.dumps(weight)}"]  # fmt: skip
    lines += [
        "# Every column an intruder could know is a key: k counts identical released rows over",
        "# all of them. A column that is not a key and not listed under keep: or sensitive: is",
        "# not published. Numeric keys are microaggregated, categorical ones suppressed.",
        "quasi_identifiers:",
    ]
    lines += [f"  - {json.dumps(c)}  # numeric" for c in numeric]
    lines += [f"  - {json.dumps(c)}  # categorical" for c in nominal]
    lines += [
        f"  - {{name: {json.dumps(c)}, type: nominal}}  # codes written as numbers: a category"
        for c in coded
    ]
    if left_out:
        lines.append(
            "# left out, not published: "
            + ", ".join(left_out)
            + " (free text or an identifier, or a date: add a date as {name: ..., type: "
            "ordinal} if an intruder knows it)"
        )
    # A key never negative is a magnitude (turnover): a group mean of it is gated by the p %
    # rule by default, and groups formed so that no record dominates pass it. MDAV-generic,
    # which groups keys with missing values, does not apply that option.
    magnitudes = [c for c in numeric if (profile[c].get("min") or 0) >= 0]
    remedy = bool(magnitudes) and all(profile[c]["present"] == n for c in numeric)
    if magnitudes:
        lines += [
            f"# never negative, magnitudes: {', '.join(magnitudes)}; no released group mean may",
            "# give its largest contributor away (p % rule, checked by default)"
            + ("; dominance: true forms groups where no record dominates" if remedy else ""),
        ]
    option = ", dominance: true" if remedy else ""
    lines += [
        f"method: {{name: {method}, k: {DEFAULT_K}{option}}}",
        "checks:",
        f"  k_anonymity: {DEFAULT_K}",
    ]
    if numeric:
        lines.append("  max_information_loss: 25  # IL = 100 SSE/SST of the numeric keys, %")
    lines += ["output: published/", "warehouse: warehouse.duckdb", ""]
    decided = {"keys": len(keys), "method": method, "id_column": id_column, "weight": weight}
    return "\n".join(lines), decided


def _name(source: Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", source.stem).strip("-")
    return stem or "release"


def command(args: argparse.Namespace) -> int:
    source = Path(args.source)
    target = Path(args.output) if args.output else source.with_name("release.yaml")
    if target.exists():
        raise InputError(
            f"{target} exists; sdcflow init never writes over a file: name another with -o",
            code=Reason.OUTPUT,
        )
    text, decided = draft(source, target)
    try:
        with open(target, "x", encoding="utf-8") as out:
            out.write(text)
    except FileExistsError:
        raise InputError(
            f"{target} exists; sdcflow init never writes over a file: name another with -o",
            code=Reason.OUTPUT,
        ) from None
    say(
        f"wrote {target}: {decided['keys']} keys, method {decided['method']}"
        + (f", id {decided['id_column']}" if decided["id_column"] else "")
        + (f", weight {decided['weight']}" if decided["weight"] else "")
        + f"; run: sdcflow check {target}"
    )
    return EXIT_OK
