"""What the method form offers: rwtool's estimator families, found by import, and their parameters.

Each family names its classifier and regressor classes by module path; a family whose module or
class is not importable is left out, so methods appear in the app when they land in rwtool. The
parameters of a class come from ``inspect.signature`` (names, defaults) and the numpydoc
"Parameters" section of its docstring (type line with the choices, description for the tooltip);
the choices of ``solver`` come from the estimator module's ``SOLVERS`` registry.

This module only describes estimators; it must not build widgets or fit anything.
"""

from __future__ import annotations

import html
import importlib
import inspect
import re
from dataclasses import dataclass, field

__all__ = ["Family", "ParamSpec", "FAMILIES", "available_families", "param_specs",
           "parse_numpydoc_params", "ADVANCED"]


@dataclass(frozen=True)
class Family:
    """One method of the app: a display name, its estimator classes and the paper it follows."""

    key: str
    title: str
    module: str
    classifier: str | None
    regressor: str | None
    paper: str
    primary: str | None = None       # the parameter shown first (instantiation, base...)

    def load(self, task: str):
        """The estimator class for ``task`` ("binary", "multiclass", "regression"), or None."""
        name = self.regressor if task == "regression" else self.classifier
        if name is None:
            return None
        try:
            mod = importlib.import_module(self.module)
        except ImportError:
            return None
        return getattr(mod, name, None)

    def available(self) -> bool:
        return self.load("binary") is not None or self.load("regression") is not None


FAMILIES = (
    Family("rw", "RKHS weighting", "rwtool.estimators", "RWClassifier",
           "RWRegressor", "Dubé & Marchand (seed 003)", "instantiation"),
    Family("rks", "Random kitchen sinks", "rwtool.estimators", "RKSClassifier",
           "RKSRegressor", "Rahimi & Recht (seed 003, Section 3.1)", "base"),
    Family("rfsgd", "Averaged SGD on random features", "rwtool.estimators",
           "RFSGDClassifier", "RFSGDRegressor", "Yashima, Nitanda & Suzuki (seed 002)",
           "variant"),
    Family("greedy", "Greedy multi-kernel", "rwtool.estimators", "GreedyMKClassifier",
           "GreedyMKRegressor", "Shahrampour & Tarokh (seed 004)", "selector"),
    Family("bkernn", "BKerNN", "rwtool.estimators", "BKerNNClassifier", "BKerNNRegressor",
           "Follain & Bach (seed 001)", "penalty"),
)

#: parameters placed under "Advanced" (numerical plumbing rather than modelling choices)
ADVANCED = frozenset({
    "block_size", "chunk_size", "eps", "standardize", "bias", "max_backtrack", "knn_queries",
    "normalize", "lkrf_mode", "lkrf_rho", "nu", "tol", "features_per_step", "shuffle",
    "average", "backtracking", "fit_intercept", "include_squares", "include_linear", "knn_k",
    "n_candidates", "gauss_order", "s", "step_size",
})


def available_families():
    return [f for f in FAMILIES if f.available()]


@dataclass
class ParamSpec:
    """One constructor parameter as the form needs it."""

    name: str
    default: object
    kind: str                          # "bool", "int", "float", "choice", "text"
    choices: tuple = ()
    doc_type: str = ""
    doc: str = ""
    allows_none: bool = False
    keywords: tuple = ()               # string values accepted besides numbers ("auto", "knn")
    advanced: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def tooltip(self) -> str:
        typ = f" : {html.escape(self.doc_type)}" if self.doc_type else ""
        head = f"<b>{self.name}</b>{typ}"
        body = html.escape(self.doc) if self.doc else "No description in the docstring."
        start = self.extra.get("initial", self.default)
        shown = "" if start == self.default else \
            f" (the app starts at {html.escape(repr(start))})"
        return (f"<p>{head}</p><p>{body}</p><p>Default: {html.escape(repr(self.default))}"
                f"{shown}</p>")




_SECTION = re.compile(r"^\s*(Parameters|Attributes|Returns|Raises|Notes|Examples|See Also)\s*$")


def parse_numpydoc_params(doc: str | None) -> dict[str, tuple[str, str]]:
    """``{name: (type line, description)}`` from the "Parameters" section of a docstring.

    Entries written "a, b, c" (several names sharing one description) give each name.
    """
    if not doc:
        return {}
    lines = inspect.cleandoc(doc).splitlines() if not doc.startswith("\n    ") else \
        [ln[4:] if ln.startswith("    ") else ln for ln in doc.splitlines()]
    out: dict[str, tuple[str, str]] = {}
    in_params = False
    base_indent = None
    cur_names: list[str] = []
    cur_type, cur_desc = "", []

    def flush():
        for n in cur_names:
            out.setdefault(n, (cur_type, " ".join(cur_desc).strip()))

    for i, line in enumerate(lines):
        m = _SECTION.match(line)
        if m and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}:
            if in_params:
                flush()
                cur_names = []
            in_params = m.group(1) == "Parameters"
            base_indent = None
            continue
        if not in_params or set(line.strip()) == {"-"} or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if base_indent is None:
            base_indent = indent
        if indent == base_indent:
            flush()
            head, _, typ = line.strip().partition(" : ")
            cur_names = [n.strip() for n in head.split(",") if n.strip().isidentifier()]
            cur_type, cur_desc = typ.strip(), []
        else:
            cur_desc.append(line.strip())
    if in_params:
        flush()
    return out


