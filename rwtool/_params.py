"""Parameter tables: every constructor parameter declared once, with its type, range and help.

An estimator or feature map lists its ``__init__`` parameters in ``_parameters``, a dict of
:class:`Param` in signature order (the role of scikit-learn's ``_parameter_constraints``): the
kind of value, its range or choices, the default, a one-line help and the paper's equation where
there is one. Three readers share the table: ``fit`` checks the values with
:func:`validate_params` (rules between parameters, such as a solver that minimises the squared
loss only, stay in the estimator next to its table); the CLI's ``--param NAME=VALUE`` and the
app's form turn text into a value with :meth:`Param.parse`; the app builds its fields (combo
boxes, ranges, tooltips, which parameters a choice disables) from the records.

This module must not import an estimator, a feature map, the CLI or the app.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
from typing import Any, Callable

import numpy as np

from .exceptions import InvalidParameterError

__all__ = ["Param", "Interval", "params_table", "validate_params", "reference",
           "InvalidParameterError"]

#: what a parameter holds: a whole number, a real number, True/False, one of named choices, a
#: sequence of numbers, or a random_state (None, an integer >= 0 or a numpy Generator)
KINDS = ("int", "float", "bool", "choice", "floats", "seed")

_INTERVAL = re.compile(r"^([\[(])\s*([^,\s]+)\s*,\s*([^,\s]+)\s*([\])])$")


@dataclasses.dataclass(frozen=True)
class Interval:
    """A range of numbers written as in mathematics: "[1, inf)", "(0, 1)", "[0, 8]"."""

    low: float
    high: float
    low_open: bool
    high_open: bool

    @classmethod
    def parse(cls, text: str) -> "Interval":
        m = _INTERVAL.match(text.strip())
        if m is None:
            raise ValueError(f"not an interval: {text!r} (write it like '[1, inf)' or '(0, 1)')")
        return cls(float(m.group(2)), float(m.group(3)), m.group(1) == "(", m.group(4) == ")")

    def __contains__(self, x) -> bool:
        above = x > self.low if self.low_open else x >= self.low
        below = x < self.high if self.high_open else x <= self.high
        return bool(above and below)

    def __str__(self) -> str:
        return (f"{'(' if self.low_open else '['}{_number(self.low)}, {_number(self.high)}"
                f"{')' if self.high_open else ']'}")


def _number(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _int_from_text(t: str) -> int:
    try:
        return int(t)
    except ValueError:
        f = float(t)            # "1e3" is a whole number too
        if not f.is_integer():
            raise ValueError(t) from None
        return int(f)


_BOOL_TEXT = {"true": True, "false": False, "yes": True, "no": False, "on": True, "off": False,
              "1": True, "0": False}


def _bool_from_text(t: str) -> bool:
    try:
        return _BOOL_TEXT[t.lower()]
    except KeyError:
        raise ValueError(t) from None


def _floats_from_text(t: str) -> tuple:
    return tuple(float(v) for v in re.split(r"[,;]", t.strip("()[] ")) if v.strip())


_FROM_TEXT = {"int": _int_from_text, "seed": _int_from_text, "float": float,
              "bool": _bool_from_text, "choice": str, "floats": _floats_from_text}


@dataclasses.dataclass(frozen=True)
class Param:
    """One constructor parameter: what it accepts, its default and what it means.

    ``interval`` bounds the numbers of an "int" or "float" parameter; ``choices`` are the names
    a "choice" parameter accepts (case-insensitive), or a function returning them when they
    grow at run time; ``keywords`` are names a numeric parameter accepts besides numbers
    ("auto"); ``none`` says what None means (None: None is refused); ``only`` is (parameter,
    values): this one is read only when that parameter takes one of those values (the app
    greys it out otherwise); ``check`` judges what the kind cannot (a value outside
    ``choices`` such as an "mc:..." instantiation name), raising its own error, and ``also``
    names in words what it accepts besides ``choices``.
    """

    name: str
    kind: str
    default: Any
    help: str
    interval: Interval | str | None = None
    choices: tuple | Callable[[], tuple] = ()
    keywords: tuple = ()
    none: str | None = None
    ref: str = ""
    only: tuple | None = None
    advanced: bool = False
    check: Callable[[Any], Any] | None = None
    also: tuple = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Param {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if isinstance(self.interval, str):
            object.__setattr__(self, "interval", Interval.parse(self.interval))
        if self.kind == "choice" and not self.choices and self.check is None:
            raise ValueError(f"Param {self.name!r}: a choice needs choices or a check")

    # -- what it accepts ----------------------------------------------------------------------
    def options(self) -> tuple:
        """The named choices (a "choice" parameter), as the table spells them."""
        return tuple(self.choices() if callable(self.choices) else self.choices)

    def allowed(self) -> str:
        """What the parameter accepts, in words ("None (...), a number in (0, 1) or 'auto'")."""
        if self.kind == "choice":
            main = "one of " + _words([repr(c) for c in self.options()] + list(self.also))
        elif self.kind == "bool":
            main = "True or False"
        elif self.kind == "floats":
            main = "a sequence of numbers"
        elif self.kind == "seed":
            main = "an integer >= 0"
        else:
            main = "an integer" if self.kind == "int" else "a number"
            if self.interval is not None:
                main += f" in {self.interval}"
            elif self.kind == "float":
                main = "a finite number"
        items = [] if self.none is None else ["None" + (f" ({self.none})" if self.none else "")]
        items += [main] + [repr(k) for k in self.keywords]
        if self.kind == "seed":
            items.append("a numpy Generator")
        return _words(items)

    def _refuse(self, value, wrong_type: bool = False):
        # a string among keywords is an unknown keyword, not a value of the wrong type
        named = isinstance(value, str) and (self.keywords or self.kind == "choice")
        kind = f" ({type(value).__name__})" if wrong_type and not named else ""
        raise InvalidParameterError(f"{self.name} must be {self.allowed()}, got {value!r}{kind}")

    # -- checking and parsing -------------------------------------------------------------------
    def validate(self, value):
        """``value`` if the parameter accepts it (a choice or keyword in the table's spelling, a
        "floats" sequence as a tuple), else an :class:`InvalidParameterError` naming the
        parameter, the value and what is allowed."""
        if value is None:
            if self.none is None:
                self._refuse(value)
            return None
        if isinstance(value, str) and self.keywords:
            for kw in self.keywords:
                if value.lower() == kw.lower():
                    return kw
        kind = self.kind
        if kind == "choice":
            if isinstance(value, str):
                for c in self.options():
                    if value.lower() == str(c).lower():
                        return c
            if self.check is None:
                self._refuse(value, not isinstance(value, str))
        elif kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                self._refuse(value, True)
            value = bool(value)
        elif kind == "seed":
            if isinstance(value, (bool, np.bool_)) or not isinstance(
                    value, (numbers.Integral, np.random.Generator, np.random.RandomState)):
                self._refuse(value, True)
            if isinstance(value, numbers.Integral) and value < 0:
                self._refuse(value)
        elif kind == "floats":
            try:
                value = tuple(float(v) for v in value)
            except (TypeError, ValueError):
                self._refuse(value, True)
            if not all(math.isfinite(v) for v in value):
                self._refuse(value)
        else:
            want = numbers.Integral if kind == "int" else numbers.Real
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, want):
                self._refuse(value, True)
            if not math.isfinite(value) or (self.interval is not None
                                            and value not in self.interval):
                self._refuse(value)
        if self.check is not None:
            self.check(value)
        return value

    def parse(self, text):
        """The value written as ``text`` (a command-line option, a form field), validated:
        "" and "none" are None, keywords are matched case-insensitively, "1e3" is an integer."""
        if not isinstance(text, str):
            return self.validate(text)
        t = text.strip()
        if not t or t.lower() in ("none", "null"):
            if self.none is None:
                raise InvalidParameterError(f"{self.name} needs a value: {self.allowed()}")
            return None
        for kw in self.keywords:
            if t.lower() == kw.lower():
                return kw
        try:
            value = _FROM_TEXT[self.kind](t)
        except ValueError:
            raise InvalidParameterError(f"{self.name} must be {self.allowed()}, got "
                                        f"{t!r}") from None
        return self.validate(value)


def params_table(*params: Param, **changed_defaults) -> dict[str, Param]:
    """The table of a class: its Params by name, in signature order; ``changed_defaults``
    gives a sibling class's own defaults (the regressor's reg="auto")."""
    table = {p.name: p for p in params}
    for name, default in changed_defaults.items():
        table[name] = dataclasses.replace(table[name], default=default)
    return table


def validate_params(est) -> dict:
    """Every parameter of ``est`` checked against its class's ``_parameters``: the values,
    normalised (choices and keywords in the table's spelling). Raises
    :class:`InvalidParameterError` at the first value the table refuses."""
    return {name: p.validate(getattr(est, name)) for name, p in type(est)._parameters.items()}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def reference(classes) -> str:
    """The parameters of ``classes`` as Markdown tables, one per class (classes in a row with
    the same table share one): what each accepts, its default, its help, when it is read and
    the paper's reference. docs/PARAMETERS.md is this text."""
    groups: list[list] = []
    for cls in classes:
        if groups and groups[-1][0]._parameters == cls._parameters:
            groups[-1].append(cls)
        else:
            groups.append([cls])
    out = []
    for group in groups:
        out += [f"## {', '.join(c.__name__ for c in group)}", "",
                "| Parameter | Accepts | Default | Meaning | Read when | Paper |",
                "|---|---|---|---|---|---|"]
        for p in group[0]._parameters.values():
            when = "" if p.only is None else \
                f"{p.only[0]} is {_words([repr(v) for v in p.only[1]])}"
            out.append(f"| `{p.name}` | {_cell(p.allowed())} | `{p.default!r}` | "
                       f"{_cell(p.help)} | {_cell(when)} | {_cell(p.ref)} |")
        out.append("")
    return "\n".join(out)
