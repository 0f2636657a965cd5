"""The earlier home of the hyper-parameter search: rwtool.model_selection holds it now.

``from rwtool.tuning import RandomizedSearchCV`` keeps working; new code imports from
rwtool.model_selection.
"""

from .model_selection import (Choice, LogUniform, RandomizedSearchCV, Uniform, default_space,
                              kfold_indices, select_reg)

__all__ = ["LogUniform", "Uniform", "Choice", "default_space", "kfold_indices",
           "RandomizedSearchCV", "select_reg"]
