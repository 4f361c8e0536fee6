"""The figures between the mask and the decision as DuckDB aggregates (issue 45, step 2 of
``docs/concepts/scale.md``): class sizes, the magnitude dominance of the released groups,
moments, quantiles, bin counts and correlations of the raw (``raw.run_<id>``) and released
(``masked.run_<id>``) tables, joined on the row id where a figure pairs them.

No query returns records: each returns a few numbers or a table of aggregates of aggregates
(``SELECT f, count(*) FROM (SELECT count(*) AS f ... GROUP BY keys) GROUP BY f``: one row
per distinct class size, never one per class). A missing numeric value is NULL or NaN in
either table (pandas' NaN becomes NULL, Parquet keeps NaN): both read as missing
(``nullif(x, 'NaN')``: DuckDB compares NaN equal to NaN).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sdcflow.warehouse.warehouse import ROW_ID, Warehouse, _quoted, table_name


def value(column: str, numeric: bool, alias: str = "") -> str:
    """The SQL of one key's value, a NaN read as NULL for a numeric key."""
    q = f"{alias}.{_quoted(column)}" if alias else _quoted(column)
    return f"nullif({q}, 'NaN'::DOUBLE)" if numeric else q


def _keys_sql(keys: Sequence[str], numeric: Sequence[str], alias: str = "") -> str:
    return ", ".join(value(c, c in numeric, alias) for c in keys)


def class_sizes(
    warehouse: Warehouse, schema: str, run_id: str, keys: Sequence[str], numeric: Sequence[str]
) -> np.ndarray:
    """The class-size histogram of the ``schema`` table over ``keys``: classes of identical
    rows, a missing value a value of its own (DuckDB groups NULLs together), as
    :func:`~sdcflow.core.measures.anonymity.match_counts` counts them. Shape (s, 2): every
    distinct class size f and the number of classes of that size, by f."""
    query = (
        f"SELECT f, count(*) FROM (SELECT count(*) AS f FROM {table_name(schema, run_id)} "
        f"GROUP BY {_keys_sql(keys, numeric)}) GROUP BY f ORDER BY f"
    )
    with warehouse.connect(read_only=True) as con:
        rows = con.execute(query).fetchall()
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


def missing_patterns(
    warehouse: Warehouse, schema: str, run_id: str, keys: Sequence[str], numeric: Sequence[str]
) -> int:
    """The number of distinct patterns of missing keys in the ``schema`` table."""
    pattern = ", ".join(f"{value(c, c in numeric)} IS NULL" for c in keys)
    query = f"SELECT count(*) FROM (SELECT DISTINCT {pattern} FROM {table_name(schema, run_id)})"
    with warehouse.connect(read_only=True) as con:
        return int(con.execute(query).fetchone()[0])


def loose_match_sizes(
    warehouse: Warehouse, schema: str, run_id: str, keys: Sequence[str], numeric: Sequence[str]
) -> np.ndarray:
    """sdcMicro's match counts (a missing value matches any value, ``freqCalc``) as a
    histogram: shape (s, 2), every distinct count f and the records matched by f records.

    Records are first merged into classes of identical rows (pattern of missing keys and
    values), in DuckDB. For two patterns P and Q a record of P matches a record of Q exactly
    when they agree on the keys present in both (the core's per-pattern join,
    :mod:`sdcflow.core.measures.anonymity`): per pair, Q's classes are summed over those keys
    and joined with P's on them, one ``UNION ALL`` branch per pair, summed per class of P.
    M^2 branches for M patterns: the caller bounds M (:func:`missing_patterns`)."""
    table = table_name(schema, run_id)
    cols = [value(c, c in numeric) for c in keys]
    names = [f"k{j}" for j in range(len(keys))]
    flags = [f"m{j}" for j in range(len(keys))]
    classes = (
        "SELECT "
        + ", ".join(f"{c} AS {n}" for c, n in zip(cols, names, strict=True))
        + ", "
        + ", ".join(f"{c} IS NULL AS {m}" for c, m in zip(cols, flags, strict=True))
        + f", count(*) AS cnt FROM {table} GROUP BY ALL"
    )

    def where(pattern: tuple[bool, ...]) -> str:
        return " AND ".join(
            f"{m} = {str(bool(v)).lower()}" for m, v in zip(flags, pattern, strict=True)
        )

    with warehouse.connect(read_only=True) as con:
        con.execute(f"CREATE TEMP TABLE sdc_classes AS {classes}")
        patterns = con.execute(f"SELECT DISTINCT {', '.join(flags)} FROM sdc_classes").fetchall()
        case = " ".join(f"WHEN {where(P)} THEN {p}" for p, P in enumerate(patterns))
        # every class of identical rows, numbered, with the number of its pattern
        con.execute(
            "CREATE TEMP TABLE sdc_ids AS SELECT row_number() OVER () AS cid, "
            f"CASE {case} END AS pattern, * FROM sdc_classes"
        )
        branches = []
        for p, P in enumerate(patterns):
            for Q in patterns:
                common = [n for n, a, b in zip(names, P, Q, strict=True) if not a and not b]
                if common:  # Q's records summed over the keys present in both, joined on them
                    on = " AND ".join(f"a.{n} = b.{n}" for n in common)
                    summed = (
                        f"(SELECT {', '.join(common)}, sum(cnt) AS s FROM sdc_classes "
                        f"WHERE {where(Q)} GROUP BY ALL) b"
                    )
                    branches.append(
                        f"SELECT a.cid, b.s FROM sdc_ids a JOIN {summed} ON {on} "
                        f"WHERE a.pattern = {p}"
                    )
                else:  # no key present in both: every record of Q matches
                    branches.append(
                        f"SELECT a.cid, (SELECT sum(cnt) FROM sdc_classes WHERE {where(Q)}) AS s "
                        f"FROM sdc_ids a WHERE a.pattern = {p}"
                    )
        query = (
            "SELECT f, sum(cnt) FROM (SELECT i.cnt, m.f FROM sdc_ids i JOIN (SELECT cid, "
            f"sum(s) AS f FROM ({' UNION ALL '.join(branches)}) GROUP BY cid) m USING (cid)) "
            "GROUP BY f ORDER BY f"
        )
        rows = con.execute(query).fetchall()
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


