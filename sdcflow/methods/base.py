"""What every masking method declares and returns.

A method is a :class:`Method` entry of the registry: its parameters (a pydantic model, the
``method:`` block of the release spec), an adapter that masks a float matrix, the gates that
verify what it promises, and the intruder model that attacks it. As in ARX's privacy models,
the method declares its guarantee and its attack model; no other code branches on its name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn, Protocol

import numpy as np
import pandas as pd
from pydantic import ConfigDict
from scipy import sparse

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.errors import InputError, ParameterError, Reason
from sdcflow.methods.keys import Key, KeyKind
from sdcflow.spec_model import SpecModel


class MethodParams(SpecModel):
    """Base of every method's parameters; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str

    def unhashed_defaults(self) -> set[str]:
        """The options at their default that the spec hash leaves out: those a method gained
        after specs without them were released (``json_schema_extra={"added": True}``), so
        that an unchanged spec keeps its hash across the upgrade and a re-run is still
        "already published"."""
        return {
            name
            for name, field in type(self).model_fields.items()
            if isinstance(field.json_schema_extra, dict)
            and field.json_schema_extra.get("added")
            and getattr(self, name) == field.default
        }


class Intruder(Protocol):
    """The transparency intruder of a method: he knows the method and its parameters and
    holds the original quasi-identifiers.

    ``draw_distributions`` returns, for every original record, the probability that it was
    released as each released group: a sparse matrix of shape (n, G) over the labels of
    ``result.groups`` (rows sum to 1). A deterministic method gives each record its own
    group with probability 1.
    """

    def draw_distributions(
        self, X: np.ndarray, result: MaskResult, *, random_state: int = 0
    ) -> sparse.csr_matrix: ...

    def with_mode(self, mode: Literal["refit", "manifest"]) -> Intruder:
        """This intruder in ``refit`` mode (he reruns the method) or ``manifest`` mode (a
        cheaper model from what the manifest records); deterministic methods: itself."""
        ...


@dataclass(frozen=True)
class CrispIntruder:
    """A deterministic method: rerunning it on the original records finds every group."""

    def with_mode(self, mode: Literal["refit", "manifest"]) -> CrispIntruder:
        return self

    def draw_distributions(
        self, X: np.ndarray, result: MaskResult, *, random_state: int = 0
    ) -> sparse.csr_matrix:
        groups = result.group_labels()
        n = groups.size
        return sparse.csr_matrix(
            (np.ones(n), (np.arange(n), groups)), shape=(n, int(groups.max()) + 1)
        )


@dataclass
class MaskResult:
    """What a masking method hands to the checks and to publication.

    Attributes
    ----------
    masked : DataFrame with n rows
        The published columns that replace the quasi-identifiers, in input row order
        (point methods: the quasi-identifier columns; box: ``<q>_lo``, ``<q>_hi``, ...).
    points : ndarray of shape (n, d)
        The released point value of every quasi-identifier (box: the box centre), on which
        loss and linkage are measured.
    groups : ndarray of shape (n,), int, or None
        The group / cell / centre each record was released as, when there is one.
    intruder : Intruder
        The method's transparency intruder (declared by the method).
    expected_sizes : ndarray of shape (G,) or None
        Expected records per released group under the method's random draw (fuzzy
        methods); None when the release is deterministic (expected = realized sizes).
    draw_probabilities : sparse matrix of shape (n, G) or None
        Every record's probability of being drawn to each group under the method's random
        draw (rows sum to 1; columns over the labels of ``groups``, column sums
        ``expected_sizes``); kept so that the expected size of a tuple of groups can be
        computed when blocks were drawn independently. None when the release is
        deterministic (:meth:`draw_matrix` gives the indicator of ``groups`` then).
    blocks : list of BlockResult
        One entry per block of quasi-identifiers masked separately; empty otherwise.
    identifying : list of str or None
        The columns of ``masked`` an intruder can link on; None means all of them.
    details : dict
        Figures for the manifest only (sizes, parameters actually used...). Never read by
        a gate, never a raw value.
    point_columns : list of str or None
        The numeric keys ``points`` holds, in its column order; None: the spec's
        quasi-identifiers (every key numeric).
    promises : dict or None
        The gates this release guarantees when they differ from the method's own (a
        composition of methods, ``sdcflow.methods.mixed``); None: the method's.
    """

    masked: pd.DataFrame
    points: np.ndarray
    groups: np.ndarray | None = None
    intruder: Intruder = field(default_factory=CrispIntruder)
    expected_sizes: np.ndarray | None = None
    draw_probabilities: sparse.csr_matrix | None = None
    blocks: list[BlockResult] = field(default_factory=list)
    identifying: list[str] | None = None
    details: dict[str, Any] = field(default_factory=dict)
    point_columns: list[str] | None = None
    promises: dict[str, float] | None = None

    @property
    def released_identifiers(self) -> pd.DataFrame:
        """The published columns an intruder links on."""
        return self.masked if self.identifying is None else self.masked[self.identifying]

    def group_labels(self) -> np.ndarray:
        """``groups``, or the classes of identical released rows when there is none.

        Shapes: -> (n,) int.
        """
        if self.groups is not None:
            return np.asarray(self.groups, dtype=np.int64)
        return self.released_classes()

    def released_classes(self) -> np.ndarray:
        """The classes of identical released rows over every key (a missing value a value of
        its own): what an intruder tells apart. Two groups released alike are one class.

        Shapes: -> (n,) int.
        """
        return (
            self.released_identifiers.groupby(
                list(self.released_identifiers.columns), dropna=False, sort=False
            )
            .ngroup()
            .to_numpy(dtype=np.int64)
        )

    def draw_matrix(self) -> sparse.csr_matrix:
        """Every record's draw probabilities over the released groups: ``draw_probabilities``,
        or the indicator of :meth:`group_labels` for a deterministic release.

        Shapes: -> (n, G) sparse, rows summing to 1.
        """
        if self.draw_probabilities is not None:
            return self.draw_probabilities
        groups = self.group_labels()
        n = groups.size
        return sparse.csr_matrix(
            (np.ones(n), (np.arange(n), groups)), shape=(n, int(groups.max(initial=-1)) + 1)
        )


