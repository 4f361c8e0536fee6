"""Which path a release takes: in memory, or streamed (every table in the warehouse).

A file of at least ``SDCFLOW_STREAMED_ROWS`` records (default :data:`STREAMED_ROWS`) whose
every step the streamed path serves -- the mask in pieces
(:func:`~sdcflow.tasks.cells.streamed_path`) and every gate as an aggregate
(:func:`~sdcflow.tasks.aggregates.aggregate_gates`) -- takes it
(:mod:`sdcflow.flows.streamed`); any other release is masked in memory. On numeric keys
both paths publish the same bytes (tested); with categorical keys they differ only where a
stratum with missing numbers holds fewer than k values of a key, which the streamed path
completes inside the stratum (counted in the manifest, ``docs/concepts/scale.md``). The
streamed path never holds the table in the flow's process,
the in-memory one also writes Great Expectations' Data Docs and the figures that need the
whole file at once (the information loss's lower bound, SUDA2). The choice depends on the
spec and the file, never on the runner, and the manifest records which path ran.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from sdcflow.preflight.plan import ReleasePlan
from sdcflow.tasks.aggregates import AGGREGATE_GATES, aggregate_gates
from sdcflow.tasks.cells import streamed_path

#: Records from which a release the streamed path serves takes it: below, the in-memory
#: path is as fast and also gives the figures that need the whole file.
STREAMED_ROWS = 500_000

IN_MEMORY = "in memory"
STREAMED = "streamed"


def streamed_rows() -> int:
    """``SDCFLOW_STREAMED_ROWS`` (a count of records, ``0`` for every file), else
    :data:`STREAMED_ROWS`."""
    text = os.environ.get("SDCFLOW_STREAMED_ROWS", "").strip()
    if not text:
        return STREAMED_ROWS
    try:
        rows = int(text)
    except ValueError:
        raise ValueError(
            f"SDCFLOW_STREAMED_ROWS={text!r} is not a count of records; set it to a whole "
            "number such as 500000, or unset it"
        ) from None
    if rows < 0:
        raise ValueError(f"SDCFLOW_STREAMED_ROWS={rows} is negative; set it to 0 or more")
    return rows


def release_path(plan: ReleasePlan, figures: Sequence[str] = ()) -> tuple[str, str | None]:
    """``("streamed", None)``, or ``("in memory", why)``: the path of the release the
    preflight planned (see the module docstring). ``figures``: the gates whose figures the
    caller asks for beside the spec's (``sdcflow compare``); one the streamed path does not
    compute from aggregates keeps the release in memory."""
    rows, least = plan.profile.rows, streamed_rows()
    if rows < least:
        return IN_MEMORY, f"{rows} records, fewer than the {least} of the streamed path"
    numeric = [k.name for k in plan.resolved_keys if k.kind == "numeric"]
    why = streamed_path(plan.spec, plan.resolved_keys, plan.rules) or aggregate_gates(
        plan.spec, numeric
    )
    if why:
        return IN_MEMORY, why
    records = sorted(set(figures) - AGGREGATE_GATES)
    if records:
        return IN_MEMORY, f"the figure(s) {', '.join(records)} asked for need the records"
    return STREAMED, None
