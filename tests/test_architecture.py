"""The import graph of rwtool reads one way (docs/ARCHITECTURE.md).

Built from the source with ``ast``, imports inside functions included and relative imports
resolved, so a function-level import cannot hide a cycle or an import against the layers:

    bottom (exceptions, progress, _callbacks, _base, _params, _version, resources, threads, losses,
            bounds)
      < data, features < model_selection < solvers < scale < estimators < inspect < persist, report
      < cli

A module may import its own package and any lower layer; two modules never import each other
(even through a chain; imports under ``if TYPE_CHECKING:`` are annotations and do not count); each package's ``__init__`` docstring names, on a line starting with
``Must not import:``, what the package must not import, and that rule is checked too; and a
name starting with an underscore is private to its package (the bottom layer's modules count
as one package each).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "rwtool"

#: the layers, lowest first; a key is a module or a package (its submodules included)
LAYERS = [
    ("rwtool._version", "rwtool.exceptions", "rwtool.progress", "rwtool._callbacks", "rwtool._base",
     "rwtool._params", "rwtool.resources", "rwtool.threads", "rwtool.losses", "rwtool.bounds"),
    ("rwtool.data", "rwtool.features"),
    ("rwtool.model_selection",),
    ("rwtool.solvers",),
    ("rwtool.scale",),
    ("rwtool.estimators",),
    ("rwtool.inspect",),
    ("rwtool.persist", "rwtool.report"),
    ("rwtool.cli", "rwtool.__main__"),
    # the package face (the module rwtool/__init__.py only) and the old path of the search
    ("rwtool", "rwtool.tuning"),
]
#: a package docstring's rule: "Must not import: rwtool.a, rwtool.b," continued on indented lines
MUST_NOT = re.compile(r"^Must not import:(.*(?:\n[ \t]+\S.*)*)", re.M)


def _modules(root: Path = ROOT) -> dict[str, Path]:
    out = {}
    for p in root.rglob("*.py"):
        parts = list(p.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _is_type_checking(node) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``)."""
    if not isinstance(node, ast.If):
        return False
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(mods: dict[str, Path], roots=("rwtool",)):
    """(source, target module, imported name or None, line) for every import of a top-level
    package in ``roots`` (None: every import; tests/gui/test_layers.py reads the app's)."""
    edges = []
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {id(n) for block in ast.walk(tree) if _is_type_checking(block)
                       for stmt in block.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue        # annotations only: never imported at run time
            if isinstance(node, ast.Import):
                edges += [(mod, a.name, None, node.lineno) for a in node.names
                          if roots is None or a.name.split(".")[0] in roots]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if roots is not None and target.split(".")[0] not in roots:
                    continue
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    edges.append((mod, sub, None, node.lineno) if sub in mods
                                 else (mod, target, a.name, node.lineno))
    # importing rwtool.solvers._ridge from outside rwtool.solvers runs rwtool/solvers/__init__.py
    # first: the importer depends on that package face too
    implicit = []
    for s, t, _, line in edges:
        parts = t.split(".")
        for i in range(2, len(parts)):
            pkg = ".".join(parts[:i])
            if pkg in mods and not _within(s, pkg):
                implicit.append((s, pkg, None, line))
    return edges + implicit


def _layer_key(mod: str) -> tuple[int, str]:
    """(layer, unit) of a module: the unit is the package or bottom-layer module it belongs to."""
    best = None
    for i, keys in enumerate(LAYERS):
        for k in keys:
            inside = mod == k or (k != "rwtool" and mod.startswith(k + "."))
            if inside and (best is None or len(k) > len(best[1])):
                best = (i, k)
    if best is None:
        raise AssertionError(f"{mod} belongs to no layer: add it to LAYERS in this test and to "
                             f"docs/ARCHITECTURE.md")
    return best


def _cycles(nodes, edges) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph = {n: set() for n in nodes}
    for s, t, _, _ in edges:
        if t in graph and s != t:
            graph[s].add(t)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for n in sorted(graph):
        if n not in index:
            visit(n)
    return out


def _must_not(mods) -> dict[str, list[str]]:
    """Package -> what its __init__ docstring says it must not import."""
    rules = {}
    for mod, path in mods.items():
        if path.name != "__init__.py":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        m = MUST_NOT.search(doc)
        if m:
            rules[mod] = [s.strip() for s in m.group(1).replace("\n", " ").split(",") if s.strip()]
    return rules


def _within(mod: str, key: str) -> bool:
    return mod == key or mod.startswith(key + ".")


def check_cycles(root: Path = ROOT) -> list[str]:
    mods = _modules(root)
    return [" <-> ".join(c) for c in _cycles(mods, _imports(mods))]


def check_layers(root: Path = ROOT) -> list[str]:
    mods = _modules(root)
    bad, seen = [], set()
    for s, t, name, line in _imports(mods):
        (ls, us), (lt, ut) = _layer_key(s), _layer_key(t)
        if lt > ls and (s, line, ut) not in seen:
            seen.add((s, line, ut))
            bad.append(f"{s} (line {line}) imports {t}, a higher layer ({ut} > {us})")
    return bad


def check_rules(root: Path = ROOT) -> list[str]:
    mods = _modules(root)
    rules = _must_not(mods)
    bad, seen = [], set()
    for s, t, name, line in _imports(mods):
        for pkg, banned in rules.items():
            if _within(s, pkg):
                for b in banned:
                    if _within(t, b) and (s, line, b) not in seen:
                        seen.add((s, line, b))
                        bad.append(f"{s} (line {line}) imports {t}; {pkg} must not import {b}")
    return bad


def check_private(root: Path = ROOT) -> list[str]:
    mods = _modules(root)
    bad = []
    for s, t, name, line in _imports(mods):
        imported = name if name is not None else t.rsplit(".", 1)[-1]
        if not imported.startswith("_") or imported.startswith("__"):
            continue
        owner = t if name is not None else t.rsplit(".", 1)[0]
        if _layer_key(s)[1] != _layer_key(owner)[1]:
            bad.append(f"{s} (line {line}) imports the private {imported} of {owner}")
    return bad


def _fail(problems):
    if problems:
        pytest.fail("\n".join(problems))


def test_every_module_has_a_layer():
    for mod in _modules():
        _layer_key(mod)


def test_no_import_cycles():
    _fail(check_cycles())


def test_imports_go_down_the_layers():
    _fail(check_layers())


def test_packages_keep_their_must_not_import_rules():
    assert {"rwtool.data", "rwtool.features", "rwtool.model_selection", "rwtool.solvers",
            "rwtool.scale", "rwtool.estimators", "rwtool.persist"} <= set(_must_not(_modules()))
    _fail(check_rules())


def test_private_names_stay_in_their_package():
    _fail(check_private())


def test_the_checks_see_a_function_level_cycle(tmp_path):
    """The oracle of the checks: a two-module package whose cycle and upward import are hidden
    in functions, as rwtool's were."""
    pkg = tmp_path / "rwtool"
    (pkg / "solvers").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "losses.py").write_text("def f():\n    from .solvers import _x\n")
    (pkg / "solvers" / "__init__.py").write_text('"""S.\n\nMust not import: rwtool.losses\n"""\n'
                                                "from ..losses import f\n")
    (pkg / "solvers" / "_x.py").write_text("_y = 1\n")
    assert check_cycles(pkg) == ["rwtool.losses <-> rwtool.solvers"]
    assert len(check_layers(pkg)) == 1 and "rwtool.losses (line 2)" in check_layers(pkg)[0]
    assert len(check_rules(pkg)) == 1
    assert check_private(pkg) == ["rwtool.losses (line 2) imports the private _x of "
                                  "rwtool.solvers"]


