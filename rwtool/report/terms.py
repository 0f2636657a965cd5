"""How a caller names the settings an error's fix points to: the API, the command line, the app.

An error of the report layer keeps its parts apart (what was seen, what to change) and phrases
the fix with the caller's :class:`Terms`: the Python API says ``task='regression'``, the
command line ``--task regression``, the app the control a person clicks. ``str(error)`` uses
the API's words; ``error.phrase(terms)`` any caller's. This module holds words only; it must
not import anything of rwtool.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Terms", "API_TERMS", "phrase"]


@dataclass(frozen=True)
class Terms:
    """``settings``: setting name -> how the caller names it, a format string that may use
    ``{value}`` (e.g. ``{"task": "--task {value}"}``); a setting it does not name is written as
    the API writes it."""

    caller: str
    settings: dict = field(default_factory=dict)

    def setting(self, name: str, value=None) -> str:
        """How this caller tells a person to set ``name`` (to ``value``; None: a value for the
        person to choose, written "..."; a list of column names as the caller lists them)."""
        form = self.settings.get(name)
        if form is None:
            return f"{name}=..." if value is None else f"{name}={value!r}"
        if isinstance(value, (list, tuple)):
            value = self.list_separator.join(map(str, value))
        return form.format(value="..." if value is None else value).strip()

    @property
    def list_separator(self) -> str:
        return ", " if self.caller == "app" else " "


#: the Python API's words: the parameter names of read_csv and the estimators (a setting
#: without a form here is written ``name=value`` too, as rwtool.DataError writes it)
API_TERMS = Terms("API", {"task": "task={value!r}", "target": "target={value!r}"})


def phrase(message, terms: Terms) -> str:
    """``message`` (an error, a note or plain text) in the words of ``terms``: the error's or
    note's own ``phrase`` when it has one, its text otherwise."""
    words = getattr(message, "phrase", None)
    return words(terms) if callable(words) else str(message)
