"""What a fitted model's predictions depend on, measured from the model and labelled rows.

``permutation_importance`` scores a fitted estimator on rows whose columns are shuffled one at a
time (Breiman 2001; scikit-learn's ``sklearn.inspection.permutation_importance``, whose shuffles
it reproduces for the same seed, without depending on scikit-learn), with progress and cancel
through rwtool.progress; ``input_share`` is the exact per-input share some models already hold
(the stumps of RWStumps and the kitchen sinks' stump base, BKerNN's particle rows).

This package reads fitted estimators through their public methods and attributes; it must not
read files or print (rwtool.report formats its results for the command line and the app).

Must not import: rwtool.persist, rwtool.report, rwtool.cli, gui, sklearn
"""

from ._permutation import (SCORINGS, PermutationImportance, input_share,
                           permutation_importance)

__all__ = ["permutation_importance", "PermutationImportance", "input_share", "SCORINGS"]