@dataclass
class BlockResult:
    """One block of quasi-identifiers masked on its own."""

    columns: list[str]
    result: MaskResult

    @property
    def released_columns(self) -> list[str]:
        return self.result.identifying or list(self.result.masked.columns)


MaskFn = Callable[..., MaskResult]
"""``mask(X, columns, params, rng, constraints) -> MaskResult``; a method that declares
further columns (``Method.further_columns``) also takes ``further=`` (a DataFrame)."""


def k_gate(params: Any) -> dict[str, float]:
    """Every method with a k promises k-anonymity of its release: gate it by default."""
    k = getattr(params, "k", None)
    return {"k_anonymity": float(k)} if k is not None else {}


def no_conflicts(params: Any, checks: Mapping[str, float]) -> list[str]:
    """A method whose release can meet every gate the spec may ask for."""
    return []


ScaleOut = Literal["cells", "one pass"]
Output = Literal["points", "boxes"]
GroupRelease = Literal["means", "centres", "boxes"]


class ReleaseView(Protocol):
    """What a method's own checks read of the release spec (``sdcflow.spec`` sits above the
    methods, so they see it through this shape; the preflight passes the spec itself)."""

    quasi_identifiers: Sequence[str]
    keep: Sequence[str]
    sensitive: Sequence[str]
    weight_column: str | None
    blocks: Sequence[Sequence[str]]
    checks: Mapping[str, float]

    @property
    def method(self) -> Any: ...

    @property
    def suppression(self) -> Any: ...


def refuse(message: str, field: str | None = None) -> NoReturn:
    """Refuse the spec at preflight: the method cannot release it as written (exit 2)."""
    raise InputError(message, code=Reason.SPEC_CONTRADICTION, field=field)


def no_spec_check(spec: ReleaseView, keys: Sequence[Key], rows: int) -> None:
    """A method that needs nothing of the spec beyond its declarations."""


def no_data_check(spec: ReleaseView, data: Any, keys: Sequence[Key]) -> None:
    """A method that can release any values its keys' kinds allow."""


def no_further_columns(params: Any) -> tuple[str, ...]:
    """A method whose mask reads the keys only."""
    return ()


