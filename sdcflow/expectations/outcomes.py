"""The verdicts of an edit-rule validation, counts only: what Great Expectations
(:func:`~sdcflow.expectations.suite.validate_frame`) or DuckDB's SQL alone
(:func:`~sdcflow.tasks.edits.validate_edits` with ``sql_only``) found on one table.

Kept apart from :mod:`sdcflow.expectations.suite` so that a release that counts its rules in
SQL never imports Great Expectations (seconds of start-up).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RuleOutcome", "RuleReport"]


@dataclass(frozen=True)
class RuleOutcome:
    """The verdict on one rule: counts only."""

    name: str
    text: str
    severity: str
    expectation: str
    violations: int
    undetermined: int

    @property
    def success(self) -> bool:
        return self.violations == 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.name,
            "severity": self.severity,
            "expectation": self.expectation,
            "violations": self.violations,
            "undetermined": self.undetermined,
            "verdict": "pass" if self.success else "FAIL",
        }


@dataclass
class RuleReport:
    """Per-rule violation counts of one validation, the Data Docs location and the timing.

    Attributes
    ----------
    stage : str
        Which table was validated (``raw``, ``masked``...).
    records : int
    outcomes : list of RuleOutcome
    docs_path : Path or None
        ``index.html`` of the Data Docs site, when one was built.
    seconds : float
        Wall time of the GE validation (and Data Docs build).
    """

    stage: str
    records: int
    outcomes: list[RuleOutcome] = field(default_factory=list)
    docs_path: Path | None = None
    seconds: float = 0.0

    @property
    def success(self) -> bool:
        """No ``error``-severity rule is violated (warnings never fail)."""
        return all(o.success for o in self.outcomes if o.severity == "error")

    @property
    def failed(self) -> list[RuleOutcome]:
        return [o for o in self.outcomes if o.severity == "error" and not o.success]

    def counts(self, severity: str | None = "error") -> dict[str, int]:
        """``{rule name: violating records}`` (of one severity, or all with ``None``)."""
        return {o.name: o.violations for o in self.outcomes if severity in (None, o.severity)}

    def as_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "records": self.records,
            "success": self.success,
            "rules": [o.as_dict() for o in self.outcomes],
            "data_docs": str(self.docs_path) if self.docs_path else None,
        }

    def as_markdown(self, title: str | None = None) -> str:
        """A Markdown table of rule names and counts (never values, never the rule text:
        rule constants may be thresholds that the data owner considers confidential)."""
        lines = [f"## {title or f'Edit rules on the {self.stage} table'}", ""]
        lines.append(f"{self.records} records, {len(self.outcomes)} rules.")
        lines += [
            "",
            "| rule | severity | violating records | undetermined | verdict |",
            "|---|---|---:|---:|:-:|",
        ]
        for o in self.outcomes:
            verdict = "pass" if o.success else ("FAIL" if o.severity == "error" else "warn")
            lines.append(
                f"| {o.name} | {o.severity} | {o.violations} | {o.undetermined} | {verdict} |"
            )
        if self.docs_path:
            lines += ["", f"Data Docs: `{self.docs_path}`"]
        return "\n".join(lines)
