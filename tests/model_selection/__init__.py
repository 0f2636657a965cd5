"""Tests of rwtool.model_selection: the randomized search and its folds."""
