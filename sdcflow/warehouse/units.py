"""The whole file's units of the rules' columns, from the warehouse.

A release masked in pieces moves a stratum's groups onto the linear rules in the units the
in-memory path takes over the whole file
(:class:`~sdcflow.core.linear.file_units.FileUnits`): each column's mean and standard
deviation, exactly rounded sums over values streamed from DuckDB a chunk at a time, so they
are the in-memory figures bit for bit; and whether standardized units keep the column's
values apart, from its median, its largest magnitude and the spread of the values nearest
the median, asked of DuckDB.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import duckdb
import numpy as np

from sdcflow.core.linear.file_units import (
    FileUnits,
    exact_moments,
    resolution_lost,
    units_from_moments,
)
from sdcflow.warehouse.warehouse import Warehouse, _quoted, table_name

# values a chunk of the moments' passes holds
CHUNK = 1 << 20


def rule_units(
    wh: Warehouse, source: str, run_id: str, columns: Sequence[str], rows: int = CHUNK
) -> FileUnits:
    """:class:`FileUnits` of ``columns`` over the ``source`` table of ``run_id``: the figures
    :func:`~sdcflow.core.linear.file_units.file_units` and
    :func:`~sdcflow.core.validation.lost_resolution` give on the whole table in memory,
    never holding more than ``rows`` values of one column."""
    table = table_name(source, run_id)
    with wh.connect(read_only=True) as con:
        records = int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        moments: list[tuple[int, float, float]] = []
        sizes: list[float] = []
        tops: list[float] = []
        spreads: list[float] = []
        for column in columns:
            x = f"nullif(CAST({_quoted(column)} AS DOUBLE), 'NaN'::DOUBLE)"
            present = f"SELECT {x} AS x FROM {table} WHERE {x} IS NOT NULL"

            def chunks(present: str = present) -> Iterator[np.ndarray]:
                cursor = con.cursor()  # its own result: the others' queries run beside it
                try:
                    for batch in cursor.sql(present).to_arrow_reader(rows):
                        yield batch.column(0).to_numpy(zero_copy_only=False)
                finally:
                    cursor.close()

            moments.append(exact_moments(chunks))
            top, spread = _top_and_spread(con, present)
            _, mean, sd = moments[-1]
            size = abs(mean) + sd
            if not math.isfinite(size) and math.isfinite(top) and top > 0:
                # an sd past the float range: on the values over their largest magnitude,
                # as lost_resolution takes it
                _, mean, sd = exact_moments(
                    lambda chunks=chunks, top=top: (c / top for c in chunks())
                )
                size = (abs(mean) + sd) * top
            sizes.append(size)
            tops.append(top)
            spreads.append(spread)
    lost = resolution_lost(np.array(sizes), np.array(tops), np.array(spreads))
    return units_from_moments(columns, records, moments, lost)


def _top_and_spread(con: duckdb.DuckDBPyConnection, present: str) -> tuple[float, float]:
    """The values' largest magnitude and their typical spread as
    :func:`~sdcflow.core.validation.lost_resolution` measures it: the mean distance from the
    median of the ``max(1, int(0.95 n))`` values nearest it, at least 1e-9 of the median;
    where that is 0, the distance to the nearest other value (``inf``: constant)."""
    n, med, top = con.execute(
        f"SELECT count(*), median(x), max(abs(x)) FROM ({present})"
    ).fetchone()
    if not n:
        return 0.0, np.inf
    med, top = float(med), float(top)
    kept = max(1, int(0.95 * n))
    position = (kept - 1) / (n - 1) if n > 1 else 0.0
    deviations = f"SELECT abs(x - $med) AS d FROM ({present})"
    (threshold,) = con.execute(
        f"SELECT quantile_disc(d, $q) FROM ({deviations})", {"med": med, "q": position}
    ).fetchone()
    below, fewer, nearest = con.execute(
        f"SELECT coalesce(sum(d) FILTER (WHERE d < $t), 0), count(*) FILTER (WHERE d < $t), "
        f"min(d) FILTER (WHERE d > 0) FROM ({deviations})",
        {"med": med, "t": threshold},
    ).fetchone()
    # the kept nearest: those below the threshold, and as many at it as complete them
    spread = (float(below) + (kept - int(fewer)) * float(threshold)) / kept
    spread = max(spread, 1e-9 * abs(med))
    if spread == 0:
        spread = np.inf if nearest is None else float(nearest)
    return top, spread


def has_missing(wh: Warehouse, source: str, run_id: str, columns: Sequence[str]) -> bool:
    """Whether some record of the ``source`` table of ``run_id`` misses a value of
    ``columns`` (NULL or NaN)."""
    if not columns:
        return False
    gaps = " OR ".join(
        f"nullif(CAST({_quoted(c)} AS DOUBLE), 'NaN'::DOUBLE) IS NULL" for c in columns
    )
    with wh.connect(read_only=True) as con:
        return (
            con.execute(
                f"SELECT 1 FROM {table_name(source, run_id)} WHERE {gaps} LIMIT 1"
            ).fetchone()
            is not None
        )
