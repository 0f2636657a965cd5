"""What the Data tab reads from a file, as functions a job carries to another process.

A file's preview (rwtool.data.preview_csv) and its encoded training and test rows
(:func:`encode`) are read where the fits run (gui.logic.jobs.ReadJob): rwtool's reader is
Python and numba code that held the window's interpreter lock for 200-370 ms at a time, and
its kernels doubled the window's memory. Each function here is at module level and takes
picklable arguments, so that a job can name it in another process; it returns what the Data
tab shows, with every array written (nothing left to compute on the window's side).

This module reads files; it must not import Qt or fit models.
"""

from __future__ import annotations

import os
import tempfile

from rwtool import data as rwdata

from .read_options import KEYS as READ_KEYS

__all__ = ["encode", "warm_up_reading"]


def encode(path: str, opts: dict):
    """``(train, test)`` Datasets of ``path`` under the Data tab's choices ``opts`` (target,
    features, missing, task, test_size, random_state and the reading options); ``test`` is
    None when ``test_size`` is 0. Raises rwtool's data errors as they are."""
    kw = dict(features=opts["features"], missing=opts["missing"], task=opts["task"],
              **{k: opts[k] for k in READ_KEYS if k in opts})
    if opts["test_size"] > 0:
        pair = rwdata.train_test_csv(path, opts["target"], test_size=opts["test_size"],
                                     random_state=opts["random_state"], **kw)
    else:
        pair = rwdata.read_csv(path, opts["target"], **kw), None
    for part in pair:
        if part is not None:
            part.X          # X is written on first use: here, where the reader's kernels run
    return pair


def warm_up_reading() -> int:
    """Preview and encode a tiny CSV, so that the reader's numba kernels are loaded before the
    user's first file (0.7 s of CPU in a fresh process, 4-5 s on a cold cache). Returns the rows
    read."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "warm.csv")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("a,b,c,label\n" + "".join(f"{i % 7}.5,{i},{'xy'[i % 2]},{i % 3 == 0}\n"
                                             for i in range(12)))
        # a tiny file is one block: it never reaches the splitter of a big file's later blocks
        rwdata.load_kernels()
        preview = rwdata.preview_csv(path)
        train, test = encode(path, {"target": "label", "features": ["a", "b", "c"],
                                    "missing": "error", "task": "auto", "test_size": 0.25,
                                    "random_state": 0})
        return preview.n_rows + train.n_samples + test.n_samples
