"""Publication gates for the loss, risk and anonymity measures (entries of ``checks.CHECKS``).

Each entry of :data:`MEASURE_CHECKS` is ``(spec key, direction, compute(ctx), description)``;
``checks.py`` turns them into :class:`~sdcflow.tasks.gates.registry.Check` objects. The figures are
computed on the quasi-identifiers that went into masking (``ctx.original``) and the released
point values (``ctx.result.points``); percentages are in [0, 100].

================================  ====  =========================================================
spec key under ``checks:``        rule  figure
================================  ====  =========================================================
max_generic_loss_means            <=    mean relative difference of the means, %
max_generic_loss_variances        <=    mean relative difference of the variances, %
max_generic_loss_covariances      <=    mean relative difference of the covariances, %
max_generic_loss_correlations     <=    mean absolute difference of the correlations (-1..1 units)
max_pil_means                     <=    probabilistic information loss of the means, %
max_pil_variances                 <=    PIL of the variances, %
max_pil_covariances               <=    PIL of the covariances, %
max_pil_correlations              <=    PIL of the correlations, %
max_pil                           <=    average of the four PIL figures, %
max_cluster_loss_d1               <=    centre distance d1 between fuzzy clusterings
max_cluster_loss_d2               <=    membership distance d2 between fuzzy clusterings
min_cluster_rand                  >=    Rand index of the α-cuts (α from ``cluster_loss``)
min_cluster_adjusted_rand         >=    adjusted Rand index of the α-cuts
min_cluster_jaccard               >=    Jaccard index of the α-cuts
max_record_linkage                <=    distance-based record linkage, % of records re-identified
max_interval_disclosure           <=    rank-based interval disclosure, %
max_transparency_reidentification <=    % re-identified by an intruder who knows method and k
transparency_k_anonymity          >=    1 / (largest re-identification probability of a record)
l_diversity                       >=    fewest distinct sensitive values in an equivalence class
entropy_l_diversity               >=    smallest exp(entropy) of a sensitive column in a class
================================  ====  =========================================================

Keys of ``CheckContext.extra`` these checks read (the lead wires them from the spec):

``sensitive``
    Required by ``l_diversity`` and ``entropy_l_diversity``: the spec's ``sensitive:`` list of
    column names, looked up in ``ctx.kept`` (the columns published unchanged), or directly a
    DataFrame of the sensitive values of the released records (n rows, same order).
``interval_disclosure_p``
    Optional: percentage or list of percentages for ``max_interval_disclosure``; default
    1, 2, ..., 10 averaged, as in the literature.
``cluster_loss``
    Optional dict for the cluster checks: ``c`` (clusters, default 10, at most n), ``m``
    (default 1.5), ``restarts`` (default 20), ``alpha`` (α-cut of the index checks, default
    0.5), ``random_state`` (default 0: the measure is reproducible; it is no secret).
    Cost: ``2 * restarts`` FCM runs, each about 0.13 s per iteration at 100 000 x 10 records
    and c = 10 here (19 iterations on Gaussian data, a few hundred on skewed survey data), so
    lower ``restarts`` for large files; α below 0.5 makes the index checks O(n^2 c).
``constraints``
    Optional: the ``LinearConstraints`` of the edit rules, so that the transparency intruder
    reruns ``constrained_fuzzy`` with them (without, he reruns it unconstrained and maps his
    centres to the nearest released ones).

The transparency intruder (``max_transparency_reidentification``, ``transparency_k_anonymity``)
reruns the method on the original quasi-identifiers: fuzzy microaggregation gives him every
record's draw distribution, any other method a crisp grouping (probability 1/|group|, groups
from ``ctx.result.groups`` or else the classes of identical released rows); see
:func:`transparency_probabilities`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from sdcflow.errors import ParameterError
from sdcflow.tasks.measures.anonymity import (
    entropy_l_diversity,
    l_diversity,
    probabilistic_k_anonymity,
)
from sdcflow.tasks.measures.cluster_loss import ClusterLoss, cluster_loss
from sdcflow.tasks.measures.disclosure_risk import (
    interval_disclosure,
    model_reidentification_probabilities,
    record_linkage,
    release_reidentification_probabilities,
)
from sdcflow.tasks.measures.information_loss import (
    Statistic,
    generic_loss,
    probabilistic_loss_table,
)

if TYPE_CHECKING:
    from sdcflow.tasks.gates.registry import CheckContext

CheckSpec = tuple[str, Literal["min", "max"], Callable[["CheckContext"], float], str]


def _cached(ctx: CheckContext, key: str, compute: Callable[[], Any]) -> Any:
    """Compute once per context (several gates share one clustering or one PIL table)."""
    cache = vars(ctx).setdefault("_measure_cache", {})
    if key not in cache:
        cache[key] = compute()
    return cache[key]


def _generic(statistic: Statistic, kind: Literal["absolute", "relative"]) -> Callable[..., float]:
    def compute(ctx: CheckContext) -> float:
        return generic_loss(ctx.original, ctx.result.points, statistic, kind=kind)

    return compute


def _pil(statistic: str) -> Callable[..., float]:
    def compute(ctx: CheckContext) -> float:
        table = _cached(
            ctx, "pil", lambda: probabilistic_loss_table(ctx.original, ctx.result.points)
        )
        return float(table[statistic])

    return compute


def _cluster_options(ctx: CheckContext) -> dict[str, Any]:
    opts = dict(ctx.extra.get("cluster_loss") or {})
    unknown = set(opts) - {"c", "m", "restarts", "alpha", "random_state"}
    if unknown:
        raise ParameterError(
            f"cluster_loss has unknown option(s) {sorted(unknown)}; "
            "use c, m, restarts, alpha, random_state"
        )
    return opts


def _cluster(ctx: CheckContext) -> ClusterLoss:
    def compute() -> ClusterLoss:
        opts = _cluster_options(ctx)
        alpha = float(opts.pop("alpha", 0.5))
        opts["c"] = min(int(opts.get("c", 10)), ctx.original.shape[0])
        return cluster_loss(ctx.original, ctx.result.points, alphas=(alpha,), **opts)

    return _cached(ctx, "cluster_loss", compute)


def _cluster_distance(name: str) -> Callable[..., float]:
    def compute(ctx: CheckContext) -> float:
        return float(getattr(_cluster(ctx), name))

    return compute


def _cluster_index(name: str) -> Callable[..., float]:
    def compute(ctx: CheckContext) -> float:
        (indices,) = _cluster(ctx).alpha.values()
        return float(indices[name])

    return compute


def _record_linkage(ctx: CheckContext) -> float:
    return record_linkage(ctx.original, ctx.result.points)


def _interval_disclosure(ctx: CheckContext) -> float:
    p = ctx.extra.get("interval_disclosure_p", tuple(range(1, 11)))
    return interval_disclosure(ctx.original, ctx.result.points, p)


FUZZY_METHODS = ("fuzzy", "constrained_fuzzy")


def transparency_probabilities(
    method: Any,
    X: np.ndarray,
    points: np.ndarray,
    groups: np.ndarray | None = None,
    *,
    constraints: Any = None,
    random_state: int = 0,
) -> np.ndarray:
    """Re-identification probability of every record for the transparency intruder.

    The intruder knows the method and its parameters (``method``, the spec's method block)
    and holds the original quasi-identifiers ``X`` (n, d); ``points`` (n, d) are the released
    values and ``groups`` (n,) the released centre of each record (default: classes of
    identical released rows).

    * ``fuzzy`` / ``constrained_fuzzy``: he reruns the fit of fuzzy microaggregation
      (``fuzzy_partition``, same k, m1/m2 or lambda1/lambda2, guarantee, restarts; his own
      ``random_state``; the linear edit rules when given as ``constraints``) and uses its draw
      distributions, mapped to the released centres (see
      :func:`~sdcflow.tasks.measures.disclosure_risk.model_reidentification_probabilities`). Under
      ``guarantee: k_anonymity`` / ``both`` the released draw is the constrained redraw, which
      moves some probability to neighbouring centres; the intruder's model is the free draw.
      Cost: one more fit, as expensive as the masking.
    * any other method: crisp, ``1/|group|`` (MDAV is deterministic, so rerunning it finds
      each record's group).

    Shapes -> (n,) in [0, 1].
    """
    if groups is None:
        groups = np.unique(points, axis=0, return_inverse=True)[1].reshape(-1)
    groups = np.asarray(groups)
    if getattr(method, "name", None) not in FUZZY_METHODS:
        return release_reidentification_probabilities(X, points, groups)
    from sdcflow.tasks.fuzzy.microaggregation import fuzzy_partition

    part = fuzzy_partition(
        X,
        method.k,
        m1=method.m1,
        m2=method.m2,
        lambda1=method.lambda1,
        lambda2=method.lambda2,
        guarantee=method.guarantee,
        constraints=constraints if method.name == "constrained_fuzzy" else None,
        restarts=method.restarts,
        random_state=random_state,
    )
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)  # the fit's own standardization
    labels, first = np.unique(groups, return_index=True)
    released = np.zeros((int(labels.max()) + 1, X.shape[1]))
    released[labels] = (points[first] - mean) / scale
    return model_reidentification_probabilities(
        groups, released, part.centers_std, part.indptr, part.leaf, part.prob
    )


def _reidentification(ctx: CheckContext) -> np.ndarray:
    def compute() -> np.ndarray:
        return transparency_probabilities(
            ctx.method,
            ctx.original,
            ctx.result.points,
            ctx.result.groups,
            constraints=ctx.extra.get("constraints"),
        )

    return _cached(ctx, "reidentification", compute)


def _transparency(ctx: CheckContext) -> float:
    return float(100.0 * _reidentification(ctx).mean())


def _transparency_k(ctx: CheckContext) -> float:
    return probabilistic_k_anonymity(_reidentification(ctx))


def _sensitive(ctx: CheckContext) -> pd.DataFrame:
    sens = ctx.extra.get("sensitive")
    if sens is None:
        raise ParameterError(
            "l-diversity checks need the sensitive columns: add `sensitive: [column, ...]` to "
            "the release spec (columns published unchanged under `keep:`)"
        )
    if isinstance(sens, (pd.DataFrame, pd.Series)):
        return pd.DataFrame(sens)
    names = [sens] if isinstance(sens, str) else list(sens)
    if ctx.kept is None or not set(names) <= set(ctx.kept.columns):
        have = [] if ctx.kept is None else list(ctx.kept.columns)
        raise ParameterError(
            f"sensitive column(s) {sorted(set(names) - set(have))} are not among the columns "
            f"given to the checks {have}; name them under `sensitive:` in the spec"
        )
    return ctx.kept[names]


def _l_diversity(ctx: CheckContext) -> float:
    return float(l_diversity(ctx.result.released_identifiers, _sensitive(ctx)))


def _entropy_l_diversity(ctx: CheckContext) -> float:
    return entropy_l_diversity(ctx.result.released_identifiers, _sensitive(ctx))


MEASURE_CHECKS: list[CheckSpec] = [
    ("max_generic_loss_means", "max", _generic("means", "relative"),
     "mean relative difference of the means, %"),
    ("max_generic_loss_variances", "max", _generic("variances", "relative"),
     "mean relative difference of the variances, %"),
    ("max_generic_loss_covariances", "max", _generic("covariances", "relative"),
     "mean relative difference of the covariances (upper triangle with diagonal), %"),
    ("max_generic_loss_correlations", "max", _generic("correlations", "absolute"),
     "mean absolute difference of the correlations"),
    ("max_pil_means", "max", _pil("means"), "probabilistic information loss of the means, %"),
    ("max_pil_variances", "max", _pil("variances"), "PIL of the variances, %"),
    ("max_pil_covariances", "max", _pil("covariances"), "PIL of the covariances, %"),
    ("max_pil_correlations", "max", _pil("correlations"), "PIL of the correlations, %"),
    ("max_pil", "max", _pil("average"), "average PIL of means, variances, covariances, "
     "correlations, %"),
    ("max_cluster_loss_d1", "max", _cluster_distance("d1"),
     "fuzzy c-means centre distance d1, original vs released (standardized units)"),
    ("max_cluster_loss_d2", "max", _cluster_distance("d2"),
     "fuzzy c-means membership distance d2, summed over records"),
    ("min_cluster_rand", "min", _cluster_index("rand"), "Rand index of the FCM alpha-cuts"),
    ("min_cluster_adjusted_rand", "min", _cluster_index("adjusted_rand"),
     "adjusted Rand index of the FCM alpha-cuts"),
    ("min_cluster_jaccard", "min", _cluster_index("jaccard"),
     "Jaccard index of the FCM alpha-cuts"),
    ("max_record_linkage", "max", _record_linkage,
     "distance-based record linkage: % of released records linked to their own original"),
    ("max_interval_disclosure", "max", _interval_disclosure,
     "rank-based interval disclosure: % of original values inside the released rank interval"),
    ("max_transparency_reidentification", "max", _transparency,
     "% of records re-identified by an intruder who knows the method and its parameters"),
    ("transparency_k_anonymity", "min", _transparency_k,
     "probabilistic k-anonymity: 1 / largest re-identification probability (transparency)"),
    ("l_diversity", "min", _l_diversity,
     "fewest distinct values of a sensitive column in an equivalence class"),
    ("entropy_l_diversity", "min", _entropy_l_diversity,
     "smallest exp(entropy) of a sensitive column in an equivalence class"),
]  # fmt: skip