#: what each public face exported before the modules moved into packages (rwtool 0.1 at the
#: move): every name must still be there, so user code and the docs keep working
_EXPORTED_BEFORE = {
    "rwtool": ["RWClassifier", "RWRegressor", "RKSClassifier", "RKSRegressor", "RFSGDClassifier",
               "GreedyMKClassifier", "GreedyMKRegressor", "BKerNNRegressor", "BKerNNClassifier",
               "Instantiation", "register_distribution", "register_kernel", "register_base",
               "read_csv", "preview_csv", "train_test_csv", "Dataset", "Preprocessing",
               "DataError", "save", "load", "read_model", "ModelFileError", "Progress",
               "ProgressEvent", "FitCancelled", "NotFittedError", "NumericalWarning",
               "ConvergenceWarning", "NumericalError", "InsufficientMemoryError", "estimate_fit",
               "FitEstimate", "features", "data", "persist", "bounds", "losses", "__version__"],
    "rwtool.data": ["read_csv", "preview_csv", "train_test_csv", "sniff_csv", "split_indices",
                    "scan_csv", "iter_csv", "CsvScan", "Dataset", "Preprocessing", "Dialect",
                    "CsvPreview", "ColumnSummary", "DataError", "EmptyFileError",
                    "HeaderOnlyError", "RaggedRowError", "NonNumericError", "NonFiniteError",
                    "MissingValueError", "AllMissingError", "SingleClassError",
                    "DuplicateColumnError", "FileTooLargeError", "HighCardinalityError",
                    "UnseenCategoryError", "MissingColumnError", "ColumnNotFoundError",
                    "EncodingError", "TargetError", "QuoteError", "HeaderError", "ScaleError",
                    "NA_VALUES", "MISSING_POLICIES", "TASKS", "samples_dir", "list_samples"],
    "rwtool.tuning": ["LogUniform", "Uniform", "Choice", "default_space", "kfold_indices",
                      "RandomizedSearchCV", "select_reg"],
    "rwtool.features": ["FeatureMap", "RKHSWeighting", "RWSign", "RWExpSign", "RWRelu",
                        "RWExpRelu", "RWStumps", "INSTANTIATIONS", "make_instantiation",
                        "DEFAULT_THETA", "gamma_from_theta", "gamma_from_kappa",
                        "instantiation_constants", "KitchenSign", "KitchenRelu", "KitchenStumps",
                        "KITCHEN_BASES", "RandomFourierFeatures", "FOURIER_KERNELS",
                        "shift_invariant_kernel", "TaylorMultiKernelFeatures", "knn_sigma",
                        "taylor_gaussian_kernel", "scale_sigma", "median_sigma"],
    "rwtool.estimators": ["RWClassifier", "RWRegressor", "RKSClassifier", "RKSRegressor",
                          "RFSGDClassifier", "GreedyMKClassifier", "GreedyMKRegressor", "SOLVERS",
                          "RKS_BASES", "SELECTORS"],
    "rwtool.persist": ["save", "load", "read_model", "read_info", "ModelFile", "ModelFileError",
                       "register", "registered_classes", "atomic_writer", "FORMAT",
                       "FORMAT_VERSION", "DEFAULT_MAX_BYTES"],
}


