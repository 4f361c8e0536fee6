"""Ingest: the source, as the preflight read it, into the warehouse's ``raw`` schema."""

from __future__ import annotations

import pandas as pd
from prefect import get_run_logger, task

from sdcflow.preflight.plan import ReleasePlan
from sdcflow.tasks import STEP
from sdcflow.tasks.retry import IO_RETRY
from sdcflow.warehouse.warehouse import Warehouse


@task(name="ingest", **IO_RETRY, **STEP)
def ingest(plan: ReleasePlan, warehouse: Warehouse, run_id: str) -> pd.DataFrame:
    """Store the source in ``raw.run_<id>`` and read back the records with their row ids
    (the in-memory path: the whole table in this process)."""
    table = warehouse.ingest_source(plan.data, run_id, plan.source_sha256)
    frame = warehouse.read_frame("raw", run_id)
    get_run_logger().info("ingested %d records into %s", len(frame), table)
    return frame


@task(name="ingest_streamed", **IO_RETRY, **STEP)
def ingest_streamed(plan: ReleasePlan, warehouse: Warehouse, run_id: str) -> int:
    """Store the source in ``raw.run_<id>`` (DuckDB reads the file, a private copy whose
    sha256 is the preflight's: :meth:`~sdcflow.warehouse.warehouse.Warehouse.ingest_source`)
    and return its number of records; no record is read back into this process."""
    table = warehouse.ingest_source(plan.data, run_id, plan.source_sha256)
    rows = warehouse.count_rows("raw", run_id)
    get_run_logger().info("ingested %d records into %s", rows, table)
    return rows
