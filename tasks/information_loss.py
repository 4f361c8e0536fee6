"""Information-loss measures.

References
----------
[1] J. Domingo-Ferrer, J.M. Mateo-Sanz, "Practical data-oriented microaggregation for
    statistical disclosure control", IEEE TKDE 14(1) (2002): IL = 100 * SSE / SST.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_matrix


def sse_sst_loss(X: np.ndarray, X_masked: np.ndarray) -> float:
    """IL = 100 * SSE / SST on attributes standardized to zero mean, unit population variance.

    ``SSE = sum_i ||z_i - z'_i||^2`` and ``SST = sum_i ||z_i - mean(z)||^2``, where the masked
    file is standardized with the *original* mean and scale so that both sums are in the same
    units ([1]; for microaggregation SSE is the within-group sum of squares). Constant
    columns contribute nothing to either sum.

    Shapes: X (n, d), X_masked (n, d) -> float in [0, inf) (0..100 for microaggregation).
    """
    X = check_matrix(X, name="original")
    Xm = check_matrix(X_masked, name="masked")
    if X.shape != Xm.shape:
        raise ValueError(f"original {X.shape} and masked {Xm.shape} must have the same shape")
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    live = scale > 0
    if not live.any():
        return 0.0
    Z = (X[:, live] - mean[live]) / scale[live]
    Zm = (Xm[:, live] - mean[live]) / scale[live]
    sse = float(((Z - Zm) ** 2).sum())
    sst = float((Z**2).sum())  # = n * d_live after standardization
    return 100.0 * sse / sst
