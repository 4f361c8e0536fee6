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
    """Store the source in ``raw.run_<id>`` and read back the records with their row ids."""
    table = warehouse.ingest(plan.data, run_id)
    frame = warehouse.read_frame("raw", run_id)
    get_run_logger().info("ingested %d records into %s", len(frame), table)
    return frame
