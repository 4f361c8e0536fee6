"""The release spec: one YAML file describing a release, validated on load.

Unknown keys are errors; every error names the field and what to do. Paths are relative to the
spec file. The random ``seed`` is a secret: it is never written to the manifest or the audit
tables (transparency covers the method and its parameters, not the draw).
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import stat
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from sdcflow.errors import InputError, Reason
from sdcflow.limits import (
    MAX_COLUMNS,
    MAX_RULES,
    MAX_SPEC_BYTES,
    check_count,
    load_yaml,
    read_bounded,
)
from sdcflow.tasks.gates import GATES, MeasureOptions
from sdcflow.tasks.methods import METHODS, MethodParams

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


class Acceptances(BaseModel):
    """What a spec explicitly accepts that sdcflow refuses by default (``accept:``); the
    manifest records it with the spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    looser_checks: list[str] = Field(
        default_factory=list,
        description="checks: keys whose threshold may be looser than the default gate or "
        "what the method promises",
    )
    unchecked_rules: list[str] = Field(
        default_factory=list,
        description="names of error rules that may go unchecked on the released records "
        "(their columns are not released)",
    )

    @field_validator("looser_checks")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(GATES))
        if unknown:
            known = ", ".join(sorted(GATES))
            raise ValueError(f"unknown check(s) {unknown}; known checks: {known}")
        return value


class ReleaseSpec(BaseModel):
    """A release: where the data come from, how they are masked, checked and published."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    release: str = Field(pattern=_NAME, description="name of the published release")
    source: Path = Field(description="CSV or Parquet file, relative to the spec file")
    id_column: str | None = Field(None, description="record identifier, never published")
    quasi_identifiers: list[str] = Field(min_length=1, description="numeric columns to mask")
    keep: list[str] = Field(default_factory=list, description="columns published unchanged")
    sensitive: list[str] = Field(
        default_factory=list,
        description="confidential attributes, published unchanged and gated by l-diversity",
    )
    edits: list[str | dict[str, Any]] = Field(default_factory=list, description="edit rules")
    rules_file: Path | None = Field(None, description="YAML file of further edit rules")
    on_violation: Literal["fail", "repair"] = "repair"
    method: MethodParams
    blocks: list[list[str]] | None = Field(
        None, description="quasi-identifiers split into blocks masked separately"
    )
    checks: dict[str, float] = Field(default_factory=dict)
    measures: MeasureOptions = Field(  # type: ignore[valid-type]
        default_factory=MeasureOptions, description="settings of the measures behind the gates"
    )
    output: Path = Path("published")
    warehouse: Path = Path("warehouse.duckdb")
    reports: Path = Path("reports")
    publish_report: bool = Field(
        False, description="also publish the run's report.html with the release"
    )
    seed: int | None = Field(None, description="secret seed for reproducible randomness")
    accept: Acceptances = Field(
        default_factory=Acceptances,
        description="explicit acceptance of looser gates or unchecked rules (in the manifest)",
    )
    base_dir: Path = Field(Path("."), exclude=True)

    @field_validator("method", mode="before")
    @classmethod
    def _method(cls, value: Any) -> MethodParams:
        if isinstance(value, MethodParams):
            return value
        if not isinstance(value, dict) or "name" not in value:
            raise ValueError("give a mapping with a `name`, e.g. {name: mdav, k: 5}")
        name = value["name"]
        if name not in METHODS:
            raise ValueError(f"unknown method {name!r}; choose one of {', '.join(sorted(METHODS))}")
        try:
            return METHODS[name].params.model_validate(value)
        except ValidationError as e:
            raise ValueError(_join_errors(e)) from None

    @field_validator("checks")
    @classmethod
    def _checks(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(GATES))
        if unknown:
            raise ValueError(
                f"unknown check(s) {unknown}; known checks: {', '.join(sorted(GATES))}"
            )
        # Every gate's figure is a size, a share or a distance: never negative, never NaN.
        bad = sorted(k for k, v in value.items() if not (v >= 0 and math.isfinite(v)))
        if bad:
            raise ValueError(f"threshold(s) of {bad} must be finite numbers >= 0")
        return value

    @model_validator(mode="after")
    def _columns(self) -> ReleaseSpec:
        roles = {"quasi_identifiers": self.quasi_identifiers, "keep": self.keep}
        roles["sensitive"] = self.sensitive
        if self.id_column:
            roles["id_column"] = [self.id_column]
        seen: dict[str, str] = {}
        for role, cols in roles.items():
            for col in cols:
                if col in seen:
                    first = seen[col]
                    where = f"twice in {role}" if first == role else f"in {first} and {role}"
                    raise ValueError(f"column {col!r} is named {where}; give each column one role")
                seen[col] = role
        for key in self.checks:
            missing = sorted(f for f in GATES[key].requires if not getattr(self, f))
            if missing:
                raise ValueError(
                    f"check {key} needs `{missing[0]}:` (the columns it is computed on); add "
                    f"`{missing[0]}: [column, ...]` or remove the check"
                )
        if self.blocks is not None:
            flat = [c for block in self.blocks for c in block]
            if sorted(flat) != sorted(self.quasi_identifiers) or any(not b for b in self.blocks):
                raise ValueError(
                    "blocks must split quasi_identifiers exactly: every quasi-identifier in "
                    "exactly one non-empty block"
                )
        return self

    # -- resolved paths -------------------------------------------------------------------

    def path(self, value: Path) -> Path:
        return value if value.is_absolute() else (self.base_dir / value)

    @property
    def source_path(self) -> Path:
        return self.path(self.source)

    @property
    def warehouse_path(self) -> Path:
        return self.path(self.warehouse)

    @property
    def output_dir(self) -> Path:
        return self.path(self.output)

    @property
    def reports_dir(self) -> Path:
        return self.path(self.reports)

    @property
    def release_dir(self) -> Path:
        return self.output_dir / self.release

    def variant(
        self, method: dict[str, Any] | None = None, measures: dict[str, Any] | None = None
    ) -> ReleaseSpec:
        """This spec with its ``method`` block replaced and ``measures`` settings updated
        (variants of one release, compared on one source)."""
        data = self.model_dump(exclude={"method", "measures"})
        data["method"] = method if method else self.method
        data["measures"] = {**self.measures.model_dump(exclude_none=True), **(measures or {})}
        return ReleaseSpec.model_validate({**data, "base_dir": self.base_dir})

    def public_dict(self) -> dict[str, Any]:
        """The spec as recorded in the manifest: everything but the secret seed."""
        data = self.model_dump(mode="json", exclude={"seed", "base_dir"})
        data["method"] = self.method.model_dump(mode="json")
        return data

    def sha256(self) -> str:
        """Hash of the public spec (stable key order), identifying what a run was asked."""
        blob = json.dumps(self.public_dict(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()


def _join_errors(error: ValidationError, prefix: str = "") -> str:
    parts = []
    for err in error.errors():
        loc = ".".join(str(p) for p in err["loc"] if p != "__root__")
        msg = err["msg"].removeprefix("Value error, ")
        where = f"{prefix}{loc}" if loc else prefix.rstrip(".")
        bad = err.get("input")
        shown = "" if isinstance(bad, dict | list) or bad is None else f" (got {bad!r})"
        if len(shown) > 90:
            shown = shown[:86] + "...)"
        parts.append(f"{where}: {msg}{shown}" if where else msg + shown)
    return "; ".join(parts)


def _spec_file(path: Path) -> None:
    """Refuse a spec path that is not a readable regular file, naming what it is."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise InputError(f"spec file {path} does not exist", code=Reason.SPEC_MISSING) from None
    except OSError as e:
        kind = "a symbolic link loop" if e.errno == errno.ELOOP else f"unreadable ({e.strerror})"
        raise InputError(f"spec file {path} is {kind}", code=Reason.SPEC_MISSING) from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(
            f"spec file {path} is a folder; name the release YAML file", code=Reason.SPEC_MISSING
        )
    if not stat.S_ISREG(info.st_mode):
        raise InputError(
            f"spec file {path} is not a regular file; name the release YAML file",
            code=Reason.SPEC_MISSING,
        )


