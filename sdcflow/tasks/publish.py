"""Publish: the manifest (everything the run decided but the secret seed) and the atomic
write of the release."""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from prefect import get_run_logger, task

from sdcflow.gates import GateOutcome
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import STEP
from sdcflow.warehouse.publish import CHUNK_ROWS, Chunked, write_release
from sdcflow.warehouse.warehouse import Warehouse

SOFTWARE = (
    "sdcflow",
    "numpy",
    "scipy",
    "numba",
    "pandas",
    "pyarrow",
    "duckdb",
    "prefect",
    "great-expectations",
    "pydantic",
)


def software_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in SOFTWARE:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


def manifest(
    spec: ReleaseSpec,
    run_id: str,
    checks: Sequence[GateOutcome],
    method_details: Mapping[str, Any],
    edit_violations: Mapping[str, int] | None,
    edit_rules: Mapping[str, Any] | None,
    information_loss: Mapping[str, float] | None = None,
    *,
    spec_sha256: str | None = None,
) -> dict[str, Any]:
    """What the run decided, for ``manifest.json`` (transparency: everything but the seed).
    ``spec_sha256``: the hash the run recorded when it started (default: computed now).

    ``information_loss``: IL against the raw file (``raw``) and, where a repair changed
    records, against the repaired ones (``repaired``), labelled in the manifest."""
    il = dict(information_loss or {})
    return {
        "release": spec.release,
        "run_id": run_id,
        "spec": spec.public_dict(),
        "spec_sha256": spec_sha256 or spec.sha256(),
        "method": spec.method.model_dump(mode="json"),
        "method_details": dict(method_details),
        "checks": [o.as_dict() for o in checks],
        "edit_violations": dict(edit_violations) if edit_violations is not None else None,
        "edit_rules": dict(edit_rules) if edit_rules is not None else None,
        "information_loss": {
            "against_raw_file": il.get("raw"),
            "against_repaired_records": il.get("repaired"),
            "gated": "against_raw_file (max_information_loss)",
        }
        if il
        else None,
        "software": software_versions(),
    }


@task(name="publish", **STEP)
def publish(
    spec: ReleaseSpec,
    warehouse: Warehouse,
    run_id: str,
    manifest: dict[str, Any],
    rng: np.random.Generator,
    dtypes: Mapping[str, Any] | None = None,
    report: Path | None = None,
    force: bool = False,
    after_swap: Callable[[Path], None] | None = None,
) -> Path:
    """Shuffle rows (file order could link records to the source), drop the row id, and
    write the release atomically; also keep a copy in the warehouse's ``published`` schema.
    ``force`` (``--force``): a previous release whose files were edited is replaced too.
    ``after_swap``: called with the release folder the moment it is live
    (:func:`~sdcflow.warehouse.publish.write_release`). ``dtypes``: the pandas types of the
    released columns as masked (column -> dtype, without the row id), which DuckDB does not
    keep (a nullable ``Int64`` reads back as ``int64``): each chunk is given them, so that the
    files are those of the released frame.

    The released records are read from the run's ``masked`` table in the warehouse, a chunk
    at a time in the shuffled order (one query per chunk, its row ids joined): the process
    holds the permutation (8 bytes a record) and one chunk, never the release; the
    ``published`` copy is made inside DuckDB. The files are those of the whole shuffled
    frame written at once."""

    def _typed(chunks: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        # a categorical type carries all its categories: every chunk has the whole frame's
        for chunk in chunks:
            yield chunk.astype(dict(dtypes)) if dtypes else chunk
            del chunk  # not held while the next one is read

    n = warehouse.count_rows("masked", run_id)
    order = rng.permutation(n)
    manifest = {**manifest, "rows_shuffled": True, "published_at": datetime.now(UTC).isoformat()}
    extra = {"report.html": report.read_bytes()} if report is not None else None
    path = write_release(
        spec.output_dir,
        spec.release,
        Chunked(lambda: _typed(warehouse.shuffled_chunks("masked", run_id, order, CHUNK_ROWS))),
        manifest,
        extra_files=extra,
        force=force,
        after_swap=after_swap,
    )
    logger = get_run_logger()
    try:
        warehouse.copy_shuffled("masked", "published", run_id, order)
    except Exception as e:  # the release is live: a missing warehouse copy must not hide that
        logger.warning(
            "published, but its copy in the warehouse's published schema could not be stored "
            "(%s: %s)",
            type(e).__name__,
            str(e).splitlines()[0][:200] if str(e) else "",
        )
    logger.info("published %d records to %s", n, path)
    return path
