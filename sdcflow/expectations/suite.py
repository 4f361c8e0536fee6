"""Validate edit rules with Great Expectations 1.x on the check columns DuckDB computed.

Design (verified against great-expectations 1.24.1 and duckdb 2.0.0)
--------------------------------------------------------------------
* **GE does not talk to DuckDB.** GE 1.24 has no native DuckDB datasource (the native engine is
  an open pull request, #12084 [2]), and its SQL datasource through ``duckdb-engine`` fails on
  every expectation with an ``IndexError`` in ``resolve_metric_bundle`` (issues #10738, #11579
  [2]);
  sdcflow does not depend on ``duckdb-engine``. ``UnexpectedRowsExpectation`` (the natural fit
  for "rows violating a SQL predicate") runs only on SQL and Spark engines. And a second
  ``duckdb.connect`` on a file GE holds open with another configuration fails, so every
  connection stays in :mod:`sdcflow.warehouse`.
* **DuckDB evaluates, GE judges.** :func:`sdcflow.warehouse.edits.evaluate_rules` computes one
  check column per rule next to ``sdc_row_id`` (a residual, a value, the column itself, or a
  boolean; see :mod:`sdcflow.expectations.compile`), and this module validates that in-memory
  frame as a pandas batch (whole-dataframe batch definition) with built-in expectations:
  ``ExpectColumnValuesToBeBetween`` on residuals with the rule's tolerance (strict bounds for
  ``<``/``>``), ``ExpectColumnValuesToBeInSet`` / ``ExpectColumnValuesToNotBeInSet`` for sets,
  ``ExpectColumnValuesToNotBeNull`` for not-null, and for the rest (conditionals, ``!=``, text
  comparisons, general chains) the custom :class:`ExpectRuleToHold`, a subclass of
  ``ExpectColumnValuesToBeInSet`` fixed to ``{True}`` (GE 1.x's documented way to customize an
  expectation class [1]). GE skips nulls in column-map expectations, which is exactly the
  "undetermined" semantics of the rule language. Importing GE takes seconds, so the flow
  imports this module only inside its task (timings: ``docs/benchmarks/``, "Edit rules").
* **An ephemeral context** (in-memory stores, analytics and progress bars off) with one
  filesystem Data Docs site whose ``base_directory`` is the run's report folder. The rules are
  validated in chunks of fixed width (one suite and one validation definition per chunk, each
  on a batch of its own check columns), so the cost grows linearly with the number of rules;
  the site is built once, after every chunk, and
  :func:`~sdcflow.expectations.docs.make_offline` makes it render with no network.
* **No values leave.** The result format is ``BASIC`` with ``partial_unexpected_count = 0``: GE
  reports counts only, so neither the results, the Data Docs nor the :class:`RuleReport` carry a
  single value from the data (the check columns are residuals and raw values).

References
----------
.. [1] Great Expectations 1.x documentation, https://docs.greatexpectations.io: "Connect to
   dataframe data", "Customize an Expectation Class", "Configure Data Docs", "Run a
   Validation Definition".
.. [2] The Great Expectations issue tracker on GitHub: pull request #12084 (native DuckDB
   execution engine), issues #10738 and #11579 (``IndexError`` with ``duckdb-engine``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import great_expectations as gx
import pandas as pd
from great_expectations.data_context.types.base import (
    DataContextConfig,
    InMemoryStoreBackendDefaults,
    ProgressBarsConfig,
)
from great_expectations.expectations.metadata_types import FailureSeverity

from sdcflow.expectations.compile import CompiledRule
from sdcflow.expectations.docs import make_offline
from sdcflow.expectations.outcomes import RuleOutcome, RuleReport
from sdcflow.warehouse.private import owner_only_files, private_folder, private_tree

__all__ = ["ExpectRuleToHold", "RuleOutcome", "RuleReport", "build_suite", "validate_frame"]

DOCS_SITE = "sdcflow"
RESULT_FORMAT = {"result_format": "BASIC", "partial_unexpected_count": 0}


class ExpectRuleToHold(gx.expectations.ExpectColumnValuesToBeInSet):
    """Expect an edit rule's boolean check column to be true (nulls are undetermined)."""

    value_set: list = [True]  # noqa: RUF012 - a pydantic field default, as GE documents
    description: str = "edit rule holds"


def _expectation(c: CompiledRule) -> gx.expectations.Expectation:
    common: dict[str, Any] = {
        "column": c.name,
        "meta": {"rule": c.name, "severity": c.rule.severity},
        "description": f"edit rule {c.name}: {c.rule.text}",
        "severity": (
            FailureSeverity.CRITICAL if c.rule.severity == "error" else FailureSeverity.WARNING
        ),
    }
    if c.kind == "between":
        return gx.expectations.ExpectColumnValuesToBeBetween(
            min_value=c.min_value,
            max_value=c.max_value,
            strict_min=c.strict_min,
            strict_max=c.strict_max,
            **common,
        )
    if c.kind == "in_set":
        return gx.expectations.ExpectColumnValuesToBeInSet(value_set=list(c.value_set), **common)
    if c.kind == "not_in_set":
        return gx.expectations.ExpectColumnValuesToNotBeInSet(value_set=list(c.value_set), **common)
    if c.kind == "not_null":
        return gx.expectations.ExpectColumnValuesToNotBeNull(**common)
    return ExpectRuleToHold(**common)


