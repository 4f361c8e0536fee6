"""How a caller learns that a release run's release went live.

The caller hands a :class:`Publications` to the release flow (``release(...,
publications=...)``); the run notes its swap in it the moment the release is live, then its
outcome. When an error or a signal ends the run after the swap -- in the flow, in Prefect's
engine finishing the flow run, or in the caller's own code -- the release is live all the
same, and the caller reads it here to say so. A value the caller owns, not a module's
global: two callers in one process never see each other's runs.

Imports nothing heavy: the command line makes one before it imports Prefect.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sdcflow.flows.outcome import ReleaseOutcome


class Publications:
    """The releases a caller's runs put in place, by run id: the run's
    :class:`ReleaseOutcome` once the flow had it, else the release folder the swap put in
    place. Empty until a swap: a caller that finds a run here after an error knows its
    release is live."""

    __slots__ = ("_runs",)

    def __init__(self) -> None:
        self._runs: dict[str, ReleaseOutcome | Path] = {}

    def swapped(self, run_id: str, folder: Path) -> None:
        """The swap put ``run_id``'s release in place at ``folder``: live from here on."""
        self._runs.setdefault(run_id, folder)

    def published(self, outcome: ReleaseOutcome) -> None:
        """The run's outcome, once the flow has decided it (it replaces the bare folder)."""
        self._runs[outcome.run_id] = outcome

    def first(self) -> tuple[str, ReleaseOutcome | Path] | None:
        """The first run published, with its outcome or folder; None when none was."""
        return next(iter(self._runs.items()), None)

    def __bool__(self) -> bool:
        return bool(self._runs)

    def __repr__(self) -> str:
        return f"Publications({sorted(self._runs)})"