@dataclass(frozen=True)
class Method:
    """A registry entry: everything the rest of sdcflow may know of a method.

    Attributes
    ----------
    params : the pydantic model of the method's spec block (its ``name`` field's default is
        the method's name).
    mask : ``mask(X, columns, params, rng, constraints) -> MaskResult``.
    edits_while_masking : True when the release satisfies the linear edit rules by itself
        (no repair step before it).
    promises : the gates every release with this method gets (spec thresholds may tighten
        them), i.e. what the method guarantees, verified on what it released.
    summary : one line for the documentation.
    conflicts : ``conflicts(params, checks) -> list of str``: the spec's gates (``checks:``)
        that contradict what the method promises under ``params``, one line each naming the
        fix; the preflight refuses the spec on the first (exit 2) before any work.
    mask_keys : for methods that mask numeric and categorical keys together:
        ``mask_keys(encoded keys, params, rng, suppression settings, constraints,
        conditional) -> EncodedRelease`` (``sdcflow.methods.mixed``), whose numeric
        values keep the linear rules and the conditional ones' consequents; None: the method
        masks numeric keys, and categorical ones are handled around it (strata).
    scale_out : how the Dask runner spreads the method's work: ``"cells"`` (its grouping
        runs cell by cell on the workers, ``cell_size`` records each), ``"one pass"`` (cheap
        enough for one process at any size the warehouse holds), or None: the method does
        not run under ``runner: dask`` (the preflight refuses it, reason ``runner``); or
        ``scale_out(params)`` giving one of those for the spec's parameters (fuzzy methods:
        ``"cells"`` with ``cell_size``, None without). :meth:`scaling` reads either form.
    key_kinds : the kinds of keys the method masks (with ``mask_keys`` None, categorical
        kinds listed here are the strata it masks numeric keys within); keys of another kind
        are refused at preflight (exit 2).
    blocks : whether a release may split the numeric keys into ``blocks:`` masked apart.
    missing_numbers : whether a numeric key may have missing values: True (the method, or
        MDAV-generic on the values each record has, releases them), False (refused), or
        ``missing_numbers(params) -> list of str``: the options of ``params`` that would not
        be applied to such a release (none: accepted).
    cells : whether the parameters have ``cell_size`` (cells cut along the ordered keys).
    output : ``"points"`` (a released value per key) or ``"boxes"`` (an interval per key,
        its centre as the point).
    groups : what the release publishes of groups of records, for the gates measured on
        released groups (the magnitude dominance of each group's total): ``"means"`` (each
        numeric key released as its group's mean: microaggregation; a release of
        non-negative magnitudes gets the p % rule gate by default), ``"centres"`` (a centre
        drawn for every record, the records drawn to one centre its group: fuzzy
        microaggregation), ``"boxes"`` (an interval per key spanning its group), or None: the
        method releases records, not group aggregates (noise, swapping, PRAM, suppression),
        and a gate on released groups is refused at preflight.
    check_spec : ``check_spec(spec, keys, rows)``: the method's own refusals of a spec with
        these resolved keys and ``rows`` records (``InputError``, exit 2), run at preflight
        and for every variant of ``compare``.
    check_data : ``check_data(spec, data, keys)``: the method's own refusals of the source's
        values (an Arrow table; :func:`~sdcflow.methods.keys.key_numbers`), at preflight,
        before the run starts rather than in the mask step.
    further_columns : ``further_columns(params) -> column names``: the columns beside the
        keys that the mask reads under ``params`` (``shuffle``'s ``predictors``), none by
        default. The mask then gets them as ``further=``, a DataFrame of those columns, one
        row per record of ``X`` (``apply``); its ``check_spec`` and ``check_data`` say
        which columns may serve.
    """

    params: type[MethodParams]
    mask: MaskFn
    edits_while_masking: bool = False
    promises: Callable[[Any], dict[str, float]] = k_gate
    summary: str = ""
    conflicts: Callable[[Any, Mapping[str, float]], list[str]] = no_conflicts
    mask_keys: Callable[..., Any] | None = None
    scale_out: ScaleOut | Callable[[Any], ScaleOut | None] | None = None
    key_kinds: frozenset[KeyKind] = frozenset({"numeric", "nominal", "ordinal"})
    blocks: bool = True
    missing_numbers: bool | Callable[[Any], list[str]] = False
    cells: bool = False
    output: Output = "points"
    groups: GroupRelease | None = None
    check_spec: Callable[[ReleaseView, Sequence[Key], int], None] = no_spec_check
    check_data: Callable[[ReleaseView, Any, Sequence[Key]], None] = no_data_check
    further_columns: Callable[[Any], Sequence[str]] = no_further_columns

    @property
    def name(self) -> str:
        """The method's name in the spec (``method: {name: ...}``)."""
        return str(self.params.model_fields["name"].default)

    def apply(
        self,
        X: np.ndarray,
        columns: list[str],
        params: Any,
        rng: np.random.Generator,
        constraints: LinearConstraints | None = None,
        further: pd.DataFrame | None = None,
    ) -> MaskResult:
        """``mask`` on the keys ``X`` (n, d), with ``further=`` the columns it declares
        (``further_columns``) taken from ``further`` (n rows) when it declares any.

        Raises ``ParameterError`` when a declared column is not in ``further``."""
        names = list(self.further_columns(params))
        if not names:
            return self.mask(X, columns, params, rng, constraints)
        absent = [c for c in names if further is None or c not in further.columns]
        if absent:
            raise ParameterError(
                f"method {self.name} reads {', '.join(absent)} beside the keys and was not "
                "given them; pass the records with those columns",
                field=absent[0],
            )
        assert further is not None
        if len(further) != X.shape[0]:
            raise ParameterError(
                f"method {self.name}: {len(further)} rows of {', '.join(names)} for "
                f"{X.shape[0]} records; give one row per record",
                field=names[0],
            )
        given = further[names].reset_index(drop=True)
        return self.mask(X, columns, params, rng, constraints, further=given)

    def scaling(self, params: Any) -> ScaleOut | None:
        """How the Dask runner spreads this method's work under ``params`` (``scale_out``)."""
        return self.scale_out(params) if callable(self.scale_out) else self.scale_out

    def unapplied_with_missing_numbers(self, params: Any) -> str | None:
        """What of the method would not be applied to numeric keys with missing values (which
        are released by MDAV-generic on the values each record has): ``"method <name>"``,
        ``"<name>'s <options>"``, or None when nothing (``missing_numbers``)."""
        if self.missing_numbers is True:
            return None
        if self.missing_numbers is False:
            return f"method {self.name}"
        unused = self.missing_numbers(params)
        return f"{self.name}'s {', '.join(unused)}" if unused else None