@pytest.mark.parametrize("face", sorted(_EXPORTED_BEFORE))
def test_public_names_of_before_the_move_still_import(face):
    import importlib
    mod = importlib.import_module(face)
    missing = [n for n in _EXPORTED_BEFORE[face] if not hasattr(mod, n)]
    assert not missing, f"{face} no longer has {missing}"
    assert set(_EXPORTED_BEFORE[face]) - {"__version__"} <= set(mod.__all__) | {"__version__"}


def test_every_error_class_is_one_object_wherever_it_is_imported_from():
    """rwtool.exceptions defines them; the package face and the modules that used to define
    them hand out the same class, so an ``except`` written against either catches both."""
    import rwtool
    import rwtool.data
    import rwtool.exceptions as E
    import rwtool.persist
    from rwtool._base import NotFittedError
    from rwtool.progress import FitCancelled
    assert rwtool.NotFittedError is NotFittedError is E.NotFittedError
    assert rwtool.FitCancelled is FitCancelled is E.FitCancelled
    assert rwtool.NumericalWarning is E.NumericalWarning
    assert rwtool.ConvergenceWarning is E.ConvergenceWarning
    assert issubclass(E.ConvergenceWarning, E.NumericalWarning)
    assert rwtool.DataError is rwtool.data.DataError is E.DataError
    assert issubclass(rwtool.data.EmptyFileError, E.DataError)
    assert rwtool.ModelFileError is rwtool.persist.ModelFileError is E.ModelFileError


def test_the_version_is_written_once():
    """pyproject.toml reads the version from rwtool/_version.py (no second copy to drift)."""
    tomllib = pytest.importorskip("tomllib")     # Python 3.11+

    import rwtool
    from rwtool._version import __version__
    meta = tomllib.loads((ROOT.parent / "pyproject.toml").read_text())
    assert "version" not in meta["project"] and "version" in meta["project"]["dynamic"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "rwtool._version.__version__"}
    assert rwtool.__version__ is __version__
