"""The release spec's models: one YAML file describing a release, validated on load
(:mod:`sdcflow.spec.load`).

Unknown keys are errors; every error names the field and what to do. Paths are relative to the
spec file. The random ``seed`` is a secret: it is never written to the manifest or the audit
tables (transparency covers the method and its parameters, not the draw).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sdcflow.gates import GATES, MeasureOptions
from sdcflow.methods import METHODS, MethodParams
from sdcflow.methods.fuzzy_mapping import FuzzyMapParams
from sdcflow.methods.perturbation import PRAM_STEP, PramStepParams
from sdcflow.spec_model import SpecModel

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
# How a spec field a gate requires is written, for the message refusing a check without it
# (a list of columns unless said here).
_FIELD_VALUE = {"household_column": "<column>"}

#: Spec fields added after specs without them were released: left out of the spec hash when
#: unset, so that an unchanged spec keeps its hash and a re-run is still "already published".
ADDED_FIELDS = ("household_column", PRAM_STEP)
#: ``recode:`` options added the same way (top and bottom coding): left out of each key's
#: block when unset.
ADDED_RECODE = ("top", "top_value", "bottom", "bottom_value")
#: ``measures:`` options added the same way (the gates' options declared after those specs).
ADDED_MEASURES = ("dominance_p", "dominance_nk", "suda_dis_fraction")


# --- mixed keys: declarations, missing values, recoding, suppression ---------------------


class KeyDeclaration(SpecModel):
    """A quasi-identifier given as a mapping: ``{name, type, order, precision}``.

    ``type`` overrides the kind detected from the file (numbers: numeric; text, booleans:
    nominal; dates and times must be declared, ordinal or nominal); ``order`` lists an
    ordinal key's categories from lowest to highest (a numeric, date or time column declared
    ordinal is ordered by value); ``precision`` is the number of decimal places published
    (0: integers, negative: tens, hundreds...; integer columns default to 0).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1)
    type: Literal["numeric", "nominal", "ordinal"] | None = None
    order: list[str | int | float] | None = Field(None, min_length=1)
    precision: int | None = Field(None, ge=-15, le=15)

    @model_validator(mode="after")
    def _fits(self) -> KeyDeclaration:
        if self.order is not None and self.type not in (None, "ordinal"):
            raise ValueError(f"key {self.name}: `order` is for ordinal keys; set type: ordinal")
        if self.precision is not None and self.type in ("nominal", "ordinal"):
            raise ValueError(f"key {self.name}: `precision` is for numeric keys")
        if self.order is not None and len({str(v) for v in self.order}) != len(self.order):
            raise ValueError(f"key {self.name}: `order` lists a category twice")
        return self