def transparency_probabilities(
    X: np.ndarray, columns: Sequence[str], result: MaskResult, *, random_state: int = 0
) -> np.ndarray:
    """Re-identification probability of every record for the method's transparency intruder
    (each block's own intruder when the release was masked by blocks).

    Shapes: X (n, d) original quasi-identifiers in ``columns`` order -> (n,) in [0, 1].
    """
    parts = (
        [(list(columns), result)]
        if not result.blocks
        else [(b.columns, b.result) for b in result.blocks]
    )
    cols = list(columns)
    distributions, labels = [], []
    for names, part in parts:
        idx = [cols.index(c) for c in names]
        distributions.append(
            part.intruder.draw_distributions(X[:, idx], part, random_state=random_state)
        )
        labels.append(part.group_labels())
    return combined_probabilities(distributions, labels)


def combined_probabilities(
    distributions: Sequence[sparse.csr_matrix], labels: Sequence[np.ndarray]
) -> np.ndarray:
    """Re-identification probability of every record for the transparency intruder.

    For one released grouping with draw distributions ``U`` (n, G) and released group sizes
    ``N_g``, the Bayes-optimal bet on record i succeeds with probability
    ``P_i = max_g U_ig / N_g`` (see :func:`~sdcflow.core.measures.disclosure_risk.\
reidentification_probabilities`). With blocks masked independently the released record is
    the tuple of its groups ``t = (g_1, ..., g_B)``; the draws are independent, so
    ``P_i = max_t prod_b U^b_{i, t_b} / N_t`` over the tuples that occur in the release,
    enumerated over each record's support (the product of its per-block supports).

    Parameters
    ----------
    distributions : sequence of B sparse matrices of shape (n, G_b)
    labels : sequence of B arrays of shape (n,), int: the released group of every record.

    Returns
    -------
    ndarray of shape (n,) in [0, 1]
    """
    if len(distributions) == 1:
        U = distributions[0].tocsr()
        counts = np.bincount(labels[0], minlength=U.shape[1]).astype(np.float64)
        inv = np.divide(1.0, counts, out=np.zeros_like(counts), where=counts > 0)
        return np.asarray(U.multiply(inv[None, :]).tocsr().max(axis=1).todense()).reshape(-1)
    tuples = np.stack([np.asarray(lab, dtype=np.int64) for lab in labels], axis=1)
    keys, inverse, counts = np.unique(tuples, axis=0, return_inverse=True, return_counts=True)
    mats = [U.tocsr() for U in distributions]
    if all(np.all(np.diff(m.indptr) == 1) and np.all(m.data == 1.0) for m in mats):
        # Deterministic blocks: every record's support is its own tuple.
        own = np.all(np.stack([m.indices for m in mats], axis=1) == tuples, axis=1)
        return np.where(own, 1.0 / counts[inverse.reshape(-1)], 0.0)
    size = {tuple(row): int(c) for row, c in zip(keys.tolist(), counts.tolist(), strict=True)}
    n = tuples.shape[0]
    out = np.zeros(n)
    for i in range(n):
        supports = [
            (m.indices[m.indptr[i] : m.indptr[i + 1]], m.data[m.indptr[i] : m.indptr[i + 1]])
            for m in mats
        ]
        best = 0.0
        for combo, prob in _support_product(supports):
            count = size.get(combo)
            if count:
                best = max(best, prob / count)
        out[i] = best
    return out


def _support_product(
    supports: list[tuple[np.ndarray, np.ndarray]],
) -> list[tuple[tuple[int, ...], float]]:
    combos: list[tuple[tuple[int, ...], float]] = [((), 1.0)]
    for idx, p in supports:
        combos = [
            ((*c, int(g)), q * float(pg))
            for c, q in combos
            for g, pg in zip(idx, p, strict=True)
            if pg > 0
        ]
    return combos