def build_suite(compiled: Sequence[CompiledRule], name: str = "edit-rules") -> gx.ExpectationSuite:
    """The expectation suite of the rules: one expectation per rule on its check column."""
    # The constructor takes the list as it is; ``add_expectation`` would compare each new
    # expectation with every one already added (quadratic in the number of rules).
    return gx.ExpectationSuite(name=name, expectations=[_expectation(c) for c in compiled])


def _context(docs_dir: Path | None) -> Any:
    sites = {}
    if docs_dir is not None:
        sites[DOCS_SITE] = {
            "class_name": "SiteBuilder",
            "show_how_to_buttons": False,
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            "store_backend": {
                "class_name": "TupleFilesystemStoreBackend",
                "base_directory": str(docs_dir),
            },
        }
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
        data_docs_sites=sites,
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def _raised(info: Mapping[str, Any] | None) -> str | None:
    """The message of an exception GE caught while computing an expectation, if any."""
    if not info:
        return None
    if info.get("raised_exception"):
        return str(info.get("exception_message"))
    for value in info.values():
        if isinstance(value, Mapping) and value.get("raised_exception"):
            return str(value.get("exception_message"))
    return None


CHUNK = 64  # rules per validation (GE's pandas engine copies the whole batch per expectation)


def validate_frame(
    frame: pd.DataFrame,
    compiled: Sequence[CompiledRule],
    *,
    stage: str = "raw",
    docs_dir: str | Path | None = None,
    suite_name: str = "edit-rules",
    chunk: int = CHUNK,
) -> RuleReport:
    """Validate the check columns of ``compiled`` rules in ``frame`` with Great Expectations.

    Parameters
    ----------
    frame : DataFrame with n rows
        ``sdc_row_id`` and one check column per rule, named after the rule, as returned by
        :func:`sdcflow.warehouse.edits.evaluate_rules`.
    compiled : sequence of CompiledRule
    stage : str
        Label of the validated table, for the report and the Data Docs batch.
    docs_dir : path, optional
        Build a Data Docs site there (``index.html`` and the validation pages).
    suite_name : str
    chunk : int, default 64
        Rules per validation. One context holds one suite and one validation definition per
        chunk of rules, each run on a batch of its own check columns, and the Data Docs site
        is built once at the end. GE's pandas engine copies the whole batch for every
        expectation it evaluates, so a single batch of r check columns costs O(r^2 n); chunks
        of fixed width make the validation linear in the number of rules (figures:
        ``docs/benchmarks/``, "Edit rules at scale").

    Returns
    -------
    RuleReport
        Per-rule violating and undetermined counts (GE's ``unexpected_count`` and
        ``missing_count``), the Data Docs path and the wall time.

    Raises
    ------
    RuntimeError
        When GE could not compute an expectation (an internal error, not bad input).
    """
    t0 = time.perf_counter()
    missing = [c.name for c in compiled if c.name not in frame.columns]
    if missing:
        raise ValueError(
            f"check column(s) {missing} are not in the frame; evaluate the rules first"
        )
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    report = RuleReport(stage=stage, records=len(frame))
    if not compiled:
        return report
    docs = Path(docs_dir) if docs_dir is not None else None
    if docs is not None:  # figures about the confidential records: their owner's only
        private_folder(docs)
    context = _context(docs)
    asset = context.data_sources.add_pandas(f"sdcflow-{stage}").add_dataframe_asset("rule-checks")
    batch_definition = asset.add_batch_definition_whole_dataframe("all-records")
    by_rule: dict[str, Any] = {}
    parts = [compiled[i : i + chunk] for i in range(0, len(compiled), chunk)]
    for i, part in enumerate(parts):
        name = suite_name if len(parts) == 1 else f"{suite_name}-{i + 1:05d}"
        suite = context.suites.add(build_suite(part, name))
        definition = context.validation_definitions.add(
            gx.ValidationDefinition(name=f"{name}-{stage}", data=batch_definition, suite=suite)
        )
        batch = frame[[c.name for c in part]]
        result = definition.run(batch_parameters={"dataframe": batch}, result_format=RESULT_FORMAT)
        for r in result.results:
            by_rule[r.expectation_config.meta["rule"]] = r
    for c in compiled:
        r = by_rule[c.name]
        error = _raised(r.exception_info)
        if error is not None:
            raise RuntimeError(
                f"Great Expectations could not evaluate edit rule {c.name!r}: {error}"
            )
        res = r.result
        report.outcomes.append(
            RuleOutcome(
                name=c.name,
                text=c.rule.text,
                severity=c.rule.severity,
                expectation=r.expectation_config.type,
                violations=int(res.get("unexpected_count", 0) or 0),
                undetermined=int(res.get("missing_count", 0) or 0),
            )
        )
    if docs is not None:
        # figures about the records: every file and folder owner-only from its creation (the
        # umask), and after (GE or a copy may carry a mode of its own)
        with owner_only_files():
            context.build_data_docs(site_names=[DOCS_SITE])
            make_offline(docs)  # styled with no network: local Bootstrap, jQuery, logo
        private_tree(docs)
        report.docs_path = docs / "index.html"
    report.seconds = time.perf_counter() - t0
    return report
