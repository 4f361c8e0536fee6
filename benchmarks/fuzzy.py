"""Truncated (KD-tree) FCM against full FCM, and its time at scale; prints JSON lines.

Usage::

    python benchmarks/fuzzy.py compare --n 10000 --m1 1.1 1.3 1.5 2.0
    python benchmarks/fuzzy.py scale --n 100000 --m1 1.1 1.3 1.5 2.0
    python benchmarks/fuzzy.py scale --n 1000000 --m1 1.1
    python benchmarks/fuzzy.py method --n 100000 --m1 1.1 --restarts 5

Data: ``numpy.random.default_rng(seed).standard_normal((n, d))``, ``d = 10``; ``c = n // k``
clusters, ``k = 5``; one restart (both runs of ``compare`` start from the same centres), at
most ``--max-iter`` iterations, tolerance ``--tol`` (``fcm.fuzzy_c_means``).

``compare`` lines: ``m1, n, c, full_seconds, trunc_seconds, full_iter, trunc_iter,
full_converged, trunc_converged, J_full`` (full objective at the full centres),
``J_full_at_trunc`` (the *full* objective evaluated at the truncated centres: the fair
comparison), ``objective_gap`` (relative excess of the latter), ``centre_distance_mean`` /
``_max`` (matched centres, Hungarian assignment, in units of the data's standard deviation),
``full_centre_spread`` / ``trunc_centre_spread`` (mean distance of the centres from the grand
mean; about 0 when the centres collapsed, Prop. 2 of the constrained-fuzzy paper), and the
truncation diagnostics of ``fcm.py`` (kept ``q``, tail bound, dropped mass measured on 256
sampled records against all centres).

``scale`` lines: ``m1, n, c, seconds`` (wall time of ``fuzzy_c_means`` with truncation, numba
compilation excluded by a warm-up), ``cpu_seconds`` (CPU time of this process: the figure to
read on a shared machine, where wall time also counts other people's jobs), ``iterations,
converged`` and the truncation diagnostics (``kd_tree_queries``, ``graph_refreshes``...).
``compare`` lines carry ``*_cpu_seconds`` beside the wall ``*_seconds`` likewise.

``method`` times the whole method on the business survey of ``examples/`` (generated with
``--n`` records and ``--seed``; 6 quasi-identifiers, heavy-tailed, ``--errors`` share of
records with data-entry errors): ``fuzzy`` and ``constrained_fuzzy`` (the example's
``costs_add_up``, ``profit_identity`` and four non-negativity rules) under the probabilistic
guarantee with ``m1 = m2 = --m1``, and MDAV on the same records as the baseline measured in the
same run. Lines: ``method, n, cpu_seconds, seconds, il`` (SSE/SST, %), ``centres``,
``min_expected_size``, ``fcm_runs``, ``max_rule_residual`` (largest equality residual or
inequality excess of a released record), ``ratio_to_mdav`` (CPU seconds over MDAV's).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from scipy.optimize import linear_sum_assignment

from sdcflow.core.fuzzy.fcm import fcm_objective, fuzzy_c_means


def _warm_up() -> None:
    X = np.random.default_rng(0).standard_normal((200, 3))
    for truncate in (False, True):
        fuzzy_c_means(X, 20, m=1.5, restarts=1, max_iter=2, truncate=truncate, random_state=0)


def _seeds(X: np.ndarray, c: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1)
    return X[rng.choice(len(X), size=c, replace=False)] + 1e-3 * rng.standard_normal(
        (c, X.shape[1])
    )


def compare(args: argparse.Namespace) -> None:
    X = np.random.default_rng(args.seed).standard_normal((args.n, args.d))
    c = args.n // args.k
    init = _seeds(X, c, args.seed)
    for m1 in args.m1:
        common = dict(m=m1, restarts=1, max_iter=args.max_iter, tol=args.tol, init=init)
        t0, p0 = time.perf_counter(), time.process_time()
        full = fuzzy_c_means(X, c, truncate=False, random_state=0, **common)
        t1, p1 = time.perf_counter(), time.process_time()
        trunc = fuzzy_c_means(X, c, truncate=True, n_neighbors=args.q, random_state=0, **common)
        t2, p2 = time.perf_counter(), time.process_time()
        j_full = fcm_objective(X, full.centers, m=m1)
        j_cross = fcm_objective(X, trunc.centers, m=m1)
        cost = ((full.centers[:, None, :] - trunc.centers[None, :, :]) ** 2).sum(-1)
        r, s = linear_sum_assignment(cost)
        dist = np.sqrt(cost[r, s])
        line = {
            "bench": "compare",
            "m1": m1,
            "n": args.n,
            "d": args.d,
            "c": c,
            "full_seconds": round(t1 - t0, 2),
            "trunc_seconds": round(t2 - t1, 2),
            "full_cpu_seconds": round(p1 - p0, 2),
            "trunc_cpu_seconds": round(p2 - p1, 2),
            "full_iter": full.n_iter,
            "trunc_iter": trunc.n_iter,
            "full_converged": full.converged,
            "trunc_converged": trunc.converged,
            "J_full": j_full,
            "J_full_at_trunc": j_cross,
            "objective_gap": (j_cross - j_full) / j_full,
            "centre_distance_mean": float(dist.mean()),
            "centre_distance_max": float(dist.max()),
            # mean distance of the centres from the grand mean: ~0 when FCM collapsed them
            "full_centre_spread": float(np.linalg.norm(full.centers - X.mean(0), axis=1).mean()),
            "trunc_centre_spread": float(np.linalg.norm(trunc.centers - X.mean(0), axis=1).mean()),
            "truncation": trunc.truncation,
        }
        print(json.dumps(line), flush=True)


def scale(args: argparse.Namespace) -> None:
    X = np.random.default_rng(args.seed).standard_normal((args.n, args.d))
    c = args.n // args.k
    for m1 in args.m1:
        t0, p0 = time.perf_counter(), time.process_time()
        fit = fuzzy_c_means(
            X,
            c,
            m=m1,
            restarts=1,
            max_iter=args.max_iter,
            tol=args.tol,
            truncate=True,
            n_neighbors=args.q,
            random_state=args.seed,
        )
        line = {
            "bench": "scale",
            "m1": m1,
            "n": args.n,
            "d": args.d,
            "c": c,
            "seconds": round(time.perf_counter() - t0, 2),
            "cpu_seconds": round(time.process_time() - p0, 2),
            "iterations": fit.n_iter,
            "converged": fit.converged,
            "objective": fit.objective,
            "truncation": fit.truncation,
        }
        print(json.dumps(line), flush=True)


def _survey(n: int, seed: int, errors: float) -> tuple[np.ndarray, list[str]]:
    """The example business survey (``examples/business_survey/generate.py``), n records."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "business_survey" / "generate.py"
    spec = importlib.util.spec_from_file_location("survey_generate", path)
    gen = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(gen)  # type: ignore[union-attr]
    frame = gen.generate(n, seed)
    if errors > 0:
        frame = gen.inject_errors(frame, errors, seed)
    cols = ["employees", "turnover", "wages", "other_costs", "total_costs", "profit"]
    return frame[cols].to_numpy(np.float64), cols


