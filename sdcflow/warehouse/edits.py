"""Edit-rule evaluation inside the warehouse: DuckDB computes one check column per rule.

The rule SQL comes from :mod:`sdcflow.expectations.compile` (identifiers quoted, only the
rule's own constants inlined); this module takes it as data and does not import the compiler.
The table it runs on is an allow-listed, schema-qualified run table
(:func:`sdcflow.warehouse.warehouse.table_name`), and every value (run id, stage, rule name)
travels as a ``?`` parameter. Violating row ids go to ``audit.violations``; what leaves this
module is a frame of check columns (for Great Expectations, in memory) and counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from sdcflow.errors import InputError, Reason
from sdcflow.warehouse.sql import quote_identifier
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse, table_name


class CompiledRule(Protocol):
    """What this module needs of a compiled rule
    (:class:`sdcflow.expectations.compile.CompiledRule`)."""

    @property
    def name(self) -> str: ...

    @property
    def text(self) -> str: ...

    value_sql: str
    holds_sql: str


STAGES = ("raw", "edited", "masked", "published")
RULES_PER_QUERY = 256  # rules evaluated by one SQL statement

_DDL = """
CREATE SCHEMA IF NOT EXISTS audit;
CREATE TABLE IF NOT EXISTS audit.violations (
    run_id VARCHAR NOT NULL,
    stage VARCHAR NOT NULL,
    rule VARCHAR NOT NULL,
    sdc_row_id BIGINT NOT NULL
);
"""


def _table(stage: str, run_id: str) -> str:
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; one of {STAGES}")
    return table_name(stage, run_id)


def _select_sql(table: str, compiled: Sequence[CompiledRule], *, holds: bool) -> str:
    cols = [
        f"{c.holds_sql if holds else c.value_sql} AS {quote_identifier(c.name)}" for c in compiled
    ]
    return f"SELECT {quote_identifier(ROW_ID)}, {', '.join(cols)} FROM {table} ORDER BY {ROW_ID}"


def _explain(
    con: duckdb.DuckDBPyConnection,
    table: str,
    compiled: Sequence[CompiledRule],
    e: duckdb.Error,
) -> None:
    """Find the first rule whose SQL fails on ``table`` and raise an InputError naming it.

    Binder errors (names and types, never values) are shown; for a data-dependent failure such
    as a conversion error, whose message could quote a value, only its kind is named.
    """
    for c in compiled:
        try:
            con.execute(f"SELECT count({c.holds_sql}) FROM {table}").fetchone()
        except duckdb.Error as inner:
            if isinstance(inner, duckdb.BinderException):
                detail = str(inner).splitlines()[0]
            else:
                detail = f"{type(inner).__name__} on some record"
            raise InputError(
                f"edit rule {c.name!r} ({c.text}) cannot be evaluated on the data: {detail}; "
                "check that the rule's columns have the right type (numbers for arithmetic, text "
                "for quoted values)",
                code=Reason.RULE_EVALUATION,
                field=c.name,
            ) from e
    raise InputError(
        f"the edit rules cannot be evaluated on {table} ({type(e).__name__}); check the types "
        "of the columns the rules read",
        code=Reason.RULE_EVALUATION,
    ) from e


def check_evaluable(data: Any, compiled: Sequence[CompiledRule]) -> None:
    """Evaluate every rule on the source as read (in memory; nothing is written), as the
    raw stage of a run will: a rule DuckDB cannot evaluate on these columns -- a binder
    error, or a conversion such as ``d == 'yesterday'`` on a DATE column, which DuckDB raises
    only when it reads a row -- is an :class:`InputError` (``rule-evaluation``) before a run
    exists, not a failed run with a warehouse and a report folder behind it. ``data``: an
    Arrow table, or a :class:`~sdcflow.warehouse.sources.SourceData` scanned from its file.
    """
    if not compiled:
        return
    con = duckdb.connect(":memory:")
    try:
        if isinstance(data, pa.Table):
            con.register("src", data)
        else:  # a SourceData: DuckDB reads the file itself, a batch at a time
            data.attach(con)
        for first in range(0, len(compiled), RULES_PER_QUERY):
            part = compiled[first : first + RULES_PER_QUERY]
            counts = [f"count({c.value_sql}), count({c.holds_sql})" for c in part]
            try:
                con.execute(f"SELECT {', '.join(counts)} FROM src").fetchone()
            except duckdb.Error as e:
                _explain(con, "src", part, e)
    finally:
        con.close()


def evaluate_rules(
    warehouse: Warehouse,
    stage: str,
    run_id: str,
    compiled: Sequence[CompiledRule],
) -> pd.DataFrame:
    """Evaluate every rule's check column on the ``stage`` table of ``run_id``.

    Parameters
    ----------
    warehouse : Warehouse
    stage : {"raw", "edited", "masked", "published"}
    run_id : str
    compiled : sequence of CompiledRule
        Rule names must be unique (they become column names).

    Returns
    -------
    DataFrame with n rows
        ``sdc_row_id`` and one check column per rule (named after the rule), ordered by row id.
        It holds residuals and the values of set / not-null columns: keep it in memory, never
        log it.
    """
    table = _table(stage, run_id)
    if not compiled:
        with warehouse.connect(read_only=True) as con:
            return con.execute(
                f"SELECT {quote_identifier(ROW_ID)} FROM {table} ORDER BY {ROW_ID}"
            ).df()
    parts = []
    with warehouse.connect(read_only=True) as con:
        # one query per 256 rules: DuckDB binds a very wide SELECT in more than linear time
        for first in range(0, len(compiled), RULES_PER_QUERY):
            part = compiled[first : first + RULES_PER_QUERY]
            try:
                frame = con.execute(_select_sql(table, part, holds=False)).df()
            except duckdb.Error as e:
                _explain(con, table, compiled, e)
                raise  # pragma: no cover - _explain always raises
            parts.append(frame if not parts else frame.drop(columns=[ROW_ID]))
    return parts[0] if len(parts) == 1 else pd.concat(parts, axis=1)


def record_violations(
    warehouse: Warehouse,
    stage: str,
    run_id: str,
    compiled: Sequence[CompiledRule],
) -> dict[str, dict[str, int]]:
    """Store the row ids violating each rule in ``audit.violations`` and count them.

    Replaces what an earlier call stored for the same run and stage. A record violates a rule
    when the rule's boolean SQL is FALSE; NULL (a missing value) is *undetermined*. The rules
    are evaluated in one scan per 256 rules (an ``UNPIVOT`` of their boolean columns), not one
    query per rule, so the cost is linear in the number of rules.

    Returns
    -------
    dict
        ``{rule name: {"violations": v, "undetermined": u}}``.
    """
    table = _table(stage, run_id)
    counts: dict[str, dict[str, int]] = {
        c.name: {"violations": 0, "undetermined": 0} for c in compiled
    }
    with warehouse.connect() as con:
        con.execute(_DDL)
        con.execute("DELETE FROM audit.violations WHERE run_id = ? AND stage = ?", [run_id, stage])
        try:
            for first in range(0, len(compiled), RULES_PER_QUERY):
                part = compiled[first : first + RULES_PER_QUERY]
                aliases = [f"r{i}" for i in range(len(part))]
                cols = ", ".join(
                    f"({c.holds_sql}) AS {a}" for c, a in zip(part, aliases, strict=True)
                )
                con.execute(
                    "CREATE OR REPLACE TEMP TABLE sdc_not_true AS SELECT name, "
                    f"{quote_identifier(ROW_ID)} AS row_id, value FROM (SELECT "
                    f"{quote_identifier(ROW_ID)}, {cols} FROM {table}) UNPIVOT INCLUDE NULLS "
                    f"(value FOR name IN ({', '.join(aliases)})) WHERE value IS NOT TRUE"
                )
                names = {a: c.name for a, c in zip(aliases, part, strict=True)}
                con.execute(
                    "INSERT INTO audit.violations SELECT ?, ?, m.rule, v.row_id "
                    "FROM sdc_not_true v JOIN (SELECT unnest(?::VARCHAR[]) AS alias, "
                    "unnest(?::VARCHAR[]) AS rule) m ON v.name = m.alias "
                    "WHERE v.value = FALSE ORDER BY m.alias, v.row_id",
                    [run_id, stage, list(names), list(names.values())],
                )
                rows = con.execute(
                    "SELECT name, count(*) FILTER (WHERE value = FALSE), "
                    "count(*) FILTER (WHERE value IS NULL) FROM sdc_not_true GROUP BY name"
                ).fetchall()
                for alias, v, u in rows:
                    counts[names[alias]] = {"violations": int(v), "undetermined": int(u)}
            con.execute("DROP TABLE IF EXISTS sdc_not_true")
        except duckdb.Error as e:
            _explain(con, table, compiled, e)
    return counts


def violating_row_ids(
    warehouse: Warehouse, stage: str, run_id: str, rule: str | None = None
) -> pd.DataFrame:
    """The stored violations of a run and stage (optionally one rule): ``rule, sdc_row_id``."""
    with warehouse.connect(read_only=True) as con:
        exists = con.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = 'audit' AND table_name = 'violations'"
        ).fetchone()[0]
        if not exists:
            return pd.DataFrame({"rule": pd.Series(dtype=str), ROW_ID: pd.Series(dtype="int64")})
        sql = "SELECT rule, sdc_row_id FROM audit.violations WHERE run_id = ? AND stage = ?"
        params: list[str] = [run_id, stage]
        if rule is not None:
            sql += " AND rule = ?"
            params.append(rule)
        return con.execute(sql + " ORDER BY rule, sdc_row_id", params).df()


def matching_row_ids(
    warehouse: Warehouse, stage: str, run_id: str, predicate_sql: str
) -> np.ndarray:
    """Row ids of the ``stage`` table where a compiled boolean predicate is TRUE (int64)."""
    table = _table(stage, run_id)
    with warehouse.connect(read_only=True) as con:
        ids = con.execute(
            f"SELECT {quote_identifier(ROW_ID)} FROM {table} "
            f"WHERE coalesce({predicate_sql}, FALSE) ORDER BY {ROW_ID}"
        ).fetchnumpy()[ROW_ID]
    return np.asarray(ids, dtype=np.int64)
