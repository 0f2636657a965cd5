"""The parameter tables (rwtool._params) against the constructors they describe.

Every ``__init__`` parameter of every estimator and public feature map has exactly one entry, in signature order, with
the signature's default; every entry accepts its default and refuses a value outside its range
or choices with a message naming the parameter; ``fit`` refuses those values too (it reads the
table); the CLI's --param and the app's form turn the same text into the same value; and the
class docstrings, which keep the maths and the why, name every parameter with the table's
default.
"""

from __future__ import annotations

import ast
import inspect
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rwtool import (BKerNNClassifier, BKerNNRegressor, GreedyMKClassifier, GreedyMKRegressor,
                    RFSGDClassifier, RKSClassifier, RKSRegressor, RWClassifier, RWRegressor, cli)
from rwtool._params import Interval, Param
from rwtool.features import (KitchenRelu, KitchenSign, KitchenStumps, RandomFourierFeatures,
                             RWExpRelu, RWExpSign, RWRelu, RWSign, RWStumps,
                             TaylorMultiKernelFeatures)
from rwtool.features._rkhs_mc import MonteCarloRKHS

ESTIMATORS = [RWClassifier, RWRegressor, RKSClassifier, RKSRegressor, RFSGDClassifier,
              GreedyMKClassifier, GreedyMKRegressor, BKerNNClassifier, BKerNNRegressor]
FEATURE_MAPS = [RWSign, RWRelu, RWExpSign, RWExpRelu, RWStumps, MonteCarloRKHS, KitchenSign,
                KitchenRelu, KitchenStumps, RandomFourierFeatures, TaylorMultiKernelFeatures]
CLASSES = ESTIMATORS + FEATURE_MAPS
ids = [c.__name__ for c in CLASSES]
est_ids = [c.__name__ for c in ESTIMATORS]


def _signature(cls):
    return {n: p.default for n, p in inspect.signature(cls.__init__).parameters.items()
            if n != "self"}


def _entries():
    return [(cls, p) for cls in CLASSES for p in cls._parameters.values()]


def _entry_id(item):
    cls, p = item
    return f"{cls.__name__}.{p.name}"


def _outside(p: Param) -> list:
    """Values the entry must refuse: past each finite end of its range, of the wrong type,
    unknown names, None where None has no meaning."""
    bad = []
    if p.kind in ("int", "float"):
        iv = p.interval or Interval(-math.inf, math.inf, True, True)
        step = 1 if p.kind == "int" else 0.5
        if math.isfinite(iv.low):
            bad.append(iv.low if iv.low_open else iv.low - step)
        if math.isfinite(iv.high):
            bad.append(iv.high if iv.high_open else iv.high + step)
        bad += [math.nan, "not-a-number", True]
        if p.kind == "int":
            bad.append(2.5)
    elif p.kind == "bool":
        bad += [1, "yes"]
    elif p.kind == "choice":
        bad += ["no-such-choice", 3]
    elif p.kind == "floats":
        bad += ["ab", (0.5, math.nan)]
    elif p.kind == "seed":
        bad += [-1, 2.5, "seed"]
    if p.none is None:
        bad.append(None)
    if p.kind in ("int", "float") and p.keywords:
        bad.append("no-such-keyword")
    return [b for b in bad if isinstance(b, str) or b != p.default]


def _named(p: Param) -> str:
    return rf"\b{re.escape(p.name)}\b"


# -- the tables and the signatures ----------------------------------------------------------

@pytest.mark.parametrize("cls", CLASSES, ids=ids)
def test_one_entry_per_init_parameter_with_its_default(cls):
    sig = _signature(cls)
    assert list(cls._parameters) == list(sig), "the table follows the signature, in its order"
    for name, p in cls._parameters.items():
        assert p.name == name
        assert type(p.default) is type(sig[name]) and p.default == sig[name], name
        assert p.help and "\n" not in p.help, f"{name}: one line of help"


@pytest.mark.parametrize("item", _entries(), ids=_entry_id)
def test_entry_accepts_its_default_and_refuses_outside_values(item):
    cls, p = item
    assert p.validate(p.default) == p.default
    for bad in _outside(p):
        with pytest.raises((ValueError, TypeError), match=_named(p)) as info:
            p.validate(bad)
        if not isinstance(bad, str) and p.check is None:
            # the message says what is allowed and what was given
            assert p.allowed() in str(info.value) and repr(bad) in str(info.value)


@pytest.mark.parametrize("item", _entries(), ids=_entry_id)
def test_choices_and_keywords_are_case_insensitive(item):
    _, p = item
    for name in (p.options() if p.kind == "choice" else ()) + tuple(p.keywords):
        assert p.validate(name.upper()) == name
        assert p.parse(f" {name.upper()} ") == name


