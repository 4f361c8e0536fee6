"""Record linkage (sdcflow.core.risk.linkage): distance-based linkage, interval disclosure."""

from __future__ import annotations

import numpy as np
import pytest

from sdcflow.core.risk import distance_linkage, interval_disclosure
from sdcflow.errors import DataError


def test_unmasked_file_links_every_record() -> None:
    x = np.random.default_rng(0).normal(size=(200, 3))
    r = distance_linkage(x, x)
    assert (r.share, r.n_linked, r.n_tied, r.n) == (1.0, 200, 0, 200)


def test_ties_count_one_over_t() -> None:
    x = np.array([[0.0], [2.0], [4.0]])
    y = np.array([[1.0], [2.0], [9.0]])  # record 0 equidistant from originals 0 and 1
    r = distance_linkage(x, y, standardize=False)
    assert r.linked.tolist() == [0.5, 1.0, 1.0]
    assert (r.n_linked, r.n_tied) == (2, 1)


def test_agrees_with_brute_force_and_noise_lowers_it() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 4)) * [1, 10, 100, 1000]
    shares = []
    for s in (0.05, 0.5):
        y = x + rng.normal(size=x.shape) * x.std(axis=0) * s
        r = distance_linkage(x, y)
        z, w = (x - x.mean(0)) / x.std(0), (y - x.mean(0)) / x.std(0)
        d = np.linalg.norm(w[:, None, :] - z[None, :, :], axis=2)
        assert r.n_linked == int((d.argmin(axis=1) == np.arange(300)).sum())
        shares.append(r.share)
    assert shares[0] > shares[1]


def test_interval_disclosure() -> None:
    x = np.arange(100.0)[:, None]
    assert interval_disclosure(x, x + 0.5, p=1).share == 1.0
    assert interval_disclosure(x, x + 10, p=1).share < 0.15
    assert interval_disclosure(x, x + 10, p=10).share == 1.0


def test_validation() -> None:
    with pytest.raises(DataError) as info:
        distance_linkage(np.zeros((3, 2)), np.zeros((4, 2)))
    assert info.value.field == "masked"
    with pytest.raises(DataError):
        distance_linkage(np.array([[np.nan]]), np.array([[1.0]]))
