"""Time the validation of many edit rules; print one JSON line per number of rules.

Usage::

    python benchmarks/edit_rules.py --rules 10 100 1000 10000 --rows 200 --baseline-up-to 1000

Input: ``rows`` records of 10 standard-normal columns (``numpy.random.default_rng(seed)``)
in a temporary DuckDB warehouse, and ``r`` range rules ``x<j> >= -<i>`` (rule ``i`` on column
``i % 10``). Three steps of the edit-rule task are timed one after the other, as the flow runs
them: DuckDB computing one check column per rule (``evaluate_rules``), the row ids of the
violations stored in ``audit.violations`` (``record_violations``, one ``UNPIVOT`` scan per 256
rules) and Great Expectations validating the check columns (``validate_frame``: one context,
fixed-width chunks of rules, no Data Docs). Importing GE is outside the clock.

Output keys: ``rules, rows, duckdb_seconds, violations_seconds, ge_seconds, total_seconds,
per_rule_ms`` (CPU seconds of this process, the unit of ``docs/benchmarks/``) and, for
``r <= --baseline-up-to``, ``baseline_ge_seconds`` and ``ratio`` (baseline / GE seconds). The
baseline is how sdcflow validated rules before: every expectation added to one suite with
``ExpectationSuite.add_expectation`` (which compares it with each one already added) and one
checkpoint over a batch holding every check column (GE's pandas engine copies that batch for
each expectation): both grow as r^2.

The figures and the command that produced them: ``docs/benchmarks/``, "Edit rules at
scale".
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa


def one_batch(frame: pd.DataFrame, compiled: list) -> dict[str, int]:
    """The baseline: one suite built expectation by expectation, one checkpoint, one batch."""
    import great_expectations as gx

    from sdcflow.expectations.suite import RESULT_FORMAT, _context, _expectation

    context = _context(None)
    asset = context.data_sources.add_pandas("baseline").add_dataframe_asset("rule-checks")
    batch = asset.add_batch_definition_whole_dataframe("all-records")
    suite = gx.ExpectationSuite(name="baseline")
    for c in compiled:
        suite.add_expectation(_expectation(c))
    suite = context.suites.add(suite)
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name="baseline", data=batch, suite=suite)
    )
    checkpoint = context.checkpoints.add(
        gx.Checkpoint(
            name="baseline", validation_definitions=[definition], result_format=RESULT_FORMAT
        )
    )
    result = checkpoint.run(batch_parameters={"dataframe": frame})
    return {
        r.expectation_config.meta["rule"]: int(r.result.get("unexpected_count", 0) or 0)
        for validation in result.run_results.values()
        for r in validation.results
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", type=int, nargs="+", default=[10, 100, 1000, 10000])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--baseline-up-to",
        type=int,
        default=1000,
        help="time the one-batch validation too for this many rules or fewer",
    )
    args = parser.parse_args(argv)

    import great_expectations  # noqa: F401 - imported before any clock starts

    from sdcflow.expectations.compile import compile_rule
    from sdcflow.expectations.rules import parse_rules
    from sdcflow.expectations.suite import validate_frame
    from sdcflow.warehouse.edits import evaluate_rules, record_violations
    from sdcflow.warehouse.warehouse import Warehouse

    rng = np.random.default_rng(args.seed)
    columns = [f"x{j}" for j in range(10)]
    frame = pd.DataFrame(rng.standard_normal((args.rows, 10)), columns=columns)
    with tempfile.TemporaryDirectory() as tmp:
        warehouse = Warehouse(Path(tmp) / "w.duckdb")
        warehouse.initialize()
        run = uuid.uuid4().hex
        warehouse.ingest(pa.Table.from_pandas(frame, preserve_index=False), run)
        validate_frame(  # warm-up: GE's first context builds its registries
            evaluate_rules(warehouse, "raw", run, [compile_rule(parse_rules(["x0 >= 0"])[0])]),
            [compile_rule(parse_rules(["x0 >= 0"])[0])],
        )
        for r in args.rules:
            rules = parse_rules([f"x{i % 10} >= {-i}" for i in range(r)], known_columns=columns)
            compiled = [compile_rule(rule) for rule in rules]
            t0 = time.process_time()
            checks = evaluate_rules(warehouse, "raw", run, compiled)
            t1 = time.process_time()
            record_violations(warehouse, "raw", run, compiled)
            t2 = time.process_time()
            report = validate_frame(checks, compiled, stage="raw")
            t3 = time.process_time()
            assert len(report.outcomes) == r
            out = {
                "rules": r,
                "rows": args.rows,
                "duckdb_seconds": round(t1 - t0, 3),
                "violations_seconds": round(t2 - t1, 3),
                "ge_seconds": round(t3 - t2, 3),
                "total_seconds": round(t3 - t0, 3),
                "per_rule_ms": round(1000 * (t3 - t0) / r, 2),
            }
            if r <= args.baseline_up_to:
                t4 = time.process_time()
                counts = one_batch(checks, compiled)
                baseline = time.process_time() - t4
                assert counts == report.counts(None)
                out["baseline_ge_seconds"] = round(baseline, 3)
                out["ratio"] = round(baseline / (t3 - t2), 2)
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
