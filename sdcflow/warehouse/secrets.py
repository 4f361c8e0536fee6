"""The data owner's secrets in the warehouse: the fuzzy mappings of sensitive columns.

A mapping (its sets, combiner and the random pick's seed) lets whoever holds it invert the
mapped column, so it lives only here, in a schema of its own (``owner_secrets``), written by
the release run that made it and read back, read-only, by ``sdcflow remap``. It never goes to
the manifest, the report, a log line, a Prefect artifact or a flow-run parameter. The
warehouse already holds the raw records, so it is the owner's in any case.

Values travel as ``?`` parameters; the table name is fixed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sdcflow.errors import InputError, Reason
from sdcflow.warehouse.warehouse import Warehouse

SCHEMA = "owner_secrets"
TABLE = f"{SCHEMA}.fuzzy_maps"

_DDL = f"""
CREATE SCHEMA IF NOT EXISTS {SCHEMA};
CREATE TABLE IF NOT EXISTS {TABLE} (
    run_id VARCHAR NOT NULL,
    release VARCHAR NOT NULL,
    column_name VARCHAR NOT NULL,
    mapping JSON NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, column_name)
);
"""


def store_fuzzy_maps(
    warehouse: Warehouse, run_id: str, release: str, mappings: Mapping[str, Mapping[str, Any]]
) -> None:
    """Store the mapping of every column of one run (replacing a previous store of the run)."""
    now = datetime.now(UTC)
    rows = [
        (run_id, release, column, json.dumps(mapping, sort_keys=True), now)
        for column, mapping in mappings.items()
    ]
    with warehouse.connect() as con:
        con.execute(_DDL)
        con.execute(f"DELETE FROM {TABLE} WHERE run_id = ?", [run_id])
        if rows:
            con.executemany(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?)", rows)


def load_fuzzy_maps(
    path: str | Path, release: str, run_id: str | None = None
) -> tuple[str, dict[str, dict[str, Any]]]:
    """The mappings of ``run_id``, or of the latest published run of ``release``; read-only.

    Returns ``(run_id, {column: mapping})``.

    Raises
    ------
    InputError
        ``WAREHOUSE`` when there is no warehouse file; ``MAPPING_MISSING`` when no mapping
        is stored for that run or release.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(
            f"warehouse {path} does not exist; run `sdcflow release SPEC` first (the mapping "
            "is stored by the run that publishes)",
            code=Reason.WAREHOUSE,
        )
    with Warehouse(path).connect(read_only=True) as con:
        present = con.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = ? AND table_name = 'fuzzy_maps'",
            [SCHEMA],
        ).fetchone()
        if not present or not present[0]:
            rows = []
        elif run_id is None:
            rows = con.execute(
                f"SELECT m.run_id, m.column_name, m.mapping FROM {TABLE} m "
                "JOIN audit.runs r ON r.run_id = m.run_id "
                "WHERE m.release = ? AND r.status = 'published' AND m.run_id = ("
                f"  SELECT m2.run_id FROM {TABLE} m2 JOIN audit.runs r2 ON r2.run_id = m2.run_id"
                "   WHERE m2.release = ? AND r2.status = 'published'"
                "   ORDER BY r2.started_at DESC LIMIT 1)",
                [release, release],
            ).fetchall()
        else:
            rows = con.execute(
                f"SELECT run_id, column_name, mapping FROM {TABLE} "
                "WHERE run_id = ? AND release = ?",
                [run_id, release],
            ).fetchall()
    if not rows:
        which = f"run {run_id}" if run_id else f"a published run of release {release!r}"
        raise InputError(
            f"no fuzzy mapping of {which} is stored in {path}; publish the release with "
            "`sdcflow release SPEC`, or give --run with the id of a run that mapped columns "
            "(`sdcflow runs SPEC` lists them)",
            code=Reason.MAPPING_MISSING,
        )
    return rows[0][0], {column: json.loads(mapping) for _, column, mapping in rows}