@dataclass(frozen=True)
class ColumnProfile:
    """One numeric column of a table: values present, minimum, maximum, mean and sample
    variance over them (None where undefined)."""

    present: int
    minimum: float | None
    maximum: float | None
    mean: float | None
    variance: float | None


def profiles(
    warehouse: Warehouse, schema: str, run_id: str, columns: Sequence[str]
) -> dict[str, ColumnProfile]:
    """:class:`ColumnProfile` of every numeric ``column`` of the ``schema`` table, one scan."""
    if not columns:
        return {}
    parts = []
    for c in columns:
        v = value(c, True)
        parts.append(f"count({v}), min({v}), max({v}), avg({v}), var_samp({v})")
    query = f"SELECT {', '.join(parts)} FROM {table_name(schema, run_id)}"
    with warehouse.connect(read_only=True) as con:
        row = con.execute(query).fetchone()
    out = {}
    for j, c in enumerate(columns):
        n, lo, hi, mean, var = row[5 * j : 5 * j + 5]
        out[c] = ColumnProfile(int(n), lo, hi, mean, var)
    return out


def count_rows(warehouse: Warehouse, schema: str, run_id: str) -> int:
    with warehouse.connect(read_only=True) as con:
        return int(con.execute(f"SELECT count(*) FROM {table_name(schema, run_id)}").fetchone()[0])


def records_missing(warehouse: Warehouse, schema: str, run_id: str, columns: Sequence[str]) -> int:
    """Records of the ``schema`` table missing at least one of the numeric ``columns``."""
    if not columns:
        return 0
    missing = " OR ".join(f"{value(c, True)} IS NULL" for c in columns)
    query = f"SELECT count(*) FILTER (WHERE {missing}) FROM {table_name(schema, run_id)}"
    with warehouse.connect(read_only=True) as con:
        return int(con.execute(query).fetchone()[0])


def dominated_groups(
    warehouse: Warehouse,
    run_id: str,
    keys: Sequence[str],
    numeric: Sequence[str],
    magnitudes: Sequence[str],
    *,
    schema: str = "raw",
    n: int,
    k: float,
    p: float,
) -> tuple[int, int]:
    """Released groups failing the p % rule and the (n, k) rule on some column of
    ``magnitudes`` (:func:`~sdcflow.core.risk.dominance.dominance`), the groups being the
    classes of identical released rows over ``keys`` (``MaskResult.released_classes``),
    the contributions the values of the ``schema`` table (``raw``: as ingested, what the
    gates judge, ``sdcflow.gates.risk``), each column over the records that hold it. One
    ``GROUP BY`` over the raw and released tables joined on the row id, then one count over
    its groups.

    Per group and column, with x_1 >= x_2 >= ... the group's values and T their total:
    (n, k) fails when ``sum_{i<=n} x_i > k / 100 T`` ([1] eq. 4.1 of the core's module),
    p % fails when ``T - x_1 - x_2 < p / 100 x_1`` ([1] eq. 4.3); a total of 0 never fails.
    """
    if not magnitudes:
        return 0, 0
    aggs, p_fail, nk_fail = [], [], []
    for j, c in enumerate(magnitudes):
        v = value(c, True, "o")
        aggs.append(
            f"sum({v}) AS t{j}, max({v}) AS a{j}, coalesce(max({v}, 2)[2], 0) AS b{j}, "
            f"list_sum(max({v}, {int(n)})) AS top{j}"
        )
        p_fail.append(f"(t{j} > 0 AND t{j} - a{j} - b{j} < {float(p)!r} / 100.0 * a{j})")
        nk_fail.append(f"(t{j} > 0 AND top{j} > {float(k)!r} / 100.0 * t{j})")
    query = (
        f"SELECT count(*) FILTER (WHERE {' OR '.join(p_fail)}), "
        f"count(*) FILTER (WHERE {' OR '.join(nk_fail)}) FROM (SELECT {', '.join(aggs)} "
        f"FROM {table_name(schema, run_id)} o JOIN {table_name('masked', run_id)} m "
        f"USING ({ROW_ID}) GROUP BY {_keys_sql(keys, numeric, 'm')})"
    )
    with warehouse.connect(read_only=True) as con:
        p_groups, nk_groups = con.execute(query).fetchone()
    return int(p_groups or 0), int(nk_groups or 0)


