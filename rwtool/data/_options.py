"""The user's choices about a parsed table: column roles, the task and missing-value options.

``_roles`` resolves the target, feature, ignored, categorical and numeric columns (names or
positions, "-1" typed on a command line being the last column) against a table's header;
``_check_options`` checks the task, missing-value policy, category limit and unknown-category
handling; ``_candidate_rows`` drops or refuses rows without a target. Shared by the in-memory
reader (rwtool.data.read_csv), the two-pass reader (_stream) and the many-file reader
(_dask_io). This module must not read files or encode values.
"""

from __future__ import annotations

import re

import numpy as np

from ._encoding import norm_policy
from ._names import select
from ._read import positions
from ._errors import AllMissingError, ColumnNotFoundError, MissingValueError

#: the fix of a missing target: a policy that drops the row
TARGET_POLICY_FIX = ("choose a missing-value policy such as {0} (rows with no target are "
                     "dropped)", [("missing", "drop-rows")])

#: learning tasks; "classification" means binary or multiclass as the labels say
TASKS = ("auto", "binary", "multiclass", "classification", "regression")


def _resolve(spec, names, path, what) -> list[str]:
    if spec is None:
        return []
    if isinstance(spec, (str, int, np.integer)):
        spec = [spec]
    out = []
    # a wide file's names are many: a set of them for many names asked, a search for a few
    known = set(names) if sum(isinstance(s, str) for s in spec) > 8 else names
    for s in spec:
        if isinstance(s, str) and s not in known and re.fullmatch(r"-?\d+", s.strip()):
            s = int(s)          # a position typed on a command line ("-1": the last column)
        if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
            if not -len(names) <= s < len(names):
                raise ColumnNotFoundError(f"{what} column index {s} is out of range (the file "
                                          f"has {len(names)} columns)", file=path)
            out.append(names[s])
        elif isinstance(s, str):
            if s not in known:
                close = [n for n in names if n.lower() == s.lower()]
                raise ColumnNotFoundError(
                    f"no column named {s!r} (for {what})", file=path, column=s,
                    hint=(f"did you mean {close[0]!r}? " if close else "")
                    + f"columns are: {', '.join(names)}")
            out.append(s)
        else:
            raise TypeError(f"{what} columns must be names or integer positions, got {s!r}")
    return out


def _roles(table, target, features, ignore, categorical, numeric):
    """(target name, feature names, categorical set, numeric set) from the user's choices."""
    path = table.path
    names = table.names
    tname = _resolve(target, names, path, "target")
    tname = tname[0] if tname else None
    ignored = set(_resolve(ignore, names, path, "ignore"))
    cat = set(_resolve(categorical, names, path, "categorical"))
    num = set(_resolve(numeric, names, path, "numeric"))
    if cat & num:
        raise ValueError(f"column(s) {sorted(cat & num)} declared both categorical and numeric")
    if features is None:
        # by positions: a wide file's names stay one array (rwtool.data._names)
        out = positions(names, [n for n in [tname, *ignored] if n is not None])
        keep = np.ones(len(names), bool)
        keep[out[out >= 0]] = False
        feats = select(names, np.flatnonzero(keep))
    else:
        feats = [n for n in _resolve(features, names, path, "features") if n not in ignored]
        if tname in feats:
            raise ValueError(f"the target {tname!r} cannot also be a feature")
    if not feats:
        raise ColumnNotFoundError("no feature column is left", file=path,
                                  hint="the target and the ignored columns were all the "
                                       "columns")
    return tname, feats, cat, num


def _check_options(task, missing, max_categories, handle_unknown):
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}, got {task!r}")
    if not isinstance(max_categories, int) or max_categories < 1:
        raise ValueError(f"max_categories must be a positive integer, got {max_categories!r}")
    if handle_unknown not in ("error", "ignore"):
        raise ValueError(f"handle_unknown must be 'error' or 'ignore', got {handle_unknown!r}")
    return norm_policy(missing)


def _candidate_rows(table, tname, policy, with_y):
    rows = np.arange(table.n_rows)
    if tname is None:
        return rows, []
    tmiss = table.col(tname).codes == -2
    if tmiss.any() and policy == "error":
        i = int(np.flatnonzero(tmiss)[0])
        raise MissingValueError(f"missing target value ({int(tmiss.sum())} row(s))",
                                file=table.path, row=int(table.lines[i]), column=tname,
                                fix=TARGET_POLICY_FIX)
    if tmiss.all():
        raise AllMissingError("the target column has no value", file=table.path, column=tname)
    if not tmiss.any():
        return rows, []
    return rows[~tmiss], [f"dropped {int(tmiss.sum())} row(s) with a missing target"]
