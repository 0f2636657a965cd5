"""Which columns the Data tab leaves unticked by default, and the note that says why.

A column that numbers the rows (pandas' saved index, adults' first column), a constant column
and an identifier (a text column whose every value is different, or with more distinct values
than one-hot encoding takes) carry no information about the target, or cost a column per
value; ticked by default they would silently enter the model. The summary of the file's
preview (rwtool.data.CsvPreview) is enough to tell them.

This module decides and phrases in the app's words (the Data tab's controls); it must not
import Qt.
"""

from __future__ import annotations

__all__ = ["default_exclusions", "exclusion_note", "MAX_CATEGORIES"]

#: text columns with more distinct values are identifiers or free text (one column per value)
MAX_CATEGORIES = 50


def _integers(values) -> bool:
    try:
        return all(float(v).is_integer() for v in values)
    except (TypeError, ValueError):
        return False


def _row_index(c, preview) -> bool:
    """Every row has a different number, consecutive from 0 or 1, in row order."""
    n = preview.n_rows
    if c.kind != "numeric" or c.n_missing or c.n_text or n < 3 or c.n_distinct != n:
        return False
    if c.min not in (0.0, 1.0) or c.max != c.min + n - 1:
        return False
    head = [row[c.index] for row in preview.head if c.index < len(row)]
    return len(head) >= 2 and _integers(head) and \
        [float(v) for v in head] == [c.min + i for i in range(len(head))]


def default_exclusions(preview, target: str | None = None) -> dict[str, str]:
    """``{column: why}`` for the columns (other than ``target``) left unticked by default."""
    out: dict[str, str] = {}
    n = preview.n_rows
    for c in preview.columns:
        if c.name == target:
            continue
        if c.kind == "empty":
            out[c.name] = "every value is missing"
        elif _row_index(c, preview):
            out[c.name] = (f"it numbers the rows ({c.min:.0f}, {c.min + 1:.0f}, …, "
                           f"{c.max:.0f}): a row index carries no information about the target")
        elif c.n_distinct == 1 and not c.n_missing:
            out[c.name] = "it has one value in every row: a constant tells the rows nothing"
        elif c.kind == "categorical" and n >= 3 and c.n_distinct >= n and not c.n_missing:
            out[c.name] = ("every row has a different value: an identifier, which would add "
                           "one column per row")
        elif c.kind == "categorical" and c.n_distinct > MAX_CATEGORIES:
            out[c.name] = (f"{c.n_distinct} distinct text values: an identifier or free text, "
                           f"which would add one column per value")
    return out


def exclusion_note(excluded: dict[str, str]) -> str:
    """The Data tab's note on the columns it left unticked ("" for none)."""
    if not excluded:
        return ""
    parts = [f"{name} is unticked: {why}" for name, why in excluded.items()]
    return ("; ".join(parts) + ". Tick a column in Feature columns to use it anyway.")