def quantiles(
    warehouse: Warehouse, schema: str, run_id: str, probabilities: Mapping[str, Sequence[float]]
) -> dict[str, np.ndarray]:
    """numpy's default (linear) quantiles of numeric columns over their values present
    (DuckDB's ``quantile_cont``): column -> shape (len(probabilities[column]),).

    One scan a column: an exact quantile holds every value of its column in DuckDB's memory,
    which cannot spill it, so asking for all the columns in one scan held them all at once (a
    census of ten million records, ten keys: 800 MB of values, beyond a 1 GB limit)."""
    out: dict[str, np.ndarray] = {}
    if not probabilities:
        return out
    with warehouse.connect(read_only=True) as con:
        for column, probs in probabilities.items():
            listed = ", ".join(repr(float(q)) for q in probs)
            (row,) = con.execute(
                f"SELECT quantile_cont({value(column, True)}, [{listed}]) "
                f"FROM {table_name(schema, run_id)}"
            ).fetchone()
            out[column] = np.array([float(x) for x in row], dtype=np.float64)
    return out


def bin_counts(
    warehouse: Warehouse, schema: str, run_id: str, edges: Mapping[str, Sequence[float]]
) -> dict[str, np.ndarray]:
    """Values present per bin of each column's interior ``edges`` (sorted), every column in
    one scan: bin 0 ``(-inf, e_0]``, bin i ``(e_{i-1}, e_i]``, the last ``(e_-1, inf)``
    (``np.searchsorted(edges, x, "left")``, the edges below x, as
    :func:`~sdcflow.report.plots.safe_bins` counts): column -> shape (len(edges[column]) + 1,).
    One ``histogram`` of the bin number per column (a missing value has none: NULL)."""
    if not edges:
        return {}
    parts = []
    for column, cuts in edges.items():
        v = value(column, True)
        below = " + ".join(f"({v} > {float(e)!r})::INTEGER" for e in cuts) or f"{v} * 0"
        parts.append(f"histogram({below})")
    query = f"SELECT {', '.join(parts)} FROM {table_name(schema, run_id)}"
    with warehouse.connect(read_only=True) as con:
        row = con.execute(query).fetchone()
    out = {}
    for (column, cuts), counts in zip(edges.items(), row, strict=True):
        bins = np.zeros(len(cuts) + 1, dtype=np.int64)
        for b, c in (counts or {}).items():
            bins[int(b)] = int(c)
        out[column] = bins
    return out


def complete_correlations(
    warehouse: Warehouse, run_id: str, columns: Sequence[str]
) -> tuple[int, np.ndarray, np.ndarray]:
    """Pearson correlations of the raw and released ``columns`` over the records that have
    every one of them in both tables (as the report's correlation section takes them):
    ``(records, raw (d, d), released (d, d))``, NaN for a constant column."""
    d = len(columns)
    o = [value(c, True, "o") for c in columns]
    m = [value(c, True, "m") for c in columns]
    complete = " AND ".join(f"{x} IS NOT NULL" for x in [*o, *m]) or "TRUE"
    pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
    parts = ["count(*)"] + [f"corr({o[i]}, {o[j]}), corr({m[i]}, {m[j]})" for i, j in pairs]
    query = (
        f"SELECT {', '.join(parts)} FROM {table_name('raw', run_id)} o JOIN "
        f"{table_name('masked', run_id)} m USING ({ROW_ID}) WHERE {complete}"
    )
    with warehouse.connect(read_only=True) as con:
        row = con.execute(query).fetchone()
    raw, released = np.eye(d), np.eye(d)
    for t, (i, j) in enumerate(pairs):
        for matrix, v in ((raw, row[1 + 2 * t]), (released, row[2 + 2 * t])):
            matrix[i, j] = matrix[j, i] = np.nan if v is None else float(v)
    return int(row[0]), raw, released
