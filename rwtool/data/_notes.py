"""Notes on a parsed table's guesses that a user should check before trusting the data.

A reader that detects its dialect can be right by the rules and still wrong about the file: a
first line that numbers the columns was read as column names (it may be a data row), or a
feature column numbers the rows (pandas' saved index, which carries no information about the
target). ``note_guesses`` appends one plain sentence per such finding, with the option that
undoes the guess, to ``table.notes``; ``read_csv`` and ``preview_csv`` carry them to the user. The options are
named in each caller's words (rwtool.exceptions.Note).

This module only explains: it must not change a value, a type, a column role or the dialect,
and must not raise on any table the reader produced.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import Note
from ._dialect import _numbered

__all__ = ["note_guesses"]


def note_guesses(table, header, names, features=None) -> None:
    """Append to ``table.notes`` what the reader guessed about the header and row index.

    ``header`` and ``names`` are the caller's options (a header the user chose or named is not
    a guess); ``features`` are the feature columns once roles are known (None: not yet).
    """
    _note_numbered_header(table, header, names)
    if features is not None:
        _note_row_index(table, features)


def _note_numbered_header(table, header, names) -> None:
    numbered = _numbered(table.names) or (table.names[0] == "col1" and _numbered(table.names[1:]))
    if header is None and names is None and table.dialect.header and numbered:
        first = Note.literal(", ".join(table.names[:3]))
        table.notes.append(Note(f"the first line ({first}, ...) was read as column names (it "
                                f"numbers the columns); pass {{0}} if it is data",
                                [("header", False)]))


def _note_row_index(table, features) -> None:
    # the columns of the table's number matrix are screened together on their first two
    # cells (a question per column would cost as much as reading a wide file); a column
    # holding text or a missing cell numbers nothing
    n = table.n_rows
    if n < 3:
        return
    pos = table.number_rows(features)
    hit = np.zeros(len(features), bool)
    dense = np.flatnonzero(pos >= 0)
    first = table.numbers[pos[dense], 0]
    hit[dense] = (((first == 0.0) | (first == 1.0)) & (table.numbers[pos[dense], 1] == first + 1)
                  & (table.numbers[pos[dense], 2] == first + 2))
    for i in np.flatnonzero(pos < 0).tolist():           # the columns holding text
        c = table.col(features[i])
        hit[i] = c.codes[0] == -1 and c.values[0] in (0.0, 1.0) and not np.any(c.codes != -1)
    for i in np.flatnonzero(hit).tolist():
        name = features[i]
        v = table.numbers[pos[i]] if pos[i] >= 0 else table.col(name).values
        if np.array_equal(v, np.arange(v[0], v[0] + n)):
            table.notes.append(Note(
                f"column {Note.literal(repr(name))} numbers the rows ({v[0]:.0f}, {v[1]:.0f}, "
                f"..., {v[-1]:.0f}): a row index carries no information about the target; "
                f"ignore it ({{0}})", [("ignore", [name])]))
