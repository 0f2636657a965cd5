"""Random feature maps: how an instance becomes a feature row (one private module per family).

_rkhs: the five RKHS-weighting instantiations (closed-form psi and Gram matrix G);
_rkhs_mc: ``MonteCarloRKHS``, the RKHS weighting of any (p, K, phi) by Monte Carlo;
_montecarlo: the Monte Carlo core both share (registries, draws, kernel sections, integrator);
_kernels: the closed-form Gram kernels (Gaussian, stumps) the closed forms and the core use;
_rowwise: the core's products, each output row a fixed function of its input row (any block);
_instantiation: ``Instantiation``, the user-facing (p, K, phi) built from registered pieces;
_kitchen: random-kitchen-sink base predictors (sign, relu, stumps);
_fourier: random Fourier features of shift-invariant kernels;
_taylor: explicit Gaussian-Taylor and linear features of the greedy multi-kernel dictionary;
_bandwidth: data-scaled Gaussian bandwidths (scale, median, k-NN rules);
_base: ``FeatureMap``, what every map shares, and ``RowMaxima``, the maxima over rows its
    data constants are made of.
Every map follows fit(X) -> transform(X); none of them learns coefficients.

Must not import: rwtool.data, rwtool.model_selection, rwtool.solvers, rwtool.scale,
    rwtool.estimators, rwtool.persist, rwtool.report, rwtool.cli
"""

from ._bandwidth import knn_sigma, median_sigma, scale_sigma
from ._base import FeatureMap, RowMaxima
from ._fourier import FOURIER_KERNELS, RandomFourierFeatures, shift_invariant_kernel
from ._instantiation import (Instantiation, instantiation_names, register_base,
                             register_distribution, register_kernel)
from ._kitchen import KitchenRelu, KitchenSign, KitchenStumps
from ._rkhs_mc import MonteCarloRKHS
from ._rkhs import (DEFAULT_THETA, INSTANTIATIONS, RKHSWeighting, RWExpRelu, RWExpSign, RWRelu,
                    RWSign, RWStumps, gamma_from_kappa, gamma_from_theta, instantiation_constants,
                    make_instantiation)
from ._taylor import TaylorMultiKernelFeatures, taylor_gaussian_kernel

KITCHEN_BASES = {"sign": KitchenSign, "relu": KitchenRelu, "stumps": KitchenStumps}

__all__ = ["FeatureMap", "RowMaxima", "RKHSWeighting", "RWSign", "RWExpSign", "RWRelu", "RWExpRelu",
           "RWStumps", "MonteCarloRKHS", "INSTANTIATIONS", "make_instantiation", "DEFAULT_THETA", "gamma_from_theta",
           "gamma_from_kappa", "instantiation_constants", "KitchenSign", "KitchenRelu",
           "KitchenStumps", "KITCHEN_BASES", "RandomFourierFeatures", "FOURIER_KERNELS",
           "shift_invariant_kernel", "TaylorMultiKernelFeatures", "knn_sigma",
           "taylor_gaussian_kernel", "scale_sigma", "median_sigma", "Instantiation",
           "register_distribution", "register_kernel", "register_base", "instantiation_names"]
