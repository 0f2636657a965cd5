"""Tests of rwtool.estimators: the estimators' conventions, defaults and failures."""
