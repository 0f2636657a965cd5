"""Tests of rwtool.features: the feature maps, their closed forms and Monte Carlo."""
