"""What the method form offers: the parameters of the estimators of rwtool.report's methods.

The methods themselves (keys, titles, classes, papers) are rwtool.report.METHODS, the registry
the command line uses too. The parameters of a class come from its parameter table (``cls._parameters``): the
kind of each field, its choices, the range a typed value must fall in, the tooltip and the
default, and the parser that the CLI's ``--param`` uses too.

This module only describes estimators; it must not build widgets or fit anything.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:     # an annotation: the entries come from the estimators' tables
    from rwtool._params import Param

__all__ = ["ParamSpec", "param_specs", "parse_value", "format_value"]


@dataclass(frozen=True)
class ParamSpec:
    """One field of the form: an entry of the estimator's parameter table and the value the
    field starts at. The kind of editor comes from the entry: a check box, a combo box (named
    choices, or None/True/False), or a text field parsed by the entry itself."""

    param: Param
    initial: object = None
    more_choices: tuple = ()           # choices the app adds (the custom instantiation)

    name = property(lambda self: self.param.name)
    default = property(lambda self: self.param.default)
    doc = property(lambda self: self.param.help)
    keywords = property(lambda self: self.param.keywords)
    allows_none = property(lambda self: self.param.none is not None)
    advanced = property(lambda self: self.param.advanced)
    only = property(lambda self: self.param.only)

    @property
    def kind(self) -> str:
        """"bool", "choice", "int", "float" or "floats" (the editor to build)."""
        p = self.param
        if p.kind == "bool":
            return "choice" if p.none is not None else "bool"
        return {"seed": "int"}.get(p.kind, p.kind)

    @property
    def choices(self) -> tuple:
        if self.param.kind == "bool":
            return (None, True, False) if self.param.none is not None else ()
        return self.param.options() + self.more_choices

    @property
    def tooltip(self) -> str:
        p = self.param
        ref = f"<p><i>{html.escape(p.ref)}</i></p>" if p.ref else ""
        shown = "" if self.initial == p.default else \
            f" (the app starts at {html.escape(repr(self.initial))})"
        return (f"<p><b>{p.name}</b>: {html.escape(p.allowed())}</p><p>{html.escape(p.help)}"
                f"</p>{ref}<p>Default: {html.escape(repr(p.default))}{shown}</p>")


def param_specs(cls) -> list[ParamSpec]:
    """The form's fields for ``cls``, from its parameter table (signature order). The app
    starts random_state at 0, so that every run can be reproduced (cleared: a fresh draw)."""
    return [ParamSpec(p, 0 if p.name == "random_state" else p.default)
            for p in cls._parameters.values()]


def parse_value(spec: ParamSpec, text: str):
    """The value typed in a text field for ``spec``, as the CLI's --param reads it (the
    table's own parser); raises ValueError naming the parameter and what it accepts."""
    return spec.param.parse(text)


def format_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (tuple, list)):
        return ", ".join(format_value(v) for v in value)
    return str(value)
