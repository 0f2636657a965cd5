"""How coefficients are learned from random features: one private module per algorithm.

Least squares: _ridge (blocked normal equations, Cholesky, the reg path), _rank_update (the
sums' dsyrk), _numpy_blas (numpy's dsyrk and dpotrf in place), _sufficient (per-fold
sums A_f, B_f and reg="auto" from them), _from_sums (an RW/RKS model solved from its sums,
whichever mode produced them: fit, partial_fit, Dask). Sparse: _lasso, _lasso_cv (the Lasso's
reg="auto" path), _prune (pruning a weight function). First order: _sfgd, _osd (functional
gradient descent on RKHS weightings), _sgd_rks (mini-batch SGD for kitchen sinks), _sgd
(averaged SGD of seed 002), _divergence (the guards they share). Greedy: _greedy (MFGA, LKRF,
EERF), _greedy_reg. BKerNN: _bkernn (kernel, ridge step, particle gradient, proximal steps),
_bkernn_cg (the ridge step by CG without n x n matrices).

A solver takes a fitted feature map (rwtool.features) or arrays and returns coefficients; it
keeps no estimator state, reads no file and knows no estimator class.

Must not import: rwtool.data, rwtool.scale, rwtool.estimators, rwtool.persist, rwtool.report,
    rwtool.cli
"""

from ._bkernn import fit_particles
from ._bkernn_cg import cg_ridge
from ._from_sums import FROM_SUMS_SOLVERS, empty_stats, solve_from_stats
from ._greedy import eerf_scores, lkrf_select, mfga
from ._lasso import lasso_fit, lasso_path
from ._lasso_cv import lasso_cv
from ._osd import osd_fit
from ._prune import prune_weights
from ._ridge import normal_equations, ridge_fit, solve_normal_equations
from ._sfgd import sfgd_fit
from ._sgd import averaged_sgd
from ._sgd_rks import sgd_fit
from ._sufficient import SufficientStats

__all__ = ["ridge_fit", "normal_equations", "solve_normal_equations", "SufficientStats",
           "FROM_SUMS_SOLVERS", "empty_stats", "solve_from_stats", "lasso_fit", "lasso_path",
           "lasso_cv", "prune_weights", "sfgd_fit", "osd_fit", "sgd_fit", "averaged_sgd", "mfga",
           "lkrf_select", "eerf_scores", "fit_particles", "cg_ridge"]
