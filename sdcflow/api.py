"""sdcflow from Python: a release as one call.

>>> import sdcflow
>>> outcome = sdcflow.release("examples/business_survey/release.yaml")   # doctest: +SKIP
>>> outcome.status, outcome.published, outcome.report                    # doctest: +SKIP

:func:`release` runs exactly what ``sdcflow release`` runs: the same preflight (bad input
raises the same :class:`~sdcflow.errors.InputError`, with its ``code``, before anything is
written), then the release flow on a Prefect API (a temporary one unless
``PREFECT_API_URL`` names a server). A release that its checks refuse is an answer, not an
error: it returns the :class:`~sdcflow.flows.outcome.ReleaseOutcome` with status
``refused``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sdcflow.errors import ChecksFailed
from sdcflow.flows.outcome import ReleaseOutcome
from sdcflow.spec.load import load_spec, spec_from_dict
from sdcflow.spec.schema import ReleaseSpec

__all__ = ["release"]


def release(
    spec: str | Path | Mapping[str, Any] | ReleaseSpec,
    publish: bool = True,
    *,
    base_dir: str | Path | None = None,
    force: bool = False,
) -> ReleaseOutcome:
    """Run a release (or, with ``publish=False``, everything but publishing).

    Parameters
    ----------
    spec : path of a YAML spec, a mapping with the spec's fields, or a ``ReleaseSpec``
    publish : bool
        False runs every step and check and publishes nothing (``sdcflow check``).
    base_dir : path, optional
        Folder that relative paths of a mapping spec (``source``, ``output``...) are read
        against; default the current folder. Ignored for a file (its own folder) and a
        ``ReleaseSpec``.
    force : bool
        Publish even when the live release came from the same input and spec (as
        ``sdcflow release --force``); without it such a run returns status ``unchanged``.
        Also replaces a live release whose files were edited since (else ``InputError``).

    Returns
    -------
    ReleaseOutcome
        ``status`` is ``published``, ``checked``, ``refused`` (a failed check; nothing
        published) or ``unchanged`` (already published from the same input and spec, by
        ``previous_run``; nothing new published); figures, verdicts, the report and the
        published folder are on it.

    Raises
    ------
    InputError
        Bad input, with the command line's reason code (``exc.code``); nothing is written.
    """
    if isinstance(spec, ReleaseSpec):
        loaded, where = spec, spec.base_dir / "<ReleaseSpec>"
    elif isinstance(spec, Mapping):
        folder = Path(base_dir) if base_dir is not None else Path.cwd()
        loaded, where = spec_from_dict(dict(spec), folder, "spec"), folder / "<mapping>"
    else:
        loaded, where = load_spec(spec), Path(spec).resolve()

    from sdcflow.preflight.plan import plan_release  # DuckDB: after the spec

    plan = plan_release(loaded, force=force)

    from sdcflow.flows.release import release as release_flow
    from sdcflow.flows.runners import with_runner  # runner: dask -- prefect-dask
    from sdcflow.flows.server import prefect_defaults

    # Prefect's settings for the run (no analytics, time for its temporary server to start)
    # unless set otherwise; the process's environment is left as it is
    try:
        with prefect_defaults():
            return with_runner(release_flow, plan.spec)(
                str(where), publish=publish, plan=plan, force=force
            )
    except ChecksFailed as e:
        return e.outcome
