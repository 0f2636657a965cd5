"""The oracle of a streamed or distributed least-squares model: its backward error in ``fit``'s
normal equations, built with numpy from ``fit``'s feature matrix."""

import numpy as np


def backward_error(coef, ref, X, y):
    """||M a - b|| / (||M|| ||a|| + ||b||) in fit's normal equations M a = b, built here from
    fit's feature matrix: (Phi^T Phi + m reg R + m eps I) a = Phi^T Y (R = G for the RKHS
    weightings, I for kitchen sinks). Tolerance on it does not grow with cond(M), which
    reaches 8e8 in tests/scale/test_data_constants.py (RWStumps), while the coefficients' own
    error does."""
    Phi = ref.feature_matrix(X)
    m, T = Phi.shape
    fmap = ref.feature_map_
    R = fmap.gram() if fmap.has_gram else np.eye(T)
    eps = ref.eps if fmap.has_gram else 0.0
    M = Phi.T @ Phi + m * ref.reg_ * R + m * eps * np.eye(T)
    b = Phi.T @ ref._targets_for(y, m)
    return (np.linalg.norm(M @ coef - b)
            / (np.linalg.norm(M, 2) * np.linalg.norm(coef) + np.linalg.norm(b)))