def method(args: argparse.Namespace) -> None:
    from sdcflow.core.fuzzy.microaggregation import fuzzy_microaggregation
    from sdcflow.core.measures.information_loss import sse_sst_loss
    from sdcflow.core.microaggregation.mdav import group_means, mdav
    from sdcflow.expectations.compile import linear_constraints
    from sdcflow.expectations.rules import parse_rules

    X, cols = _survey(args.n, args.seed, args.errors)
    rules = parse_rules(
        [
            "total_costs == wages + other_costs",
            "profit == turnover - total_costs",
            "employees >= 0",
            "turnover >= 0",
            "wages >= 0",
            "other_costs >= 0",
        ],
        known_columns=cols,
    )
    cons = linear_constraints(rules, cols)
    mdav(X[:200], args.k)  # compile or load the kernel outside the clock
    fuzzy_microaggregation(X[:300], args.k, m1=1.1, m2=1.1, restarts=1, random_state=0)
    t0, p0 = time.perf_counter(), time.process_time()
    labels = mdav(X, args.k)
    base_cpu = time.process_time() - p0
    base = {
        "bench": "method",
        "method": "mdav",
        "n": len(X),
        "k": args.k,
        "cpu_seconds": round(base_cpu, 2),
        "seconds": round(time.perf_counter() - t0, 2),
        "il": sse_sst_loss(X, group_means(X, labels)),
    }
    print(json.dumps(base), flush=True)
    for m1 in args.m1:
        for name, rules_used in (("fuzzy", None), ("constrained_fuzzy", cons)):
            t0, p0 = time.perf_counter(), time.process_time()
            res = fuzzy_microaggregation(
                X,
                args.k,
                m1=m1,
                m2=m1,
                constraints=rules_used,
                restarts=args.restarts,
                random_state=args.seed,
            )
            cpu = time.process_time() - p0
            eq, ineq = cons.residuals(res.masked)
            line = {
                "bench": "method",
                "method": name,
                "m1": m1,
                "m2": m1,
                "n": len(X),
                "k": args.k,
                "restarts": args.restarts,
                "cpu_seconds": round(cpu, 2),
                "seconds": round(time.perf_counter() - t0, 2),
                "il": sse_sst_loss(X, res.masked),
                "centres": len(res.centers),
                "min_expected_size": float(res.expected_sizes.min()),
                "fcm_runs": res.details["fcm_runs"],
                "max_rule_residual": float(
                    max(np.abs(eq).max(initial=0.0), np.maximum(ineq, 0.0).max(initial=0.0))
                ),
                "ratio_to_mdav": round(cpu / max(base_cpu, 1e-9), 1),
            }
            print(json.dumps(line), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["compare", "scale", "method"])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--m1", type=float, nargs="+", default=[1.1, 1.3, 1.5, 2.0])
    parser.add_argument("--q", type=int, default=32, help="candidate centres per record")
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--restarts", type=int, default=5, help="method: FCM restarts")
    parser.add_argument("--errors", type=float, default=0.04, help="method: share with errors")
    args = parser.parse_args()
    _warm_up()
    {"compare": compare, "scale": scale, "method": method}[args.mode](args)


if __name__ == "__main__":
    main()
