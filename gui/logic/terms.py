"""How the app names the settings an error's fix points to: the controls a person changes.

rwtool.report's errors phrase their fix with a caller's Terms (the command line says
``--task regression``); these are the app's. Words only: this module must not import Qt.
"""

from __future__ import annotations

from rwtool.report import Terms, phrase

__all__ = ["APP_TERMS", "app_words"]

APP_TERMS = Terms("app", {"task": "Task = {value} in the Data tab",
                          "target": "Target = {value} in the Data tab",
                          "ignore": "untick {value} in the Data tab",
                          "missing": "Missing values = {value} in the Data tab",
                          "encoding": "Encoding = {value} in the Reading options",
                          "decimal": "Decimal mark = '{value}' in the Reading options",
                          "delimiter": "Delimiter = '{value}' in the Reading options",
                          "header": "Header = no header line in the Reading options"})


def app_words(message) -> str:
    """An error's or note's text with its advice in the app's words (the control to change)."""
    return phrase(message, APP_TERMS)
