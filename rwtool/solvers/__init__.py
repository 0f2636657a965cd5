"""How coefficients are learned from random features: one module per algorithm."""
