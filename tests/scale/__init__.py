"""Tests of rwtool.scale: partial_fit, training from a CSV and the Dask backend."""
