"""How the defaults were chosen: every estimator at its defaults beside a tuned figure,
and the sweeps behind single defaults (bandwidths, theta/kappa, steps, reg)."""
