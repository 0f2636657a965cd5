"""Tests of rwtool.solvers: each solver against a dense or independent oracle."""