def load_spec(path: str | Path) -> ReleaseSpec:
    """Read and validate a release spec; raise ``InputError`` with one line per problem.

    The file and what it describes are bounded (:mod:`sdcflow.limits`): its size, YAML
    aliases and nesting, string lengths, the number of rules and of named columns.
    """
    path = Path(path)
    _spec_file(path)
    try:
        text = read_bounded(path, MAX_SPEC_BYTES, what="spec file")
        data = load_yaml(text, where=str(path))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise InputError(
            f"{path}: not valid YAML ({str(e).splitlines()[0][:200]})", code=Reason.SPEC_SYNTAX
        ) from e
    if not isinstance(data, dict):
        raise InputError(
            f"{path}: the spec must be a YAML mapping of fields (release, source...)",
            code=Reason.SPEC_SYNTAX,
        )
    edits = data.get("edits")
    if isinstance(edits, list):
        check_count(len(edits), MAX_RULES, where=f"{path}: edits", what="edit rules")
    for role in ("quasi_identifiers", "keep", "sensitive"):
        if isinstance(data.get(role), list):
            check_count(len(data[role]), MAX_COLUMNS, where=f"{path}: {role}", what="columns")
    try:
        return ReleaseSpec.model_validate({**data, "base_dir": path.resolve().parent})
    except ValidationError as e:
        raise InputError(f"{path}: {_join_errors(e)}", code=Reason.SPEC_FIELD) from None
