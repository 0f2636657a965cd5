"""The errors a data file can raise: one :class:`DataError` subclass per problem, located.

Every refusal of rwtool's data readers is a ``DataError`` carrying the file, the 1-based line of
the record (the header being line 1), the column and a hint, so a caller (the command line, the
app) shows it in one line without a traceback. The base class lives with every other rwtool
error in rwtool.exceptions. This module defines the classes only: it must not read files or
import the reader modules.
"""

from __future__ import annotations

from ..exceptions import DataError

__all__ = [
    "DataError", "EmptyFileError", "HeaderOnlyError", "RaggedRowError", "NonNumericError",
    "NonFiniteError", "MissingValueError", "AllMissingError", "SingleClassError",
    "DuplicateColumnError", "FileTooLargeError", "HighCardinalityError",
    "UnseenCategoryError", "MissingColumnError", "ColumnNotFoundError", "EncodingError",
    "TargetError", "QuoteError", "HeaderError", "ScaleError",
]


class EmptyFileError(DataError):
    """The file holds no data at all."""


class HeaderOnlyError(DataError):
    """The file has a header line and no data rows."""


class RaggedRowError(DataError):
    """A row has more or fewer fields than the header."""


class NonNumericError(DataError):
    """Text in a column that holds numbers."""


class NonFiniteError(DataError):
    """An infinite value, or one too large to compute with (|x| > max_abs)."""


class MissingValueError(DataError):
    """Missing values under the ``missing="error"`` policy."""


class AllMissingError(DataError):
    """A column (or every row) has no usable value."""


class SingleClassError(DataError):
    """A classification target with fewer than two classes."""


class DuplicateColumnError(DataError):
    """Two header fields with the same name."""


class FileTooLargeError(DataError):
    """The file is larger than the ``max_bytes`` limit."""


class HighCardinalityError(DataError):
    """A text column with more categories than ``max_categories``."""


class UnseenCategoryError(DataError):
    """A category absent from the training data (when replaying the preprocessing)."""


class MissingColumnError(DataError):
    """A column the preprocessing needs is absent from the file."""


class ColumnNotFoundError(DataError):
    """A column named in a role (target, features, ignore...) does not exist."""


class EncodingError(DataError):
    """The bytes cannot be decoded with the chosen text encoding."""


class TargetError(DataError):
    """The target column does not fit the task (text for regression, three labels for binary)."""


class QuoteError(DataError):
    """A quote opened and never closed: it would swallow the rest of the file into one cell."""


class HeaderError(DataError):
    """The header line does not fit the file (numbers as column names, names for a file that
    has no header)."""


class ScaleError(DataError):
    """A regression target whose values are all so small (below 1e-150 in magnitude, not zero)
    that squared errors underflow: no error metric could be computed."""
