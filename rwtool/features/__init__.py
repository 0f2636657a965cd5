"""Random feature maps: how an instance becomes a feature row (one module per family).

rkhs: the five RKHS-weighting instantiations (closed-form psi and Gram matrix G);
kitchen: random-kitchen-sink base predictors (sign, relu, stumps);
fourier: random Fourier features of shift-invariant kernels;
taylor: explicit Gaussian-Taylor and linear features of the greedy multi-kernel dictionary;
bandwidth: data-scaled Gaussian bandwidths (scale, median, k-NN rules).
Every map follows fit(X) -> transform(X); none of them learns coefficients.
"""

from .bandwidth import knn_sigma, median_sigma, scale_sigma
from .base import FeatureMap
from .fourier import FOURIER_KERNELS, RandomFourierFeatures, shift_invariant_kernel
from .kitchen import KitchenRelu, KitchenSign, KitchenStumps
from .taylor import TaylorMultiKernelFeatures, taylor_gaussian_kernel
from .rkhs import (DEFAULT_THETA, INSTANTIATIONS, RKHSWeighting, RWExpRelu, RWExpSign, RWRelu,
                   RWSign, RWStumps, gamma_from_kappa, gamma_from_theta, instantiation_constants,
                   make_instantiation)

KITCHEN_BASES = {"sign": KitchenSign, "relu": KitchenRelu, "stumps": KitchenStumps}

__all__ = ["FeatureMap", "RKHSWeighting", "RWSign", "RWExpSign", "RWRelu", "RWExpRelu",
           "RWStumps", "INSTANTIATIONS", "make_instantiation", "DEFAULT_THETA", "gamma_from_theta",
           "gamma_from_kappa", "instantiation_constants", "KitchenSign", "KitchenRelu",
           "KitchenStumps", "KITCHEN_BASES", "RandomFourierFeatures", "FOURIER_KERNELS",
           "shift_invariant_kernel", "TaylorMultiKernelFeatures", "knn_sigma",
           "taylor_gaussian_kernel", "scale_sigma", "median_sigma"]