def _data(cls):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    y = X[:, 0] - X[:, 1] if cls._estimator_type == "regressor" else (X[:, 0] > 0).astype(int)
    return X, y                                     # (a feature map's fit ignores y)


@pytest.mark.parametrize("cls", CLASSES, ids=ids)
def test_fit_refuses_what_the_table_refuses(cls):
    """fit validates through the table: each refused value stops it with the parameter named."""
    X, y = _data(cls)
    for p in cls._parameters.values():
        for bad in _outside(p):
            with pytest.raises((ValueError, TypeError), match=_named(p)):
                cls(**{p.name: bad}).fit(X, y)


def test_rules_between_parameters_stay_in_the_estimators():
    X, y = _data(RWRegressor)
    with pytest.raises(ValueError, match="minimises the squared loss only"):
        RWClassifier(solver="lstsq", loss="logistic").fit(X, y > 0)
    with pytest.raises(ValueError, match="needs \\+/-1 targets"):
        RWRegressor(solver="sfgd", loss="logistic").fit(X, y)
    with pytest.raises(ValueError, match="reg must be < 1"):
        RWRegressor(solver="osd", reg=1.0).fit(X, y)
    with pytest.raises(ValueError, match="n_candidates .* at least n_features"):
        GreedyMKClassifier(selector="eerf", n_features=20, n_candidates=10).fit(X, y > 0)


# -- the CLI and the app's form read the same parser -------------------------------------------

def _texts(p: Param) -> list[str]:
    texts = ["", "none", "auto", "1e3", "2.5", "-1", "0", "1", "true", "False", "x", " 7 "]
    texts += [str(c).upper() for c in p.options()] if p.kind == "choice" else []
    texts += [str(p.default), "0.5, 0.5"]
    return texts


def _cli_value(cls, method, name, text):
    args = cli.build_parser().parse_args(
        ["train", "data.csv", "--target", "y", "--method", method, "--param", f"{name}={text}"])
    task = "regression" if cls._estimator_type == "regressor" else "binary"
    return cli._make_estimator(args, task).get_params()[name]


_METHOD = {"RW": "rw", "RKS": "rks", "RFSGD": "rfsgd", "GreedyMK": "greedy", "BKerNN": "bkernn"}


@pytest.mark.slow
@pytest.mark.parametrize("cls", ESTIMATORS, ids=est_ids)
def test_cli_and_form_parse_a_value_the_same_way(cls):
    pytest.importorskip("PySide6")
    from gui.logic.methods import param_specs, parse_value
    method = next(v for k, v in _METHOD.items() if cls.__name__.startswith(k))
    for spec in param_specs(cls):
        for text in _texts(spec.param):
            try:
                form = ("ok", parse_value(spec, text))
            except ValueError as exc:
                form = ("error", str(exc))
            try:
                line = ("ok", _cli_value(cls, method, spec.name, text))
            except ValueError as exc:
                line = ("error", str(exc))
            assert form == line, (spec.name, text)
        if spec.kind == "choice":             # a combo box offers exactly what the CLI parses
            for c in spec.choices:
                assert _cli_value(cls, method, spec.name, str(c)) == c


# -- the docstrings name every parameter with the table's default ------------------------------

_HEADER = re.compile(r"^    ([A-Za-z_][\w, ]*?)(?: : (.*))?$")


def _documented(doc: str) -> dict[str, str | None]:
    """name -> the default written in its header line ("default X"), or None."""
    section = doc.split("Parameters\n    ----------\n", 1)[1].split("\n    Attributes\n")[0]
    out = {}
    for line in section.splitlines():
        m = _HEADER.match(line)
        if m:
            d = re.search(r"default (.+)$", m.group(2) or "")
            for name in m.group(1).split(","):
                out[name.strip()] = d.group(1).strip() if d else None
    return out


@pytest.mark.parametrize("cls", ESTIMATORS, ids=est_ids)
def test_docstring_names_every_parameter_with_the_table_default(cls):
    documented = _documented(cls.__doc__)
    for name, p in cls._parameters.items():
        assert name in documented, f"{cls.__name__} docstring has no entry for {name}"
        if documented[name] is not None:
            assert ast.literal_eval(documented[name]) == p.default, name


@pytest.mark.slow
def test_parameters_doc_is_generated_from_the_tables():
    """docs/PARAMETERS.md is the tables' text (a fresh interpreter: no Instantiation that a test
    registered in this session among the choices)."""
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, str(root / "tools" / "parameters_doc.py"), "--check"],
                         capture_output=True, text=True, cwd=root)
    assert run.returncode == 0, run.stderr