class RecodeSpec(SpecModel):
    """Global recoding of one key (``recode: {column: ...}``): exactly one of ``bins``,
    ``map``, ``hierarchy``, or top and bottom coding (``top`` and/or ``bottom``, with their
    replacements ``top_value`` and ``bottom_value``; sdcMicro's ``topBotCoding``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    bins: list[float] | None = Field(None, min_length=2, description="increasing edges")
    labels: list[str] | None = Field(None, description="one label per bin")
    closed: Literal["right", "left"] = Field(
        "right",
        description="bins: right (the default) gives (a, b], the first [a, b], as sdcMicro's "
        "globalRecode and R's cut; left gives [a, b), the last [a, b]",
    )
    map: dict[str, str] | None = Field(None, min_length=1, description="level -> new level")
    hierarchy: Path | list[list[str | int | float]] | None = Field(
        None, description="CSV file (leaf;level 1;...) or the same rows inline"
    )
    level: int = Field(1, ge=1, description="hierarchy level to publish")
    top: float | None = Field(
        None,
        allow_inf_nan=False,
        description="top coding of a numeric key: values above it are replaced by top_value "
        "(sdcMicro's topBotCoding, kind top)",
    )
    top_value: float | None = Field(
        None,
        allow_inf_nan=False,
        description="what replaces the values above top (default: top itself)",
    )
    bottom: float | None = Field(
        None,
        allow_inf_nan=False,
        description="bottom coding of a numeric key: values below it are replaced by "
        "bottom_value (sdcMicro's topBotCoding, kind bottom)",
    )
    bottom_value: float | None = Field(
        None,
        allow_inf_nan=False,
        description="what replaces the values below bottom (default: bottom itself)",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> RecodeSpec:
        for side in ("top", "bottom"):
            if getattr(self, f"{side}_value") is not None and getattr(self, side) is None:
                raise ValueError(
                    f"`{side}_value` replaces the values beyond `{side}`; give `{side}` too"
                )
        if self.top is not None and self.bottom is not None and self.bottom > self.top:
            raise ValueError(
                f"bottom ({self.bottom:g}) is above top ({self.top:g}): nothing would be left "
                "between them; swap them"
            )
        coded = self.top is not None or self.bottom is not None
        given = [k for k in ("bins", "map", "hierarchy") if getattr(self, k) is not None]
        if len(given) + coded != 1:
            raise ValueError(
                "give exactly one of `bins` (numeric), `map` or `hierarchy` (categorical), or "
                "`top` and/or `bottom` (top and bottom coding of a numeric key)"
            )
        if self.labels is not None and self.bins is None:
            raise ValueError("`labels` name bins; give `bins` too")
        if "closed" in self.model_fields_set and self.bins is None:
            raise ValueError("`closed` says which end of a bin holds its edge; give `bins` too")
        return self


class SuppressionSpec(SpecModel):
    """Local suppression of categorical keys (``suppression:``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    importance: list[str] = Field(
        default_factory=list,
        description="categorical keys, most important first (suppressed last)",
    )
    algorithm: Literal["greedy", "exact"] = Field(
        "greedy", description="categorical-only releases: greedy, or exact for small files"
    )


def _split_key_declarations(data: Any) -> Any:
    """``quasi_identifiers`` may mix names and mappings: keep the names there and move the
    mappings' declarations to ``key_types``."""
    if not isinstance(data, dict) or not isinstance(data.get("quasi_identifiers"), list):
        return data
    if not isinstance(data.get("key_types") or {}, dict):
        return data  # pydantic names key_types and the mapping it takes
    names, declared = [], dict(data.get("key_types") or {})
    for item in data["quasi_identifiers"]:
        if isinstance(item, dict):
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise ValueError(
                    "quasi_identifiers: a mapping needs a `name`, e.g. {name: age, type: numeric}"
                )
            if name in declared:
                raise ValueError(f"quasi_identifiers: key {name} is declared twice")
            declared[name] = item
            names.append(name)
        else:
            names.append(item)
    return {**data, "quasi_identifiers": names, "key_types": declared}


class RetentionSpec(SpecModel):
    """How long the warehouse keeps a run's confidential copies (``retention:``): its raw,
    edited and masked tables. Applied at the end of every run of the release and by
    ``sdcflow prune``; ``audit.runs`` keeps every run's figures whatever is dropped.

    A run's copies are dropped when it falls outside any limit given (``keep_last`` and
    ``keep_days`` together keep only the runs within both); refused, failed and interrupted
    runs' copies are dropped at the end of the run unless ``keep_refused``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    keep_last: int | None = Field(
        None,
        ge=1,
        description="keep the copies of this many latest published runs of the release, and "
        "separately of this many latest runs that only passed their checks (check, compare)",
    )
    keep_days: float | None = Field(
        None, gt=0, description="keep the copies of runs started within this many days"
    )
    keep_refused: bool = Field(
        False, description="keep the copies of refused, failed and interrupted runs too"
    )


#: The schemes of a Dask scheduler another process can reach (``inproc://`` is one process's).
DASK_SCHEMES = ("tcp", "tls", "ws", "wss")


class DaskSettings(SpecModel):
    """``dask:`` -- where ``runner: dask`` runs the mask's cells (docs/howto/scale-out.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    workers: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="worker processes of the embedded LocalCluster (default: the CPU count)",
    )
    address: str | None = Field(
        None,
        description="scheduler of an existing Dask cluster, e.g. tcp://10.0.0.5:8786 "
        "(instead of an embedded LocalCluster)",
    )
    memory_limit: str | None = Field(
        None,
        description="memory each worker of the embedded LocalCluster may use, e.g. 3GB or "
        "3GiB (Dask pauses a worker near it and restarts one past it); default: the "
        "machine's memory shared among the workers",
    )

    @model_validator(mode="after")
    def _limit_of_embedded_workers(self) -> DaskSettings:
        if self.memory_limit is not None and self.address is not None:
            raise ValueError(
                "memory_limit sets the workers of the embedded LocalCluster; the workers of "
                f"the cluster at {self.address} keep the limit they were started with "
                "(dask worker --memory-limit): drop memory_limit or address"
            )
        return self

    @field_validator("memory_limit")
    @classmethod
    def _bytes(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\s*\d+(\.\d+)?\s*([KMGT]i?B|B)\s*", value):
            raise ValueError(
                f"{value!r} is not an amount of memory; give a number and a unit, as 3GB, "
                "2.5GiB or 512MB"
            )
        return value

    @field_validator("address")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        # refused here (exit 2), not by Dask at the mask step (exit 3 and a Python error)
        if value is None:
            return value
        scheme, sep, rest = value.rpartition("://")
        if scheme == "inproc" and rest:
            return value  # a cluster in this very process (the Python API): asked at preflight
        if sep and scheme not in DASK_SCHEMES:
            raise ValueError(
                f"{scheme}:// is not an address a cluster of other processes listens on; give "
                "tcp://HOST:PORT (or tls://, ws://, wss://)"
            )
        host, _, port = rest.rpartition(":")
        if not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{value!r} is not a host:port address; give e.g. tcp://10.0.0.5:8786")
        return value

    @model_validator(mode="after")
    def _one_cluster(self) -> DaskSettings:
        if self.workers is not None and self.address is not None:
            raise ValueError(
                "give either dask.workers (an embedded LocalCluster) or dask.address (an "
                "existing cluster, whose size is its own), not both"
            )
        return self


class Acceptances(SpecModel):
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


class ReleaseSpec(SpecModel):
    """A release: where the data come from, how they are masked, checked and published."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    # at most 100 characters: the release's folder, its temporary and previous copies and its
    # report folders add a prefix and a run id, within a file name's 255 bytes (a longer
    # name is refused when the spec is read, not at publication after the whole release has
    # run, exit 3)
    release: str = Field(pattern=_NAME, max_length=100, description="name of the published release")
    source: Path = Field(
        description="CSV, Parquet, SPSS (.sav), Stata (.dta) or SAS (.sas7bdat) file, relative "
        "to the spec file"
    )
    id_column: str | None = Field(None, description="record identifier, never published")
    quasi_identifiers: list[str] = Field(
        min_length=1,
        description="keys an intruder may know: names (kind detected from the file) or "
        "mappings {name, type, order, precision}",
    )
    key_types: dict[str, KeyDeclaration] = Field(
        default_factory=dict,
        description="declarations of the quasi-identifiers given as mappings (by name)",
    )
    missing_values: list[str] | None = Field(
        None,
        description="tokens read as missing (e.g. ['?', '']; empty text always is, once any "
        "token is declared); declaring it allows missing key values, which are released as "
        "missing (a missing value is a value of its own when k is counted)",
    )
    weight_column: str | None = Field(
        None, description="sampling weights (positive), published unchanged unless a key"
    )
    household_column: str | None = Field(
        None,
        description="household (cluster) id of every record, for the household risk "
        "(check max_household_risk); read, not published unless also in keep",
    )
    recode: dict[str, RecodeSpec] = Field(
        default_factory=dict, description="global recoding per key, applied before masking"
    )
    suppression: SuppressionSpec = Field(
        default_factory=SuppressionSpec, description="local suppression of categorical keys"
    )
    pram: PramStepParams | None = Field(
        None,
        description="PRAM on the categorical keys it names, before the method, which then "
        "masks the keys as always (the PRAMed ones with their perturbed values)",
    )
    keep: list[str] = Field(default_factory=list, description="columns published unchanged")
    sensitive: list[str] = Field(
        default_factory=list,
        description="confidential attributes, published unchanged and gated by l-diversity",
    )
    fuzzy_map: dict[str, FuzzyMapParams] = Field(
        default_factory=dict,
        description="sensitive columns published fuzzy-mapped (the mapping is a secret kept "
        "in the warehouse; see docs/concepts/fuzzy-mapping.md)",
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
    runner: Literal["local", "dask"] = Field(
        "local",
        description="local: one process; dask: the mask's cells as Prefect tasks on a Dask "
        "cluster (prefect-dask's DaskTaskRunner; docs/howto/scale-out.md)",
    )
    dask: DaskSettings = Field(
        default_factory=DaskSettings, description="the Dask cluster of runner: dask"
    )
    accept: Acceptances = Field(
        default_factory=Acceptances,
        description="explicit acceptance of looser gates or unchecked rules (in the manifest)",
    )
    retention: RetentionSpec = Field(
        default_factory=RetentionSpec,
        description="how long the warehouse keeps each run's raw, edited and masked copies",
    )
    base_dir: Path = Field(Path("."), exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _key_mappings(cls, data: Any) -> Any:
        return _split_key_declarations(data)

    @field_validator("method", mode="before")
    @classmethod
    def _method(cls, value: Any) -> MethodParams:
        if isinstance(value, MethodParams):
            return value
        if not isinstance(value, dict) or "name" not in value:
            raise ValueError("give a mapping with a `name`, e.g. {name: mdav, k: 5}")
        name = value["name"]
        if not isinstance(name, str):  # a list or mapping cannot even be looked up
            raise _NestedError(
                f"give the method's name as text, one of {', '.join(sorted(METHODS))}",
                "name",
            )
        if name not in METHODS:
            raise ValueError(f"unknown method {name!r}; choose one of {', '.join(sorted(METHODS))}")
        try:
            return METHODS[name].params.model_validate(value)
        except ValidationError as e:
            raise _NestedError(
                _join_errors(e, model=METHODS[name].params), error_field(e)
            ) from None

    @field_validator("dask")
    @classmethod
    def _dask_needs_its_runner(cls, value: DaskSettings, info: ValidationInfo) -> DaskSettings:
        # as --dask-address with --runner local: the settings would be dropped without a word
        if info.data.get("runner") == "local" and (value.workers or value.address) is not None:
            given = "dask.address" if value.address is not None else "dask.workers"
            raise ValueError(
                f"{given} sets up the Dask runner and `runner:` is local (the default); set "
                "`runner: dask`, or drop `dask:`"
            )
        return value

    @field_validator("missing_values")
    @classmethod
    def _missing_values(cls, value: list[str] | None) -> list[str] | None:
        # An empty list declares no token: it means what leaving the key out means (missing
        # key values refused, the same spec hash). It allowed them, so `missing_values: []`
        # let a key's empty cells be released as missing, undeclared.
        return value or None

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
        # a probability, an index or a share cannot exceed its range: a `max` gate above it
        # would always pass (max_individual_risk: 1.5 gated nothing)
        for key, v in sorted(value.items()):
            upper = GATES[key].upper
            if upper is not None and v > upper:
                raise ValueError(
                    f"threshold of {key} must be within [0, {upper:g}], the range of its "
                    f"figure ({GATES[key].unit}); got {v:g}"
                )
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
                    f"`{missing[0]}: {_FIELD_VALUE.get(missing[0], '[column, ...]')}` or "
                    "remove the check"
                )
        _check_fuzzy_map_roles(self)
        self._check_mixed_keys()
        if self.blocks is not None:
            flat = [c for block in self.blocks for c in block]
            if sorted(flat) != sorted(self.quasi_identifiers) or any(not b for b in self.blocks):
                raise ValueError(
                    "blocks must split quasi_identifiers exactly: every quasi-identifier in "
                    "exactly one non-empty block"
                )
        return self

    def _check_mixed_keys(self) -> None:
        """Key declarations, recodings, suppression importance and the weight column refer to
        the right columns and do not contradict each other."""
        qis = set(self.quasi_identifiers)
        for field_name, names in (
            ("key_types", self.key_types),
            ("recode", self.recode),
            ("suppression.importance", self.suppression.importance),
            (f"{PRAM_STEP}.columns", self.pram.columns if self.pram else []),
        ):
            stray = sorted(set(names) - qis)
            if stray:
                raise ValueError(
                    f"{field_name} names {stray}, which are not quasi-identifiers; list only "
                    "quasi-identifiers there"
                )
        if len(set(self.suppression.importance)) != len(self.suppression.importance):
            raise ValueError("suppression.importance lists a key twice")
        for name, decl in self.key_types.items():
            if decl.name != name:
                raise ValueError(f"key_types.{name}: its `name` must be {name}")
        w = self.weight_column
        if w is not None and (w in self.keep or w in self.sensitive or w == self.id_column):
            raise ValueError(
                f"weight_column {w} is also in keep, sensitive or id_column; give it one role "
                "(it is published unchanged unless it is a quasi-identifier)"
            )

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
        """The spec as recorded in the manifest: everything but the secrets (the seed, and
        the fuzzy mappings, of which only the column names are public)."""
        data = self.model_dump(mode="json", exclude={"seed", "base_dir", "fuzzy_map"})
        data["method"] = self.method.model_dump(mode="json")
        for block in data["recode"].values():  # top/bottom options only where given
            for name in ADDED_RECODE:
                if block.get(name) is None:
                    block.pop(name, None)
        if self.fuzzy_map:
            data["fuzzy_mapped"] = sorted(self.fuzzy_map)
        return data

    def sha256(self) -> str:
        """Hash of the public spec (stable key order), identifying what a run was asked.

        ``retention``, ``runner`` and ``dask`` are left out: they govern the warehouse's
        copies and where the work runs, not what is published (the Dask runner publishes the
        local runner's files), so changing them neither changes the hash nor makes a re-run
        publish again. The files the spec names (its rules file, hierarchy files) count by
        their contents (:meth:`named_files_sha256`). The secrets are in
        :meth:`secrets_sha256`, never here: this hash is published in the manifest."""
        public = self.hashed_dict(skip={"retention", "runner", "dask"})
        files = self.named_files_sha256()
        if files:  # a spec that names no file keeps the hash it always had
            public["files_sha256"] = files
        blob = json.dumps(public, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()

    def hashed_dict(self, skip: set[str]) -> dict[str, Any]:
        """:meth:`public_dict` without the fields ``skip`` names, and without the method's
        options added later that the spec does not give (MethodParams)."""
        public = {k: v for k, v in self.public_dict().items() if k not in skip}
        # fields the spec gained after specs without them were released: unset, unhashed
        for name in ADDED_FIELDS:
            if public.get(name) is None:
                public.pop(name, None)
        for block in (public.get("recode") or {}).values():
            for name in ADDED_RECODE:
                if isinstance(block, dict) and block.get(name) is None:
                    block.pop(name, None)
        measures = public.get("measures")
        if isinstance(measures, dict):
            for name in ADDED_MEASURES:
                if measures.get(name) is None:
                    measures.pop(name, None)
        public["method"] = {
            k: v for k, v in public["method"].items() if k not in self.method.unhashed_defaults()
        }
        return public

    def named_files_sha256(self) -> dict[str, str | None]:
        """The sha256 of each file the spec names whose contents decide the release (the
        ``rules_file``, a recoding ``hierarchy`` file), by field: the spec names them by path
        only, so editing one is a changed spec (None: the file cannot be read)."""
        named: dict[str, Path] = {}
        if self.rules_file is not None:
            named["rules_file"] = self.rules_file
        for column, recode in sorted(self.recode.items()):
            if isinstance(recode.hierarchy, Path):
                named[f"recode.{column}.hierarchy"] = recode.hierarchy
        digests: dict[str, str | None] = {}
        for field, value in named.items():
            try:
                digests[field] = hashlib.sha256(self.path(value).read_bytes()).hexdigest()
            except OSError:
                digests[field] = None
        return digests

    def secrets_sha256(self) -> str:
        """Hash of the secret part of the spec (the seed, the fuzzy mappings), kept in the
        warehouse only (``audit.runs``), beside the owner's secrets: a re-run with another
        seed or mapping is a different release though its public spec is the same."""
        secret = {
            "seed": self.seed,
            "fuzzy_map": {c: m.model_dump(mode="json") for c, m in self.fuzzy_map.items()},
        }
        return hashlib.sha256(json.dumps(secret, sort_keys=True).encode()).hexdigest()


def _check_fuzzy_map_roles(spec: ReleaseSpec) -> None:
    """``fuzzy_map`` applies to ``sensitive:`` columns only: a mapped key is as identifying as
    the original (a deterministic combiner is monotone within each set), so keys are masked
    by the method and counted by k-anonymity as released."""
    for column in spec.fuzzy_map:
        if column in spec.sensitive:
            continue
        if column in spec.quasi_identifiers:
            raise ValueError(
                f"fuzzy_map.{column}: {column} is a quasi-identifier; a fuzzy-mapped key is as "
                "identifying as the original, so it stays among quasi_identifiers, masked by "
                f"the method: remove {column} from fuzzy_map"
            )
        role = "keep" if column in spec.keep else "id_column" if column == spec.id_column else None
        if role == "id_column":
            raise ValueError(f"fuzzy_map.{column}: the id_column is never published; remove it")
        where = f"it is in {role}" if role else "it is not in sensitive"
        raise ValueError(
            f"fuzzy_map.{column}: fuzzy mapping applies to sensitive attributes and {where}; "
            f"list {column} under sensitive: (only if no intruder can know it) or remove it "
            "from fuzzy_map"
        )


class _NestedError(ValueError):
    """A validator's error that knows the nested field at fault (``k`` of ``method``), so that
    :func:`error_field` can name ``method.k`` although pydantic locates it at ``method``."""

    def __init__(self, message: str, field: str | None) -> None:
        super().__init__(message)
        self.field = field


def error_field(error: ValidationError) -> str | None:
    """The spec field of the first error, as the ``field`` of the :class:`InputError` it
    becomes: ``measures.cluster_loss.clusters``, ``edits[2]``, ``method.k``; None when the
    error is about the model as a whole."""
    first = error.errors()[0]
    loc = "".join(
        f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"] if p != "__root__"
    ).lstrip(".")
    inner = getattr((first.get("ctx") or {}).get("error"), "field", None)
    if inner:
        loc = f"{loc}.{inner}" if loc else inner
    return loc or None


def _field_type(tp: Any, part: str | int) -> Any:
    """The type found at ``part`` inside ``tp`` (a model's field, a dict's value, a list's
    item), looking through ``X | None``; None when there is none."""
    args = [a for a in get_args(tp) if a is not type(None)]
    if get_origin(tp) in (Union, UnionType):
        for arg in args:
            found = _field_type(arg, part)
            if found is not None:
                return found
        return None
    if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
        field = tp.model_fields.get(part)
        return None if field is None else field.annotation
    if get_origin(tp) is dict and isinstance(part, str) and len(args) == 2:
        return args[1]
    if get_origin(tp) is list and isinstance(part, int) and args:
        return args[0]
    return None


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys the mapping holding ``loc``'s last key accepts (empty when not a model)."""
    tp: Any = model
    for part in loc[:-1]:
        tp = _field_type(tp, part)
    candidates = [tp, *get_args(tp)] if get_origin(tp) in (Union, UnionType) else [tp]
    for cand in candidates:
        if isinstance(cand, type) and issubclass(cand, BaseModel):
            return [n for n, f in cand.model_fields.items() if not f.exclude]
    return []


# the spec's secrets (secrets_sha256): an error about one names it, never its value
_SECRETS = frozenset({"seed", "fuzzy_map"})


def _join_errors(
    error: ValidationError, prefix: str = "", model: type[BaseModel] | None = None
) -> str:
    """One text for every error of ``error``; an unknown key lists the keys allowed where it
    stands (``model``: the model validated, to find them)."""
    parts = []
    for err in error.errors():
        loc = ".".join(str(p) for p in err["loc"] if p != "__root__")
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden" and model is not None:
            allowed = _allowed_keys(model, tuple(p for p in err["loc"] if p != "__root__"))
            if allowed:
                msg = f"unknown key; allowed: {', '.join(allowed)}"
        where = f"{prefix}{loc}" if loc else prefix.rstrip(".")
        bad = err.get("input")
        secret = bool(err["loc"]) and err["loc"][0] in _SECRETS  # never echoed
        shown = "" if secret or isinstance(bad, dict | list) or bad is None else f" (got {bad!r})"
        if len(shown) > 90:
            shown = shown[:86] + "...)"
        parts.append(f"{where}: {msg}{shown}" if where else msg + shown)
    return "; ".join(parts)
