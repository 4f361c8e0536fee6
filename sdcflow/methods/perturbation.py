"""Methods ``noise``, ``rank_swap``, ``shuffle`` and ``pram``: perturbative masking, as
sdcMicro offers it.

Spec::

    method: {name: noise, kind: additive, noise: 150}   # numeric keys
    method: {name: rank_swap, p: 15}                      # numeric keys
    method: {name: shuffle, predictors: [employees]}     # numeric keys
    method: {name: pram, pd: 0.8, alpha: 0.5}             # categorical keys

The numerical code is :mod:`sdcflow.core.perturbation` (sdcMicro 5.8.1's ``addNoise``,
``rankSwap``, ``shuffle(method = "ds")`` and ``pram``); the draws come from the release's
generator (the spec's secret ``seed``, never written to the manifest).

**No k-anonymity.** A perturbed record is not hidden in a group of identical ones: noise,
swapping and shuffling publish (almost) every record with its own values, PRAM publishes a category
that may be false. None of them promises k, so a spec gating k-anonymity in any form
(:data:`K_GATES`) is refused at preflight with that reason; the disclosure risk of numeric
perturbation is gated by distance-based record linkage instead (``max_record_linkage``, by
default at :data:`RECORD_LINKAGE`\\ %: released records a nearest-neighbour intruder links to
their own original).

**Shuffling** (Muralidhar and Sarathy 2006) replaces the numeric keys by their own values
reordered by the ranks of a draw from their normal copula: every key keeps its values exactly
(its marginal distribution), the keys their rank correlations in expectation. Without
``predictors`` the released keys are independent of the record they land on: the lowest
linkage risk of the perturbative methods, and no relation left between the keys and the
columns published beside them. ``predictors`` (the paper's non-confidential ``S``, sdcMicro's
``form = y ~ s``) are drawn conditionally on: numeric columns published unchanged
(``keep:``, ``sensitive:`` not fuzzy-mapped), complete, of more than one value
(``predictor_problem`` says why each other column is refused at preflight: it would
carry a withheld value, or a key's original one, into the release). The mask reads them as
the registry's further columns (``Method.further_columns``); record linkage measures what
they cost.

**Keys.** ``noise``, ``rank_swap`` and ``shuffle`` mask numeric keys only: they have no k to
stratify categorical keys by, so a release with categorical keys is refused (PRAM them in their own
release, or choose a microaggregation method). ``pram`` masks categorical keys (nominal,
ordinal, and numeric keys binned by ``recode:``); a numeric key is refused rather than
published as it is. Numeric keys with missing values are refused too (sdcflow releases
those records with MDAV-generic, which is not this method).

**What the manifest records.** The spec's parameters and aggregate figures: per key the
number of categories and how far the expected frequencies after PRAM stray from the
observed ones (the invariance check of the transition matrix, 0 up to rounding), the
number of values changed. Never the transition matrix (with it an intruder computes the
posterior of every record's true category), the drawn keep-probabilities, nor the noise.

**PRAM as a step before the method** (``pram: {columns: [...], pd, alpha}`` in the spec,
:class:`PramStepParams`): PRAM perturbs the categorical keys it names first, from the
release's generator, and the method then masks the release's keys as it always does, the
PRAMed keys with their perturbed values. A method with k (``mdav``, ``heterogeneous``,
``local_suppression``...) takes them as categorical keys like any other: the strata of
identical released categorical rows hold k records, so k counted on the released rows, as
every k gate counts it, holds over every key, PRAMed or not; what PRAM adds is that a
PRAMed key's released value may be false, which no k counts. A perturbative method for
numeric keys (``noise``, ``rank_swap``, ``shuffle``), which has no k to stratify by, masks the
numeric keys and leaves the categorical ones as PRAM released them: every categorical key
must then be PRAMed (:func:`check_pram_step`), and the release is gated by record linkage
as the method's. The manifest's ``method_details.pram`` names the PRAMed keys, the
parameters (public, in the spec), per key the invariance check and the values PRAM
changed; never the transition matrices or the draws.

``noise: {kind: restricted}`` (sdcMicro's ``restr``) is not offered: it adds no noise,
only ``z = c x + (1 - c) mean(x)`` with ``c`` a function of the number of records and the
``noise`` parameter, both public, and the mean unchanged, so anyone holding the manifest
inverts it exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import ConfigDict, Field, field_validator

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.perturbation import add_noise, pram, rank_swap, shuffle
from sdcflow.core.validation import check_magnitude
from sdcflow.errors import ParameterError
from sdcflow.methods.base import MaskResult, Method, MethodParams, ReleaseView, refuse
from sdcflow.methods.keys import (
    EncodedKeys,
    EncodedRelease,
    Key,
    SuppressionSettings,
    key_numbers,
    masked_as,
)
from sdcflow.spec_model import SpecModel

RECORD_LINKAGE = 10.0  # % of records linked to their own original: the default gate
#: The spec's field of the PRAM step: named after the method it runs.
PRAM_STEP = "pram"

# Every gate that counts records sharing a released row (or an expected group): perturbation
# promises none of them.
K_GATES = (
    "k_anonymity",
    "k_anonymity_missing_matches_any",
    "keep_k_anonymity",
    "block_k_anonymity",
    "probabilistic_k_anonymity",
    "block_probabilistic_k_anonymity",
    "transparency_k_anonymity",
)


class NoiseParams(MethodParams):
    name: Literal["noise"] = "noise"
    kind: Literal["additive", "correlated"] = Field(
        "additive",
        description="additive: independent noise per key (sd noise % of the key's); "
        "correlated: noise with noise % of the keys' covariance (keeps correlations)",
    )
    noise: float = Field(
        150.0, ge=0, le=10000, description="amount of noise in percent (sdcMicro's noise)"
    )

    @field_validator("kind", mode="before")
    @classmethod
    def _not_restricted(cls, value: Any) -> Any:
        if value in ("restricted", "restr"):
            raise ValueError(
                "restricted noise adds no noise: it maps every value to c x + (1 - c) mean "
                "with c set by the record count and `noise`, both public, so the release "
                "can be inverted exactly; use additive or correlated"
            )
        return value

    # ``kind``, not sdcMicro's ``method``: ``method.method`` in a spec reads as a slip, and a
    # transformer's ``method`` names its registry entry.


class RankSwapParams(MethodParams):
    name: Literal["rank_swap"] = "rank_swap"
    p: float = Field(
        15.0,
        gt=0,
        le=100,
        description="rank range in percent of the records: a value is swapped with one whose "
        "rank differs by less than p % (sdcMicro's P = p / 100)",
    )


class ShuffleParams(MethodParams):
    """Data shuffling: the keys are the confidential variables (the paper's ``Y``), the
    ``predictors`` the non-confidential ones they are drawn conditionally on (``S``; the
    module docstring says which columns may serve)."""

    name: Literal["shuffle"] = "shuffle"
    # a tuple, not a list: an immutable default, as scikit-learn asks of the transformer's
    predictors: tuple[str, ...] = Field(
        (),
        description="numeric columns published unchanged (keep: or sensitive:) that the "
        "shuffled keys are drawn conditionally on (the paper's S, the right-hand side of "
        "sdcMicro's form); none: the keys are drawn independently of the record",
        json_schema_extra={"added": True},  # unset, not in the spec hash (MethodParams)
    )

    @field_validator("predictors")
    @classmethod
    def _once(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("a column is listed twice; list each predictor once")
        return value


class PramParams(MethodParams):
    name: Literal["pram"] = "pram"
    pd: float = Field(
        0.8,
        ge=0,
        le=1,
        description="lower bound of the probability that a category is kept (each category's "
        "drawn uniformly in [pd, 1])",
    )
    alpha: float = Field(
        0.5,
        ge=0,
        le=1,
        description="weight of the invariant transition matrix against the identity",
    )


class PramStepParams(SpecModel):
    """``pram:`` -- PRAM on some categorical keys, applied before the method (the module
    docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    columns: list[str] = Field(
        min_length=1, description="categorical quasi-identifiers PRAMed before the method"
    )
    pd: float = Field(
        0.8,
        ge=0,
        le=1,
        description="lower bound of the probability that a category is kept (as method pram)",
    )
    alpha: float = Field(
        0.5,
        ge=0,
        le=1,
        description="weight of the invariant transition matrix against the identity",
    )

    @field_validator("columns")
    @classmethod
    def _once(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("a column is listed twice; list each PRAMed key once")
        return value


def _pram_codes(
    enc: EncodedKeys, names: Sequence[str], pd: float, alpha: float, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, Any]]:
    """PRAM of the categorical keys ``names`` of ``enc``, each with its own invariant matrix:
    the new codes (n, c) (other keys unchanged) and per key the invariance check, never
    the matrix."""
    codes = enc.codes.copy()
    invariance: dict[str, Any] = {}
    for j, name in enumerate(enc.categorical_names):
        if name not in names:
            continue
        L = max(len(enc.levels[j]), 1)
        codes[:, j], R = pram(enc.codes[:, j], pd=pd, alpha=alpha, n_categories=L, rng=rng)
        observed = enc.codes[:, j][enc.codes[:, j] >= 0]
        t = np.bincount(observed, minlength=L).astype(np.float64)
        # the invariance check: expected frequencies after PRAM against the observed ones,
        # largest difference in records (0 up to rounding); never the matrix itself
        invariance[name] = {
            "categories": int(L),
            "largest_expected_frequency_change": float(np.abs(t @ R - t).max()),
        }
    return codes, invariance


def pram_step(
    enc: EncodedKeys, step: PramStepParams, rng: np.random.Generator
) -> tuple[EncodedKeys, dict[str, Any]]:
    """Apply the spec's ``pram:`` step to the encoded keys before the method: ``enc`` with
    the PRAMed keys' codes replaced, and the manifest's ``method_details.pram``.

    Raises ``ParameterError`` for a named key that is not categorical here (the preflight
    refuses it before the run: :func:`check_pram_step`).
    """
    stray = [c for c in step.columns if c not in enc.categorical_names]
    if stray:
        raise ParameterError(
            f"pram.columns: {', '.join(stray)} are not categorical keys; PRAM perturbs "
            "categories (bin numeric keys with `recode:`, or leave them to the method)",
            field="pram.columns",
        )
    codes, invariance = _pram_codes(enc, step.columns, step.pd, step.alpha, rng)
    changed = (codes != enc.codes).sum(axis=0)
    details = {
        "columns": list(step.columns),
        "strategy": "PRAM with sdcMicro's invariant transition matrix per key, before the "
        f"method (pd {step.pd:g}, alpha {step.alpha:g}); the matrices are not recorded",
        "invariance": invariance,
        "values_changed": {
            c: int(v)
            for c, v in zip(enc.categorical_names, changed, strict=True)
            if c in step.columns
        },
    }
    out = EncodedKeys(enc.numeric, enc.numeric_keys, codes, enc.categorical_keys, enc.levels)
    return out, details


def check_pram_step(spec: ReleaseView, keys: Sequence[Key], step: PramStepParams | None) -> None:
    """The preflight's refusals of a ``pram:`` step with these resolved keys (exit 2): a
    named key that is numeric (published unmasked by PRAM, which perturbs categories), and
    under a method without k, a categorical key left out (the method has nothing to mask
    it with)."""
    if step is None:
        return
    numeric, categorical = masked_as(keys)
    named_numeric = [c for c in step.columns if c in numeric]
    if named_numeric:
        refuse(
            f"pram.columns: {', '.join(named_numeric)} are numeric and PRAM perturbs "
            "categories; bin them with `recode:` first, or leave them to the method",
            field="pram.columns",
        )
    if spec.method.name == PRAM.name:
        refuse(
            "method pram already perturbs every categorical key; remove `pram:`, or choose a "
            "method for the keys it does not name",
            field="pram",
        )
    if getattr(spec.method, "k", None) is None:
        left = [c for c in categorical if c not in step.columns]
        if left:
            refuse(
                f"method {spec.method.name} has no k to stratify the categorical keys by, and "
                f"pram.columns leaves out {', '.join(left)}; add them to pram.columns, or "
                "choose a method with k (mdav) for them",
                field="pram.columns",
            )


def perturbation_promises(params: Any) -> dict[str, float]:
    """Numeric perturbation: record linkage gated at :data:`RECORD_LINKAGE` %."""
    return {"max_record_linkage": RECORD_LINKAGE}


def no_promises(params: Any) -> dict[str, float]:
    """PRAM publishes categories only, and sdcflow has no gate measuring what a false
    category protects: nothing by default (the spec may gate the key-frequency risks, a
    conservative view of PRAM's protection)."""
    return {}


def refuse_k_gates(params: Any, checks: Mapping[str, float]) -> list[str]:
    """A k gate under perturbation: the method promises no k, so refuse it before the run."""
    return [
        f"checks.{key}: method {params.name} is perturbative and gives no k-anonymity (records "
        "are published with perturbed values of their own, not in groups of identical rows); "
        f"remove {key} and gate disclosure risk by record linkage (max_record_linkage) "
        "instead, or choose a microaggregation method (mdav) for k-anonymity"
        for key in K_GATES
        if checks.get(key, 0) > 1
    ]


def _points(columns: list[str], Z: np.ndarray, details: dict[str, Any]) -> MaskResult:
    return MaskResult(masked=pd.DataFrame(Z, columns=columns), points=Z, details=details)


def _mask_noise(
    X: np.ndarray,
    columns: list[str],
    params: NoiseParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    # the variances (and with correlated noise the covariances) square the values
    limit = float(np.sqrt(np.finfo(np.float64).max / (16.0 * max(X.shape[0], 1))))
    check_magnitude(X, limit, columns=columns, what="noise addition's variances")
    Z = add_noise(X, method=params.kind, noise=params.noise, rng=rng)
    return _points(
        columns,
        Z,
        {"strategy": f"{params.kind} noise, {params.noise:g} % (sdcMicro addNoise)"},
    )


def _mask_rank_swap(
    X: np.ndarray,
    columns: list[str],
    params: RankSwapParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    Z = rank_swap(X, p=params.p, rng=rng)
    changed = (Z != X).sum(axis=0)
    return _points(
        columns,
        Z,
        {
            "strategy": f"rank swapping within {params.p:g} % of the ranks (sdcMicro rankSwap)",
            "values_swapped": {c: int(v) for c, v in zip(columns, changed, strict=True)},
        },
    )


def _shuffle_predictors(params: ShuffleParams) -> list[str]:
    """The columns beside the keys that shuffling reads: its predictors."""
    return list(params.predictors)


def predictor_numbers(frame: pd.DataFrame) -> np.ndarray:
    """The predictor columns ``frame`` (n, q) as floats, missing as NaN. A column published
    as the file writes it (``1.50``) is read as text by the source reader and parsed here.

    Raises ``ParameterError`` naming a column that holds text or booleans (use
    ``predictor_problem`` first for the message of the preflight)."""
    parts = []
    for name in frame.columns:
        values = _numbers(frame[name])
        if values is None:
            raise ParameterError(
                f"predictor {name} is not numeric; name numeric columns as predictors",
                field="predictors",
            )
        parts.append(values)
    return np.column_stack(parts) if parts else np.zeros((len(frame), 0))


def _numbers(column: pd.Series) -> np.ndarray | None:
    """``column`` as floats (missing as NaN), or None when it holds text or booleans."""
    if pd.api.types.is_bool_dtype(column.dtype):
        return None
    if column.dtype == object and column.map(lambda v: isinstance(v, bool | np.bool_)).any():
        return None
    numbers = pd.to_numeric(column, errors="coerce")
    if (numbers.isna() & column.notna()).any():  # a value that does not read as a number
        return None
    return numbers.to_numpy(dtype=np.float64, na_value=np.nan)


def predictor_problem(
    predictors: Sequence[str],
    keys: Sequence[str],
    published: Sequence[str],
    columns: Mapping[str, pd.Series],
) -> str | None:
    """The first reason ``predictors`` cannot condition a shuffle, as one line naming the
    fix, or None. ``keys``: the quasi-identifiers (all masked); ``published``: the columns
    published unchanged (``keep:``, ``sensitive:`` not fuzzy-mapped); ``columns``: the
    file's columns by name (only the predictors' values are read).

    Sound predictors are numeric columns published unchanged, complete, with more than one
    value: the conditional relation is kept with a column the user sees; conditioning on a
    column withheld or published changed would write its values into the released keys, and
    conditioning on a key (masked) would give its original values back (a shuffled key
    drawn on itself lands near its own record)."""
    fix = "name a numeric column published unchanged (keep: or sensitive:), or remove it"
    for c in predictors:
        if c in keys:
            return (
                f"method.predictors: {c} is a quasi-identifier, masked by the release, and "
                "keys drawn conditionally on its original values would give them away (a "
                f"shuffled key on itself lands near its own record); {fix}"
            )
        if c not in columns:
            return f"method.predictors: {c} is not a column of the source; {fix}"
        if c not in published:
            return (
                f"method.predictors: {c} is not published unchanged, and the shuffled keys "
                "would carry its values into the release; list it under keep: (or "
                f"sensitive:), or remove it from predictors"
            )
    for c in predictors:
        values = _numbers(columns[c])
        if values is None:
            return (
                f"method.predictors: {c} holds text or booleans, and the shuffle conditions "
                f"on the ranks of numbers; {fix}"
            )
        missing = int(np.isnan(values).sum())
        if missing:
            return (
                f"method.predictors: {c} has {missing} missing value(s), and the shuffle "
                f"conditions every record on its predictors; {fix} (or fill them)"
            )
        if values.size and values.max() == values.min():  # not their difference: +-1e308
            return (
                f"method.predictors: {c} holds one value on every record and has no ranks "
                "to condition on; remove it from predictors"
            )
    return None


def _mask_shuffle(
    X: np.ndarray,
    columns: list[str],
    params: ShuffleParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
    further: pd.DataFrame | None = None,
) -> MaskResult:
    S = None if further is None else predictor_numbers(further[list(params.predictors)])
    Z = shuffle(X, S, rng=rng)
    moved = (Z != X).sum(axis=0)
    given = (
        f"conditioned on the predictors {', '.join(params.predictors)} (the conditional "
        "mean and covariance of the normal scores given theirs)"
        if S is not None
        else "without predictors"
    )
    return _points(
        columns,
        Z,
        {
            "strategy": "data shuffling (Muralidhar and Sarathy 2006, sdcMicro shuffle, "
            f"method ds) {given}: each key's own values reordered by the ranks of a draw "
            "from the keys' normal copula",
            "values_moved": {c: int(v) for c, v in zip(columns, moved, strict=True)},
        },
    )


def published_unchanged(spec: ReleaseView) -> list[str]:
    """The columns a release publishes as they are: ``keep:``, and ``sensitive:`` but those
    ``fuzzy_map:`` changes."""
    mapped = getattr(spec, "fuzzy_map", None) or {}
    return [*spec.keep, *(c for c in spec.sensitive if c not in mapped)]


def _check_shuffle(spec: ReleaseView, keys: Sequence[Key], rows: int) -> None:
    """Numeric keys only, and no key among the predictors."""
    _check_numeric(spec, keys, rows)
    names = {k.name for k in keys}
    problem = predictor_problem(
        [c for c in spec.method.predictors if c in names], list(names), [], {}
    )
    if problem:
        refuse(problem, field="method.predictors")


def _check_data_shuffle(spec: ReleaseView, data: Any, keys: Sequence[Key]) -> None:
    """A key with one value on every record has no ranks to shuffle by; the predictors are
    numeric columns published unchanged, complete, of more than one value."""
    numeric, _ = masked_as(keys)
    if not numeric or data.num_rows < 3:
        if numeric:
            refuse("method shuffle ranks and correlates the records and needs at least 3")
        return
    X = key_numbers(data, numeric)
    one_value = np.nanmax(X, axis=0) == np.nanmin(X, axis=0)  # not their difference: +-1e308
    flat = [c for c, f in zip(numeric, one_value, strict=True) if f]
    if flat:
        refuse(
            f"method shuffle ranks each key and {', '.join(flat)} hold one value on every "
            "record (nothing to reorder, and no rank correlation); leave them out of "
            "quasi_identifiers or publish them under keep:"
        )
    predictors = spec.method.predictors
    present = {c: data.column(c).to_pandas() for c in predictors if c in data.column_names}
    problem = predictor_problem(
        predictors, [k.name for k in keys], published_unchanged(spec), present
    )
    if problem:
        refuse(problem, field="method.predictors")


def _check_numeric(spec: ReleaseView, keys: Sequence[Key], rows: int) -> None:
    """Numeric keys only; correlated noise needs two of them."""
    numeric, categorical = masked_as(keys)
    name = spec.method.name
    step = getattr(spec, PRAM_STEP, None)  # PRAMed keys are released as PRAM left them
    categorical = [c for c in categorical if step is None or c not in step.columns]
    if categorical:
        refuse(
            f"method {name} perturbs numeric keys and has no k to stratify the categorical "
            f"keys {', '.join(categorical)} by; PRAM them first (`pram: {{columns: [...]}}`), "
            "or choose mdav for every key"
        )
    if getattr(spec.method, "kind", None) == "correlated" and len(numeric) < 2:
        refuse(
            "noise kind correlated draws noise with the keys' covariance and needs at least "
            "two numeric keys; use kind: additive",
            field="method.kind",
        )


def _mask_pram_keys(
    enc: EncodedKeys,
    params: PramParams,
    rng: np.random.Generator,
    settings: SuppressionSettings,
    constraints: LinearConstraints | None = None,
    conditional: Sequence[Any] = (),
) -> EncodedRelease:
    if enc.numeric_keys:
        raise ParameterError(
            "pram masks categorical keys only; perturb numeric keys with noise or rank_swap, "
            "or bin them with `recode:`"
        )
    codes, invariance = _pram_codes(enc, enc.categorical_names, params.pd, params.alpha, rng)
    return EncodedRelease(
        numeric=enc.numeric,
        codes=codes,
        promises={},  # no k: the spec gates what it needs (refuse_k_gates)
        details={
            "strategy": "PRAM with sdcMicro's invariant transition matrix per key "
            f"(pd {params.pd:g}, alpha {params.alpha:g}); the matrices are not recorded",
            "invariance": invariance,
        },
    )


def _mask_pram(
    X: np.ndarray,
    columns: list[str],
    params: PramParams,
    rng: np.random.Generator,
    constraints: LinearConstraints | None,
) -> MaskResult:
    raise ParameterError(
        "pram masks categorical keys only; perturb numeric keys with noise or rank_swap, or "
        "bin them with `recode:`"
    )


def _check_pram(spec: ReleaseView, keys: Sequence[Key], rows: int) -> None:
    """Categorical keys only: a numeric key would be published as it is."""
    numeric, _ = masked_as(keys)
    if numeric:
        refuse(
            f"method pram perturbs categorical keys, and {', '.join(numeric)} are numeric "
            "(published unmasked otherwise): bin them with `recode:`, or perturb them with "
            "noise or rank_swap in a release of their own"
        )


NOISE = Method(
    NoiseParams,
    _mask_noise,
    promises=perturbation_promises,
    conflicts=refuse_k_gates,
    summary="noise addition to numeric keys (additive or correlated, as sdcMicro addNoise)",
    key_kinds=frozenset({"numeric"}),
    blocks=False,
    check_spec=_check_numeric,
)
RANK_SWAP = Method(
    RankSwapParams,
    _mask_rank_swap,
    promises=perturbation_promises,
    conflicts=refuse_k_gates,
    summary="rank swapping of numeric keys (Moore 1996, as sdcMicro rankSwap)",
    key_kinds=frozenset({"numeric"}),
    blocks=False,
    check_spec=_check_numeric,
)
SHUFFLE = Method(
    ShuffleParams,
    _mask_shuffle,
    promises=perturbation_promises,
    conflicts=refuse_k_gates,
    summary="data shuffling of numeric keys (Muralidhar and Sarathy 2006, as sdcMicro shuffle "
    "with method ds): each key keeps its values, reordered",
    key_kinds=frozenset({"numeric"}),
    blocks=False,
    check_spec=_check_shuffle,
    check_data=_check_data_shuffle,
    further_columns=_shuffle_predictors,
)
PRAM = Method(
    PramParams,
    _mask_pram,
    promises=no_promises,
    conflicts=refuse_k_gates,
    summary="post-randomization of categorical keys (invariant PRAM, as sdcMicro pram)",
    mask_keys=_mask_pram_keys,
    key_kinds=frozenset({"nominal", "ordinal"}),
    blocks=False,
    missing_numbers=True,  # no numeric key reaches it (check_spec)
    check_spec=_check_pram,
)
