"""A piece run on one thread of a Dask worker uses that thread only: the core's
multithreaded calls (SciPy's KD-tree queries) take their thread count from
:func:`sdcflow.core.parallel.threads`, which the task run of a piece sets to 1."""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace

import numpy as np
import pytest
from prefect import flow
from scipy.spatial import cKDTree

from sdcflow.core.fuzzy import fcm
from sdcflow.core.fuzzy import microaggregation as fuzzy_micro
from sdcflow.core.parallel import piece_threads, threads


def test_every_core_outside_a_piece_and_the_given_threads_inside():
    assert threads() == -1
    with piece_threads(1):
        assert threads() == 1
        with piece_threads(3):
            assert threads() == 3
        assert threads() == 1
    assert threads() == -1
    for bad in (0, -1, 1.0, True, "1"):
        with pytest.raises(ValueError, match="threads must be an integer >= 1"):
            with piece_threads(bad):  # type: ignore[arg-type]
                pass


SEEN: list[int] = []


class _Recording:
    """cKDTree whose queries record the ``workers`` they were given."""

    def __init__(self, data: np.ndarray) -> None:
        self.tree = cKDTree(data)

    def query(self, x, k=1, eps=0.0, workers=1):
        SEEN.append(workers)
        return self.tree.query(x, k=k, eps=eps, workers=workers)


@pytest.mark.parametrize("inside", [False, True])
def test_fuzzy_c_means_and_the_draw_query_with_the_pieces_threads(monkeypatch, inside):
    """Truncated fuzzy c-means (its neighbour lists), the truncated memberships and the
    fuzzy microaggregation's draw over each record's nearest centres ask the KD-tree for
    every core outside a piece, for one thread inside one."""
    monkeypatch.setattr(fcm, "cKDTree", _Recording)
    monkeypatch.setattr("scipy.spatial.cKDTree", _Recording)  # the draw imports it late
    monkeypatch.setattr(fuzzy_micro, "DENSE_MEMBERSHIPS", 0)  # the draw's KD-tree path
    SEEN.clear()
    X = np.random.default_rng(0).standard_normal((400, 3))
    with piece_threads(1) if inside else nullcontext():
        result = fcm.fuzzy_c_means(
            X, 40, m=1.5, truncate=True, n_neighbors=8, restarts=1, random_state=0
        )
        fitted = len(SEEN)
        fcm.truncated_memberships(X, result.centers, m=1.5, n_neighbors=8)
        rows, _, u = fuzzy_micro._draw_memberships(
            X,
            result.centers,
            fcm.check_fuzziness(1.5, None),
            SimpleNamespace(mass=0.999, n_neighbors=8),
        )
    assert 0 < fitted < len(SEEN) - 1  # each of the three asked at least once
    assert set(SEEN) == ({1} if inside else {-1})
    np.testing.assert_allclose(np.bincount(rows, weights=u), 1.0)  # a draw per record


def _probe() -> int:
    return threads()


@pytest.mark.flow
def test_a_pieces_task_run_gives_it_one_thread(prefect_api):
    """The task run that runs a piece on a worker (here Prefect's default runner, a thread
    of this process) sets one thread around the piece, and only around it."""
    from sdcflow.tasks.scale import run_part

    @flow
    def pieces() -> tuple[int, int]:
        return run_part.submit(_probe, ()).result(), threads()

    assert pieces() == (1, -1)
