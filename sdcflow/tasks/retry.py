"""The retry policy of the release's I/O tasks (Prefect task retries).

Tasks that read or write the warehouse and whose effect is the same when repeated
(``CREATE OR REPLACE`` tables, rows deleted before they are inserted) retry on a transient
error only (:func:`sdcflow.warehouse.transient.is_transient`): ``ingest``,
``validate-edits``, ``repair-edits`` and ``store-masked``. Two retries, after 1 s and 5 s
(each stretched by up to 50 % at random so that two runs do not retry in step). Bad input,
refused checks, a full disk or a corrupt file fail at once.

Not retried: ``mask`` and ``checks`` (computations: a retry gives the same error, and a
randomized method would draw again), ``publish`` (the swap is the commit point; what fails
before it left nothing, what fails after it is reported as published) and the reports.
"""

from __future__ import annotations

from typing import Any

from sdcflow.warehouse.transient import is_transient

__all__ = ["IO_RETRY", "retry_transient"]


def retry_transient(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect ``retry_condition_fn``: retry when the task failed on a transient error.

    Prefect calls it with the task, the task run and the Failed state, whose ``data`` is the
    exception the task raised."""
    error = getattr(state, "data", None)
    return isinstance(error, BaseException) and is_transient(error)


IO_RETRY: dict[str, Any] = {
    "retries": 2,
    "retry_delay_seconds": [1, 5],
    "retry_jitter_factor": 0.5,
    "retry_condition_fn": retry_transient,
}