_CHOICE_SET = re.compile(r"\{([^}]*)\}")


def _choices_from_type(typ: str) -> tuple:
    m = _CHOICE_SET.search(typ)
    if not m:
        return ()
    vals = []
    for part in m.group(1).split(","):
        part = part.strip().strip("'\"")
        if part:
            vals.append(part)
    return tuple(vals)


def _registry_choices(cls, name: str) -> tuple:
    """Choices that live in a registry of the estimator's module rather than in the docstring."""
    mod = inspect.getmodule(cls)
    if name == "solver":
        solvers = getattr(mod, "SOLVERS", None)
        fam = getattr(cls, "_family", None)
        if isinstance(solvers, dict):
            out = []
            for key, val in solvers.items():
                fams = val[0] if isinstance(val, tuple) and val else ()
                if fam is None or fam in fams:
                    out.append(key)
            return tuple(out)
    if name == "instantiation":
        from rwtool.features import instantiation_names
        from .custom_instantiation import CUSTOM
        return instantiation_names() + (CUSTOM,)
    if name == "base":
        bases = getattr(mod, "RKS_BASES", None)
        if bases:
            return tuple(bases)
    if name == "penalty":
        pens = getattr(mod, "PENALTIES", None)
        if pens:
            return tuple(pens)
    if name == "selector":
        sels = getattr(mod, "SELECTORS", None)
        if sels:
            return tuple(sels)
    return ()


def _doc_sources(cls):
    """Parameter docs of ``cls``, completed by its family's siblings for entries written
    "as for the RKHS weightings" (shared names without a type line)."""
    docs = {}
    for klass in reversed(cls.__mro__):
        docs.update(parse_numpydoc_params(klass.__doc__))
    mod = inspect.getmodule(cls)
    for fam in FAMILIES:
        if fam.module != getattr(mod, "__name__", None):
            continue
        for name in (fam.classifier, fam.regressor):
            other = getattr(mod, name, None) if name else None
            if other is None or other is cls:
                continue
            for key, (typ, desc) in parse_numpydoc_params(other.__doc__).items():
                if key in docs and not docs[key][0] and typ:
                    own = docs[key][1]
                    docs[key] = (typ, f"{desc} ({own})" if own else desc)
    return docs


def param_specs(cls) -> list[ParamSpec]:
    """The constructor parameters of ``cls`` in signature order, typed for the form."""
    docs = _doc_sources(cls)
    specs = []
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = None if p.default is inspect.Parameter.empty else p.default
        typ, desc = docs.get(p.name, ("", ""))
        choices = _registry_choices(cls, p.name) or _choices_from_type(typ)
        low = typ.lower()
        allows_none = default is None or "none" in low
        keywords = tuple(re.findall(r'"([A-Za-z_]+)"', typ)) if not choices else ()
        if isinstance(default, str) and default not in keywords and not choices:
            keywords = keywords + (default,)
        keywords = tuple(dict.fromkeys(keywords))
        if isinstance(default, bool):
            kind = "bool"
        elif choices and (default is None or isinstance(default, str)):
            kind = "choice"
            if isinstance(default, str) and default not in choices:
                choices = (default,) + tuple(choices)
        elif "sequence" in low or "array" in low:
            kind = "floats"
        elif isinstance(default, int) or (default is None and "int" in low.split(" or ")[0]):
            kind = "int"
        elif isinstance(default, float) or "float" in low or default is None:
            kind = "float"
        else:
            kind = "text"
        if p.name == "random_state":
            # reproducible by default: the app starts at seed 0 (cleared: a fresh draw)
            kind, allows_none = "int", True
            desc = (desc + " The app starts at 0 so that every run can be reproduced; clear "
                    "the field for a fresh random draw.").strip()
        specs.append(ParamSpec(p.name, default, kind, tuple(choices), typ, desc, allows_none,
                               keywords, p.name in ADVANCED,
                               {"initial": 0} if p.name == "random_state" else {}))
    return specs


def parse_value(spec: ParamSpec, text: str):
    """The Python value typed in a text field for ``spec``; raises ValueError with a hint."""
    t = text.strip()
    if not t or t.lower() == "none":
        if spec.allows_none:
            return None
        raise ValueError(f"{spec.name} needs a value")
    for kw in spec.keywords:
        if t.lower() == kw.lower():
            return kw
    if spec.kind == "int":
        try:
            f = float(t)
        except ValueError:
            raise ValueError(f"{spec.name} must be a whole number") from None
        if not f.is_integer():
            raise ValueError(f"{spec.name} must be a whole number, got {t}")
        return int(f)
    if spec.kind == "floats":
        try:
            return tuple(float(v) for v in t.replace(";", ",").split(",") if v.strip())
        except ValueError:
            raise ValueError(f"{spec.name} must be numbers separated by commas") from None
    if spec.kind == "float":
        try:
            return float(t)
        except ValueError:
            extra = f" or {', '.join(repr(k) for k in spec.keywords)}" if spec.keywords else ""
            raise ValueError(f"{spec.name} must be a number{extra}") from None
    return t


def format_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (tuple, list)):
        return ", ".join(format_value(v) for v in value)
    return str(value)
