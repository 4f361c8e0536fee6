"""Anonymity gates: k-anonymity over every released key, per block, with the ``keep``
columns, probabilistic (jointly and per block), l-diversity, and the transparency
intruder's k.

k-anonymity is counted over every column an intruder can link on, as released
(``MaskResult.released_identifiers``: numeric and categorical keys), as the size of the
smallest class of identical released rows, a missing or suppressed value being a value of its
own (:mod:`sdcflow.core.measures.anonymity`): the count an intruder cannot get around.
sdcMicro's convention (a missing value matches any value) is the gate
``k_anonymity_missing_matches_any``: it is never smaller than ``k_anonymity``, so it gates a
release alone only where the spec lowers ``k_anonymity`` and accepts that explicitly
(``accept: {looser_checks: [k_anonymity]}``, recorded in the manifest). ``keep`` columns are
published unchanged; ``keep_k_anonymity`` counts k as if the intruder also knew them (their
missing values as values: sdcflow never suppresses them), and is on by default with the
method's k, so an identifying column (an e-mail, a near-unique code, also one that most
records leave blank) in ``keep`` blocks publication unless the spec lowers that gate
explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import ConfigDict, Field

from sdcflow.core.measures.anonymity import (
    entropy_l_diversity,
    expected_tuple_sizes,
    k_anonymity,
    l_diversity,
    probabilistic_k_anonymity,
)
from sdcflow.errors import InputError, Reason
from sdcflow.gates.base import Gate, GateContext, GateOption
from sdcflow.methods.base import CrispIntruder, MaskResult, transparency_probabilities
from sdcflow.spec_model import SpecModel


class TransparencyOptions(SpecModel):
    """Settings of the transparency intruder (gates ``max_transparency_reidentification``,
    ``transparency_k_anonymity``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    intruder: Literal["refit", "manifest"] = Field(
        "refit",
        description="randomized methods: rerun the method (exact, as costly as masking) or "
        "use the draw fuzziness the manifest records (cheap)",
    )
    random_state: int = Field(0, description="the intruder's own seed (not a secret)")


TRANSPARENCY = GateOption(
    "transparency", TransparencyOptions, TransparencyOptions(), "the transparency intruder"
)


def _k_anonymity(ctx: GateContext) -> float:
    return float(k_anonymity(ctx.result.released_identifiers))


def _k_missing_matches_any(ctx: GateContext) -> float:
    return float(k_anonymity(ctx.result.released_identifiers, convention="missing_matches_any"))


def _block_k_anonymity(ctx: GateContext) -> float:
    """Smallest k over the blocks masked separately (the whole file when there are none)."""
    if not ctx.result.blocks:
        return _k_anonymity(ctx)
    return float(min(k_anonymity(ctx.result.masked[b.released_columns]) for b in ctx.result.blocks))


def _block_probabilistic_k_anonymity(ctx: GateContext) -> float:
    """Smallest expected number of records per released group, per block when masked by
    blocks (the whole file when there are none); a deterministic release's expected sizes
    are its group sizes. Each block's figure is the smallest expected size over all of its
    candidate centres, the figure the method guarantees to be >= k."""
    parts = [b.result for b in ctx.result.blocks] or [ctx.result]
    smallest = []
    for part in parts:
        if part.expected_sizes is not None:
            smallest.append(float(np.min(part.expected_sizes)))
        else:
            sizes = np.bincount(part.group_labels())
            smallest.append(float(sizes[sizes > 0].min()))
    return min(smallest)


def _probabilistic_k_anonymity(ctx: GateContext) -> float:
    """Smallest expected number of records per released group; with blocks, per released
    tuple of block groups.

    Without blocks: :func:`_block_probabilistic_k_anonymity`, the smallest expected size
    over every candidate centre. With blocks drawn independently, the released record is
    the tuple ``t`` of its groups, and its expected count is
    ``E(t) = sum_i prod_b P_b[i, t_b]`` over the blocks' draw probabilities
    (:func:`~sdcflow.core.measures.anonymity.expected_tuple_sizes`); the figure is the
    smallest E(t) over the tuples the file releases. For one block that would be the
    smallest expected size over the *released* centres, which is at least the per-centre
    figure above (the method's guarantee: every centre >= k); with several blocks E(t) can
    be far below every block's figure. Deterministic blocks give the joint group sizes.
    Under ``guarantee: k_anonymity`` / ``both`` the probabilities are the free draw's (as
    the per-centre figure), before under-filled centres were closed.
    """
    if not ctx.result.blocks:
        return _block_probabilistic_k_anonymity(ctx)
    parts = [b.result for b in ctx.result.blocks]

    def compute() -> float:
        _, expected = expected_tuple_sizes(
            [p.draw_matrix() for p in parts], [p.group_labels() for p in parts]
        )
        return float(expected.min())

    return ctx.cached("joint-expected-sizes", compute)


def reidentification(ctx: GateContext) -> np.ndarray:
    """The transparency intruder's success probability per record, shared by two gates."""

    def compute() -> np.ndarray:
        opts = ctx.option(TRANSPARENCY)
        result = ctx.result
        if opts.intruder == "manifest":
            result = _with_manifest_intruders(result)
        return transparency_probabilities(
            ctx.original, ctx.columns, result, random_state=opts.random_state
        )

    return ctx.cached("reidentification", compute)


@dataclass(frozen=True)
class RecordRisk:
    """The transparency intruder's re-identification probability of every record.

    Attributes
    ----------
    probabilities : ndarray of shape (n,), in [0, 1]
        In input row order (never published: the report shows their distribution).
    intruder : str
        Which intruder computed them, in one sentence.
    """

    probabilities: np.ndarray
    intruder: str


#: Records x released groups above which the report does not run the cheap ``manifest``
#: intruder unless a gate asks for the risk: it holds every record's membership to every
#: released centre, so its time and memory grow with the pairs (100 000 records of
#: ``constrained_fuzzy``, about 15 000 centres, do not fit in tens of GB).
MANIFEST_PAIRS = 2e8


def record_risk(ctx: GateContext) -> RecordRisk | None:
    """Per-record risk for the report: the gates' own probabilities when a gate computed them
    (``max_transparency_reidentification``, ``transparency_k_anonymity``), never recomputed;
    otherwise the cheap ``manifest`` intruder, unless the spec set the intruder itself.

    None for a randomized release masked by blocks that no gate measured: the intruder over
    blocks enumerates every record's combinations of block supports (a loop per record), a
    cost a release pays only when it gates the risk; likewise for a randomized release of
    more than :data:`MANIFEST_PAIRS` records x released groups."""
    parts = [b.result for b in ctx.result.blocks] or [ctx.result]
    if all(isinstance(p.intruder, CrispIntruder) for p in parts):
        return RecordRisk(
            reidentification(ctx),
            "deterministic release: an intruder who reruns the method finds every record's "
            "group, so a record's probability is 1 / the records in its released group",
        )
    explicit = getattr(ctx.options, TRANSPARENCY.key, None) is not None
    if ctx.computed("reidentification") or explicit:
        mode = ctx.option(TRANSPARENCY).intruder
        return RecordRisk(reidentification(ctx), _INTRUDERS[mode])
    if ctx.result.blocks:
        return None
    released = np.unique(ctx.result.group_labels()).size
    if ctx.original.shape[0] * released > MANIFEST_PAIRS:
        return None
    probabilities = ctx.cached(
        "reidentification-manifest",
        lambda: transparency_probabilities(
            ctx.original, ctx.columns, _with_manifest_intruders(ctx.result)
        ),
    )
    return RecordRisk(
        probabilities,
        _INTRUDERS["manifest"] + "; no transparency gate ran, so the report uses this cheap "
        "model (gate max_transparency_reidentification for the refit intruder)",
    )


_INTRUDERS = {
    "refit": "the intruder knows the method and its parameters, reruns it on the original "
    "records and bets on the released group each record most likely became (refit)",
    "manifest": "the intruder takes each record's memberships to the released centres with the "
    "draw fuzziness the manifest records and bets on the most likely one (manifest)",
}


def _with_manifest_intruders(result: MaskResult) -> MaskResult:
    """The same result with every intruder in its cheap ``manifest`` mode."""
    if not result.blocks:
        return replace(result, intruder=result.intruder.with_mode("manifest"))
    blocks = [
        replace(b, result=replace(b.result, intruder=b.result.intruder.with_mode("manifest")))
        for b in result.blocks
    ]
    return replace(result, blocks=blocks)


def _transparency_k(ctx: GateContext) -> float:
    return probabilistic_k_anonymity(reidentification(ctx))


def keep_k(ctx: GateContext) -> float:
    """k over every released key and the ``keep`` columns: the intruder who knows the keys
    and the columns published as they are (jointly, also when the keys were masked in
    blocks); the plain k when the spec keeps no column.

    A missing value is a value here, as in every k of sdcflow: sdcflow never suppresses a
    kept column, so its blanks are the source's own, published as they are, and they hide
    nothing (as a wildcard they would let a sparse identifying column pass: a few unique
    e-mails among thousands of blanks)."""
    if ctx.keep is None or ctx.keep.shape[1] == 0:
        return _k_anonymity(ctx)
    keep = ctx.keep.reset_index(drop=True)
    codes = pd.DataFrame(
        {c: pd.factorize(keep[c], use_na_sentinel=False)[0] for c in keep.columns},
        index=keep.index,
    )
    released = ctx.result.released_identifiers.reset_index(drop=True)
    return float(k_anonymity(pd.concat([released, codes], axis=1)))


def _sensitive(ctx: GateContext) -> pd.DataFrame:
    if ctx.sensitive is None or ctx.sensitive.shape[1] == 0:
        raise InputError(
            "l-diversity checks need the sensitive columns: add `sensitive: [column, ...]` to "
            "the release spec",
            code=Reason.SPEC_CONTRADICTION,
        )
    return ctx.sensitive


def _l_diversity(ctx: GateContext) -> float:
    return float(l_diversity(ctx.result.released_identifiers, _sensitive(ctx)))


def _entropy_l_diversity(ctx: GateContext) -> float:
    return entropy_l_diversity(ctx.result.released_identifiers, _sensitive(ctx))


GATES = [
    Gate(
        "k_anonymity",
        "min",
        _k_anonymity,
        "smallest class of identical released rows over every released key (a missing or "
        "suppressed value is a value of its own)",
        "records",
        per_block="block_k_anonymity",
        with_keep="keep_k_anonymity",
    ),
    Gate(
        "k_anonymity_missing_matches_any",
        "min",
        _k_missing_matches_any,
        "smallest number of released records matching a record over every released key, a "
        "missing or suppressed value matching any value (sdcMicro's convention; looser than "
        "k_anonymity)",
        "records",
    ),
    Gate(
        "keep_k_anonymity",
        "min",
        keep_k,
        "smallest k if the intruder also knew the keep columns (published unchanged; a blank "
        "there is a value, not a wildcard)",
        "records",
    ),
    Gate(
        "block_k_anonymity",
        "min",
        _block_k_anonymity,
        "smallest k-anonymity among blocks of quasi-identifiers masked separately",
        "records",
    ),
    Gate(
        "probabilistic_k_anonymity",
        "min",
        _probabilistic_k_anonymity,
        "smallest expected records per released group, with blocks per released tuple of "
        "block groups (random draw; else group size)",
        "records",
        per_block="block_probabilistic_k_anonymity",
    ),
    Gate(
        "block_probabilistic_k_anonymity",
        "min",
        _block_probabilistic_k_anonymity,
        "smallest expected records per centre among blocks of quasi-identifiers masked "
        "separately (random draw; else group size)",
        "records",
    ),
    Gate(
        "transparency_k_anonymity",
        "min",
        _transparency_k,
        "1 / largest re-identification probability for an intruder who knows the method",
        "records",
        option=TRANSPARENCY,
    ),
    Gate(
        "l_diversity",
        "min",
        _l_diversity,
        "fewest distinct values of a sensitive column in a class of identical released rows",
        "values",
        requires=frozenset({"sensitive"}),
        measures="sensitive",
    ),
    Gate(
        "entropy_l_diversity",
        "min",
        _entropy_l_diversity,
        "smallest exp(entropy) of a sensitive column in a class of identical released rows",
        "values",
        requires=frozenset({"sensitive"}),
        measures="sensitive",
    ),
]
