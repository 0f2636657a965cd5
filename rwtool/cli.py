"""The ``rwtool`` command: train, predict, evaluate, info, export-onnx, inspect and samples.

A thin driver over the calls a script makes (rwtool.data.read_csv / train_test_csv, the
estimators, rwtool.persist.save / read_model) and over rwtool.report, which it shares with the
app (methods, evaluation, metrics, bounds table, predictions CSV): it parses arguments, draws a
progress bar on stderr from the progress protocol (Ctrl-C cancels the fit through the callback),
prints a table or, with ``--json``, one JSON document on stdout, and exits non-zero with a
one-line message on any error, its fix in the command line's words (``CLI_TERMS``). It must not
hold any learning, scoring or parsing logic of its own.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from ._version import __version__
from .data import (DataError, Preprocessing, list_samples, preview_csv, read_csv, samples_dir,
                   train_test_csv)
from .exceptions import FitCancelled, ModelFileError, NumericalError, human_bytes
from .persist import read_info, read_model, save, to_onnx
from .report import (METHODS, SCORING_WORDS, Terms, apply_to_file, bound_meanings, bounds_table,
                     check_labels, defined_scores, evaluate, fit_summary, importance_on_file,
                     metric_meaning, phrase, prediction_columns, scoring_words, write_csv, write_predictions)
from .resources import MEMORY_FRACTION, available_memory
from .scale import can_stream, train_csv

__all__ = ["main", "run", "exit_process", "build_parser", "CLIError", "CLI_TERMS"]

#: how the command line names the settings an error's fix points to (rwtool.report.Terms)
CLI_TERMS = Terms("CLI", {
    "task": "--task {value}", "target": "--target {value}", "ignore": "--ignore {value}",
    "numeric": "--numeric {value}", "categorical": "--categorical {value}",
    "missing": "--missing {value}", "encoding": "--encoding {value}",
    "decimal": "--decimal {value}", "delimiter": "--delimiter {value}",
    "header": "--no-header", "max_categories": "--max-categories {value}",
    "max_bytes": "--max-mb {value}", "handle_unknown": "--handle-unknown {value}"})

#: command-line option -> estimator parameter names it may set (the first one accepted wins)
_OPTION_PARAMS = {
    "instantiation": ("instantiation",), "base": ("base",), "solver": ("solver",),
    "n_features": ("n_features", "n_particles"), "reg": ("reg",), "sigma": ("sigma",),
    "gamma": ("gamma",), "theta": ("theta",), "kappa": ("kappa",), "kernel": ("kernel",),
    "loss": ("loss",), "seed": ("random_state",),
}

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130


class CLIError(Exception):
    """A user-facing error with a one-line message and the exit status to return."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


# ============================================================================ methods



def _make_estimator(args, task: str):
    cls = METHODS[args.method].estimator_class(task)
    if cls is None:
        kind = "regressor" if task == "regression" else "classifier"
        raise CLIError(f"method {args.method!r} has no {kind}; the target is {task} "
                       f"(choose another --method or --task)")
    accepted = set(cls._param_names())
    params = {}
    for opt, names in _OPTION_PARAMS.items():
        value = getattr(args, opt, None)
        if value is None:
            continue
        target = next((n for n in names if n in accepted), None)
        if target is None:
            flag = "--" + opt.replace("_", "-")
            raise CLIError(f"option {flag} does not apply to method {args.method!r} "
                           f"({cls.__name__} parameters: {', '.join(sorted(accepted))})")
        params[target] = cls._parameters[target].parse(value)
    for item in args.param or []:
        key, sep, val = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise CLIError(f"--param expects NAME=VALUE, got {item!r}")
        if key not in accepted:
            raise CLIError(f"{cls.__name__} has no parameter {key!r} (parameters: "
                           f"{', '.join(sorted(accepted))})")
        params[key] = cls._parameters[key].parse(val)   # the table's parser, as the app's form
    return cls(**params)


# ============================================================================ progress

class ProgressBar:
    """Progress-protocol callback drawing on stderr; returns True (cancel) after Ctrl-C."""

    def __init__(self, stream=None, enabled: bool = True, width: int = 28):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.width = width
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.cancel_requested = False
        self._open = False

    def __call__(self, event) -> bool:
        if self.enabled:
            self._draw(event)
        return self.cancel_requested

    def _draw(self, ev) -> None:
        metrics = " ".join(f"{k}={_fmt(v)}" for k, v in list(ev.metrics.items())[:3])
        if self.tty:
            if ev.total > 0:
                filled = int(round(self.width * ev.fraction))
                bar = "#" * filled + "-" * (self.width - filled)
                text = f"{ev.stage[:20]:<20} [{bar}] {100 * ev.fraction:5.1f}%"
            else:
                text = f"{ev.stage[:20]:<20} {ev.done}"
            text = f"\r{text} {ev.elapsed:7.1f}s {metrics}"[:200]
            self.stream.write(text + "\033[K")
            self._open = True
            if ev.kind == "end":
                self.stream.write("\n")
                self._open = False
        elif ev.kind == "end":
            self.stream.write(f"{ev.stage}: done at {ev.elapsed:.1f}s {metrics}".rstrip() + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False

    def install_sigint(self):
        """First Ctrl-C asks the fit to stop at its next progress report; a second one aborts."""
        def handler(signum, frame):
            if self.cancel_requested:
                raise KeyboardInterrupt
            self.cancel_requested = True
        try:
            return signal.signal(signal.SIGINT, handler)
        except ValueError:          # not in the main thread (tests, embedding)
            return None


def _words(notes) -> list[str]:
    """The notes with their advice in the command line's words (``--ignore id``)."""
    return [phrase(n, CLI_TERMS) for n in notes if n]


def _fmt(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if not math.isfinite(v):
            return str(v)
        if v == int(v) and 1 <= abs(v) < 1e6:
            return str(int(v))           # counts such as the number of rows, read as such
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.3e}"
        return f"{v:.4f}"
    return str(v)


# ============================================================================ metrics

def _scores(est, data, task: str, prefix: str, source: str, notes: list) -> dict:
    """``{prefix}_error`` ... of ``est`` on a Dataset whose labels were checked already
    (rwtool.report.evaluate); its notes (an undefined R^2) go to ``notes``."""
    ev = evaluate(est, data.X, data.y, task=task, source=source, labels_checked=True)
    notes += ev.notes
    return {f"{prefix}_{k}": v for k, v in ev.scores.items()}


# ============================================================================ output

def _emit_json(obj) -> None:
    sys.stdout.write(json.dumps(_jsonable(obj), indent=2, allow_nan=False) + "\n")


def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer, int)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return float(v) if math.isfinite(v) else None
    if v is None or isinstance(v, str):
        return v
    return str(v)


def _table(rows, out=None) -> None:
    """Rows ``(name, value)`` or ``(name, value, what it means)``, aligned in columns."""
    out = out or sys.stdout
    rows = [(str(r[0]), r[1] if isinstance(r[1], str) else _fmt(r[1]), *r[2:]) for r in rows]
    width = max((len(r[0]) for r in rows), default=0)
    vwidth = max((len(r[1]) for r in rows if len(r) > 2), default=0)
    for r in rows:
        line = f"  {r[0]:<{width}}  {r[1]:<{vwidth}}  {r[2]}" if len(r) > 2 and r[2] else \
            f"  {r[0]:<{width}}  {r[1]}"
        out.write(line.rstrip() + "\n")


# ============================================================================ data options

def _dialect_options(args) -> dict:
    """Reading options shared by every command that opens a CSV file."""
    opts = {}
    if args.delimiter is not None:
        opts["delimiter"] = {"tab": "\t", "\\t": "\t", "comma": ",",
                             "semicolon": ";"}.get(args.delimiter, args.delimiter)
    for name in ("decimal", "encoding", "nrows"):
        if getattr(args, name, None) is not None:
            opts[name] = getattr(args, name)
    if getattr(args, "no_header", False):
        opts["header"] = False
    if args.max_mb is not None:
        opts["max_bytes"] = None if args.max_mb <= 0 else int(args.max_mb * 1e6)
    return opts


def _data_options(args) -> dict:
    opts = _dialect_options(args)
    opts.update(missing=args.missing, max_categories=args.max_categories, task=args.task,
                handle_unknown=args.handle_unknown)
    for name in ("ignore", "categorical", "numeric", "features"):
        if getattr(args, name, None) is not None:
            opts[name] = getattr(args, name)
    return opts


def _add_data_options(p) -> None:
    g = p.add_argument_group("data reading")
    g.add_argument("--task", default="auto",
                   choices=["auto", "binary", "multiclass", "classification", "regression"],
                   help="learning task (default: inferred from the target)")
    g.add_argument("--missing", default="error",
                   choices=["error", "drop-rows", "impute-mean", "impute-most-frequent"],
                   help="policy for missing values (default: error)")
    g.add_argument("--ignore", nargs="+", metavar="COL", help="columns to leave out")
    g.add_argument("--features", nargs="+", metavar="COL",
                   help="feature columns (default: all but the target and ignored ones)")
    g.add_argument("--categorical", nargs="+", metavar="COL",
                   help="force these columns to be one-hot encoded")
    g.add_argument("--numeric", nargs="+", metavar="COL", help="force these columns numeric")
    g.add_argument("--max-categories", type=int, default=50,
                   help="largest number of categories one-hot encoded per column (default 50)")
    g.add_argument("--handle-unknown", default="error", choices=["error", "ignore"],
                   help="categories unseen in training: error, or all-zero encoding")
    g.add_argument("--no-header", action="store_true", help="the file has no header line")
    _add_dialect_options(g)


def _add_model_limit(p) -> None:
    p.add_argument("--max-model-mb", type=float, metavar="MB",
                   help="refuse model files that would take more memory than this to load "
                        "(default 4295, i.e. 4 GiB; raise it for a trusted larger model)")


def _add_dialect_options(g) -> None:
    g.add_argument("--delimiter", help="field delimiter (default: detected; 'tab' for tab)")
    g.add_argument("--decimal", choices=[".", ","], help="decimal mark (default: detected)")
    g.add_argument("--encoding",
                   help="text encoding, e.g. utf-8, cp1252, shift_jis, gb18030, euc_kr, "
                        "cp1251, latin-1 (default: detected from the byte-order mark, else "
                        "UTF-8, else the best-scored legacy encoding, named in the notes)")
    g.add_argument("--nrows", type=int, help="read only the first NROWS rows")
    g.add_argument("--max-mb", type=float,
                   help="refuse files larger than this many MB (default 1074; 0: no limit)")


# ============================================================================ commands

def cmd_train(args) -> int:

    if _should_stream(args):
        return _train_streaming(args)
    opts = _data_options(args)
    if args.test is not None:
        train, test = train_test_csv(args.data, args.target, test=args.test, **opts)
    elif args.test_size > 0:
        train, test = train_test_csv(args.data, args.target, test_size=args.test_size,
                                     random_state=args.split_seed, **opts)
    else:
        train, test = read_csv(args.data, args.target, **opts), None
    if train.y is None:
        raise CLIError("no target column: pass --target COL")
    est = _make_estimator(args, train.task)
    label_note = None
    test_source = os.path.basename(args.test) if args.test else \
        f"the test rows of {os.path.basename(args.data)}"
    if test is not None and train.task != "regression":
        # before the fit: a test file coded differently is refused in a second, not after it
        label_note = check_labels(np.unique(np.asarray(train.y)), test.y, test_source)
    bar = ProgressBar(enabled=not (args.quiet or args.no_progress))
    old = bar.install_sigint()
    cancelled = partial = False
    t0 = time.perf_counter()
    try:
        est.fit(train.X, train.y, callback=bar)
    except FitCancelled as exc:
        cancelled, partial = True, bool(exc.partial_model)
        if not partial:
            raise CLIError("training cancelled; no model was kept",
                           exit_code=EXIT_CANCELLED) from None
    finally:
        bar.close()
        if old is not None:
            signal.signal(signal.SIGINT, old)
    wall = time.perf_counter() - t0
    metrics = {"n_train": train.n_samples, "n_test": 0 if test is None else test.n_samples,
               "n_inputs": train.n_features}
    notes = list(train.notes) + [label_note]
    metrics.update(_scores(est, train, train.task, "train",
                           f"the training rows of {os.path.basename(args.data)}", notes))
    if test is not None:
        metrics.update(_scores(est, test, train.task, "test", test_source, notes))
    metrics["fit_time_s"] = float(getattr(est, "fit_time_", wall))
    _add_fit_summary(est, metrics, reg=True)
    bounds, bound_note = ([], None) if args.no_bounds else bounds_table(est, train.X, train.y)
    metrics.update({f"bound_{b.key}": b.value for b in bounds})
    if cancelled:
        metrics["cancelled"] = True
    notes = [n for n in notes + [bound_note] if n]
    if cancelled:
        notes.append("training was cancelled: the model is the last completed iterate")
    _report_training(args, est, metrics, notes, train.preprocessing, train.summary(), bounds)
    return EXIT_CANCELLED if cancelled else EXIT_OK


def _report_training(args, est, metrics, notes, preprocessing, data_summary,
                     bounds=()) -> None:
    """Save the model (with --out) and print the training report (table or JSON); the bound
    rows (rwtool.report.bounds_table) are printed with what each number means."""
    notes = _words(notes)
    saved = None
    if args.out:
        saved = save(est, args.out, preprocessing=preprocessing, metrics=metrics,
                     notes=f"trained by 'rwtool train' on {os.path.basename(args.data)}",
                     keep_posterior=not args.no_posterior)
        if saved.note:          # temporaries of killed saves into that folder, removed first
            notes = list(notes) + [saved.note]
    task, target = preprocessing.task, preprocessing.target["name"]
    classes = None if preprocessing.target.get("classes") is None else list(
        preprocessing.target["classes"])
    if args.json:
        _emit_json({"command": "train", "method": args.method, "estimator": type(est).__name__,
                    "params": est.get_params(deep=False), "task": task,
                    "target": target, "classes": classes,
                    "feature_names": preprocessing.feature_names_out, "metrics": metrics,
                    "bounds": [{"name": f"bound_{b.key}", "value": b.value,
                                "meaning": b.meaning} for b in bounds],
                    "model_file": saved, "notes": notes, "data": data_summary})
    elif not args.quiet:
        n_test = metrics.get("n_test", 0)
        print(f"{type(est).__name__} ({args.method}) on {os.path.basename(args.data)}: "
              f"{task}, target {target!r}, {metrics['n_train']} training rows"
              + (f", {n_test} test rows" if n_test else "")
              + f", {metrics['n_inputs']} input columns")
        meaning = {f"bound_{b.key}": b.meaning for b in bounds}
        _table([(k, v, metric_meaning(k)) for k, v in metrics.items()
                if k not in ("n_train", "n_test", "n_inputs") and k not in meaning])
        if bounds:
            print("  bounds of the training sample (squared loss in the model's units: +/-1 "
                  "labels, standardised targets):")
            _table([(k, metrics[k], meaning[k]) for k in meaning])
        for n in notes:
            print(f"  note: {n}")
        if saved:
            print(f"model saved to {saved}")


def _add_fit_summary(est, metrics, reg: bool) -> None:
    """The model's size, the theta its gamma rule used (theta=None resolves per instantiation)
    and, with ``reg``, the reg used and whether cross-validation chose it."""
    s = fit_summary(est)
    if "n_features_out" in s:
        metrics["n_features"] = s["n_features_out"]
    if "theta" in s:
        metrics["theta"] = s["theta"]
    if reg and "reg" in s:
        metrics["reg_chosen_by_cv" if s["reg_auto"] else "reg"] = s["reg"]


#: the in-memory reader needs about this many times the file's size
_IN_MEMORY_FACTOR = 3


def _should_stream(args) -> bool:
    """--stream yes/no, or auto: stream a regular file whose in-memory reading would not fit (or
    would pass the size limit) when the method learns from sums of rows."""
    if args.stream == "no":
        return False
    path = args.data
    regular = path != "-" and os.path.isfile(path)
    if args.stream == "yes":
        if not regular:
            raise CLIError(f"--stream yes needs a regular file (it reads it several times), not "
                           f"{path!r}")
        if args.nrows is not None:
            raise CLIError("--stream yes reads the whole file; drop --nrows")
        return True
    if not regular or args.nrows is not None:
        return False
    size = os.path.getsize(path)
    limit = (1 << 30) if args.max_mb is None else (
        math.inf if args.max_mb <= 0 else args.max_mb * 1e6)
    if size <= limit and _IN_MEMORY_FACTOR * size <= MEMORY_FRACTION * available_memory():
        return False
    try:
        probe = _make_estimator(args, "regression")
    except CLIError:
        probe = _make_estimator(args, "binary")
    return can_stream(probe)


def _train_streaming(args) -> int:
    """`rwtool train` on a file read in blocks (rwtool.scale._train_csv): bounded memory."""

    opts = _data_options(args)
    opts.pop("nrows", None)
    opts["max_bytes"] = opts.get("max_bytes")
    block = int(args.block_mb * 2**20)
    bar = ProgressBar(enabled=not (args.quiet or args.no_progress))
    old = bar.install_sigint()
    try:
        run = train_csv(args.data, args.target, lambda task: _make_estimator(args, task),
                        test=args.test, test_size=args.test_size, split_seed=args.split_seed,
                        block_bytes=block, callback=bar, **opts)
    except FitCancelled:
        raise CLIError("training cancelled; no model was kept",
                       exit_code=EXIT_CANCELLED) from None
    except ValueError as exc:
        if type(exc) is ValueError:
            raise CLIError(str(exc)) from None
        raise
    finally:
        bar.close()
        if old is not None:
            signal.signal(signal.SIGINT, old)
    _add_fit_summary(run.estimator, run.metrics, reg=False)
    name = os.path.basename(args.data)
    metrics, undefined = defined_scores(run.metrics, {
        "train_r2": f"the training rows of {name}",
        "test_r2": os.path.basename(args.test) if args.test else f"the test rows of {name}"})
    notes = list(run.notes) + undefined
    if not args.no_bounds:
        notes.append("bounds need the training data in memory: not computed when streaming")
    summary = {"source": os.path.abspath(args.data), "n_samples": run.n_train,
               "n_features": run.preprocessing.n_features_out, "target": run.target,
               "task": run.task, "notes": list(run.notes), "streamed": True,
               "dialect": run.dialect.to_dict()}
    _report_training(args, run.estimator, metrics, notes, run.preprocessing, summary)
    return EXIT_OK


def _model_limit(args) -> dict:
    mb = getattr(args, "max_model_mb", None)
    return {} if mb is None else {"max_bytes": max(1, int(mb * 1e6))}


def _read_model(args):
    return read_model(args.model, **_model_limit(args))


def cmd_predict(args) -> int:
    mf = _read_model(args)
    res = apply_to_file(mf, args.data, score=False, **_dialect_options(args))
    ds = res.data
    columns = prediction_columns(mf.estimator, ds.X, ds.rows, res.pred, args.decision)
    if args.json:
        _emit_json({"command": "predict", "model": mf.path, "data": args.data,
                    "n_rows": ds.n_samples, "notes": _words(res.notes),
                    "columns": {k: np.asarray(v).tolist() for k, v in columns.items()}})
        if args.out:
            _write_predictions(args.out, columns)
        return EXIT_OK
    if args.out:
        _write_predictions(args.out, columns)
        if not args.quiet:
            print(f"{ds.n_samples} predictions written to {os.path.abspath(args.out)}")
            for n in _words(res.notes):
                print(f"  note: {n}")
    else:
        write_csv(sys.stdout, columns)
    return EXIT_OK


def _write_predictions(path, columns) -> None:
    try:
        write_predictions(path, columns)
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from None


def cmd_evaluate(args) -> int:
    mf = _read_model(args)
    res = apply_to_file(mf, args.data, require_target=True, **_dialect_options(args))
    ds, ev, est = res.data, res.evaluation, mf.estimator
    if ev is None:
        raise CLIError(f"no row of {os.path.basename(args.data)} has a target value to "
                       f"evaluate the model on")
    task = ds.task
    m = {"n_rows": ds.n_samples, **{f"test_{k}": v for k, v in ev.scores.items()}}
    conf = None if ev.confusion is None else {"labels": [str(c) for c in ev.classes],
                                              "matrix": ev.confusion.tolist()}
    if args.json:
        _emit_json({"command": "evaluate", "model": mf.path, "data": args.data, "task": task,
                    "metrics": m, "confusion": conf, "notes": _words(res.notes)})
        return EXIT_OK
    print(f"{type(est).__name__} on {os.path.basename(args.data)} ({task}, "
          f"{ds.n_samples} rows)")
    _table([(k, v, metric_meaning(k)) for k, v in m.items()])
    if conf is not None and len(conf["labels"]) <= 12:
        labels = conf["labels"]
        w = max(6, *(len(s) for s in labels))
        print("  confusion (rows: true, columns: predicted)")
        print("  " + " " * w + "".join(f" {s:>{w}}" for s in labels))
        for s, row in zip(labels, conf["matrix"]):
            print(f"  {s:>{w}}" + "".join(f" {v:>{w}}" for v in row))
    for n in _words(res.notes):
        print(f"  note: {n}")
    return EXIT_OK


def cmd_info(args) -> int:
    info = read_info(args.model, **_model_limit(args))
    if args.json:
        _emit_json(info)
        return EXIT_OK
    print(f"{args.model}: {info['estimator_class']}")
    _table([("format", f"{info['format']} {info['format_version']}"),
            ("written by", f"rwtool {info['rwtool_version']} (numpy {info['numpy_version']}, "
                           f"python {info['python_version']}) at {info['created']}"),
            ("size", f"{info['size_bytes']} bytes, {len(info['arrays'])} arrays, "
                     f"checksums verified, {human_bytes(info['load_bytes'])} to load")])
    print("  parameters:")
    _table([(f"  {k}", "None" if v is None else v) for k, v in (info["params"] or {}).items()])
    if info.get("classes") is not None:
        print(f"  classes: {info['classes']}")
    names = info.get("feature_names")
    if names:
        shown = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20
                                         else "")
        print(f"  inputs: {shown}")
    if info.get("preprocessing"):
        print("  preprocessing:")
        for line in Preprocessing.from_dict(info["preprocessing"]).describe():
            print(f"    {line}")
    else:
        print("  preprocessing: none recorded (the model takes numeric arrays only)")
    if info.get("metrics"):
        print("  metrics at training:")
        meaning = bound_meanings(info["metrics"])
        _table([(f"  {k}", v, meaning.get(k) or metric_meaning(k))
                for k, v in info["metrics"].items()])
    if info.get("notes"):
        print(f"  notes: {info['notes']}")
    return EXIT_OK


def cmd_export_onnx(args) -> int:
    mf = _read_model(args)
    saved = to_onnx(mf, args.out, dtype=args.dtype)
    size = os.path.getsize(saved)
    inputs = ("one input per CSV column: " + ", ".join(mf.preprocessing.input_columns)
              if mf.preprocessing is not None else
              f"one input X of {mf.estimator.n_features_in_} columns")
    if args.json:
        _emit_json({"command": "export-onnx", "model": mf.path, "onnx_file": saved,
                    "size_bytes": size, "dtype": args.dtype or "float64",
                    "inputs": (mf.preprocessing.input_columns if mf.preprocessing is not None
                               else ["X"]), "notes": [saved.note] if saved.note else []})
    elif not args.quiet:
        print(f"{type(mf.estimator).__name__} written to {saved} ({human_bytes(size)}, "
              f"{args.dtype or 'float64'}; {inputs})")
        if saved.note:
            print(f"  note: {saved.note}")
    return EXIT_OK


def cmd_inspect(args) -> int:
    if args.importance:
        return _inspect_importance(args)
    pv = preview_csv(args.data, n_head=args.head, **_dialect_options(args))
    if args.json:
        _emit_json({**pv.to_dict(), "notes": _words(pv.notes)})
        return EXIT_OK
    print(f"{args.data}: {pv.n_rows} rows, {len(pv.names)} columns ({pv.dialect.describe()})")
    w = max(len(n) for n in pv.names)
    print(f"  {'column':<{w}}  {'type':<11} {'missing':>7} {'distinct':>8}  range / examples")
    for c in pv.columns:
        if c.kind == "numeric":
            detail = "" if c.min is None else f"{c.min:.6g} .. {c.max:.6g}"
            if c.n_text:
                detail += f"  (text cells: {c.examples[:3]})"
        else:
            detail = ", ".join(c.examples[:5])
        print(f"  {c.name:<{w}}  {c.kind:<11} {c.n_missing:>7} {c.n_distinct:>8}  {detail}")
    t = pv.suggested_target()
    print(f"  suggested target: {t!r} ({pv.infer_task(t)})")
    for n in _words(pv.notes):
        print(f"  note: {n}")
    return EXIT_OK


def _inspect_importance(args) -> int:
    """``rwtool inspect DATA.csv --importance MODEL.rwm``: permutation importance per column."""
    mf = read_model(args.importance, **_model_limit(args))
    bar = ProgressBar(enabled=not (args.quiet or args.no_progress))
    old = bar.install_sigint()
    try:
        res, rows, ds = importance_on_file(mf, args.data, n_repeats=args.n_repeats,
                                           random_state=args.seed, scoring=args.scoring,
                                           callback=bar, **{k: v for k, v in _dialect_options(
                                               args).items() if k != "header"})
    except FitCancelled:
        raise CLIError("importance cancelled", exit_code=EXIT_CANCELLED) from None
    finally:
        bar.close()
        if old is not None:
            signal.signal(signal.SIGINT, old)
    if args.json:
        _emit_json({"command": "inspect", "model": mf.path, "data": args.data,
                    "n_rows": ds.n_samples, "scoring": res.scoring,
                    "baseline_score": res.baseline_score, "n_repeats": args.n_repeats,
                    "seed": args.seed, "share_meaning": res.share_meaning or None,
                    "importance": [vars(r) for r in rows], "notes": _words(ds.notes)})
        return EXIT_OK
    if args.quiet:
        return EXIT_OK
    print(f"{type(mf.estimator).__name__} on {os.path.basename(args.data)} "
          f"({ds.n_samples} rows): permutation importance, {args.n_repeats} shuffles per "
          f"column (seed {args.seed})")
    print(f"  {scoring_words(res.scoring, mf.estimator)} when the column is shuffled; score "
          f"on the rows as given: {_fmt(res.baseline_score)}")
    share = res.share is not None
    w = max(6, *(len(r.column) for r in rows))
    print(f"  {'column':<{w}}  {'mean':>10}  {'std':>10}" + ("  share" if share else ""))
    for r in rows:
        print(f"  {r.column:<{w}}  {r.mean:>10.4g}  {r.std:>10.4g}"
              + (f"  {r.share:.4f}" if share else ""))
    if share:
        print(f"  share: the model's own importance ({res.share_meaning})")
    for n in _words(ds.notes):
        print(f"  note: {n}")
    return EXIT_OK


# ============================================================================ samples

def cmd_samples(args) -> int:
    samples = list_samples()
    if args.copy:
        dest = Path(args.copy)
        dest.mkdir(parents=True, exist_ok=True)
        for s in samples:
            shutil.copyfile(s["path"], dest / s["file"])
            s["path"] = str((dest / s["file"]).resolve())
    if args.json:
        _emit_json({"command": "samples", "directory": str(samples_dir()), "samples": samples})
        return EXIT_OK
    print(f"bundled samples ({samples_dir()}):" if not args.copy
          else f"samples copied to {Path(args.copy).resolve()}:")
    w = max(len(s["name"]) for s in samples)
    for s in samples:
        print(f"  {s['name']:<{w}}  {s['task']:<10} {s['rows']:>5} rows x {s['columns']:<3} "
              f"target {s['target']!r}: {s['description']}")
    for s in (samples[0], samples[-1]):
        extra = "".join(f" --{k.replace('_', '-')} " + (" ".join(v) if isinstance(v, list)
                                                         else str(v))
                        for k, v in s.get("options", {}).items())
        print(f"example: rwtool train {s['path']} --target {s['target']}{extra}")
    return EXIT_OK


# ============================================================================ parser

_EPILOG = """examples:
  rwtool samples
  rwtool inspect data.csv
  rwtool train data.csv --target label --method rw --instantiation rwrelu -T 500 --out m.rwm
  rwtool train train.csv --target price --test test.csv --method rks --base fourier
  rwtool predict m.rwm new.csv --out predictions.csv
  rwtool evaluate m.rwm labelled.csv
  rwtool info m.rwm --json
  rwtool export-onnx m.rwm m.onnx
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rwtool", description="Random-feature learning from CSV files: train, evaluate, "
        "save and apply RKHS-weighting, random-kitchen-sink and related models.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"rwtool {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    common.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")

    def command(name, func, help, description, epilog):
        q = sub.add_parser(name, parents=[common], help=help, description=description,
                           epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
        q.set_defaults(func=func)
        return q

    p = command("train", cmd_train, "train a model on a CSV file",
                "Train a model on a CSV file and print its metrics.", """examples:
  rwtool train data.csv --target label
  rwtool train data.csv --target label --method rw --instantiation rwstumps -T 1000 \\
      --reg 1e-6 --sigma 0.5 --test-size 0.3 --seed 1 --out model.rwm
  rwtool train data.csv --target y --method rks --base fourier --sigma 2 --test test.csv
  rwtool train data.csv --target y --method greedy --param selector=eerf
methods: rw (RKHS weightings), rks (random kitchen sinks), rfsgd (averaged SGD on random
Fourier features), greedy (greedy multi-kernel features), bkernn (Brownian-kernel neural
network); rfsgd has no regressor. Options that a method does not take are refused; any other
estimator parameter can be set with --param NAME=VALUE.""")
    p.add_argument("data", help="training CSV file")
    p.add_argument("--target", "-y", required=True, help="target column (name or position)")
    p.add_argument("--method", "-m", default="rw", choices=list(METHODS),
                   help="model family (default: rw)")
    m = p.add_argument_group("model (defaults: the estimator's)")
    m.add_argument("--instantiation", help="RW instantiation: rwsign, rwexpsign, rwrelu, "
                   "rwexprelu, rwstumps (closed forms), or mc:DISTRIBUTION:KERNEL:BASE[:S] "
                   "with Monte Carlo features, e.g. mc:cauchy:gaussian:relu "
                   "(docs/INSTANTIATIONS.md)")
    m.add_argument("--base", help="RKS base predictor: sign, relu, stumps, fourier")
    m.add_argument("--solver", help="solver (rw: lstsq...; rks: ridge...)")
    m.add_argument("-T", "--n-features", dest="n_features", type=int,
                   help="number of random features T")
    m.add_argument("--reg", help="regularisation lambda, or auto (cross-validated); default: the "
                   "method's (RW/RKS: auto for lstsq/ridge, a measured value otherwise; greedy: "
                   "auto for regression, 1e-4 for classification)")
    m.add_argument("--sigma", help="sampling / kernel width sigma")
    m.add_argument("--gamma", help="kernel width gamma of the RKHS weighting")
    m.add_argument("--theta", help="target theta in (0, 1) that sets gamma of the Gaussian "
                   "kernels (rwsign, rwrelu, mc:...:gaussian:...); default: 0.1 for rwsign and "
                   "rwrelu, 0.5 for Monte Carlo Gaussian kernels (measured, "
                   "docs/bench/instantiation_defaults.md); the value used is reported as theta")
    m.add_argument("--kappa", help="target kappa > 1 that sets gamma of the exponential kernels "
                   "(rwexpsign, rwexprelu, mc:...:exponential:...); default 10 (measured, "
                   "docs/bench/instantiation_defaults.md)")
    m.add_argument("--kernel", help="kernel of Fourier features: gaussian, laplacian, cauchy")
    m.add_argument("--loss", help="loss, where the method has one: squared, logistic")
    m.add_argument("--seed", type=int, default=0, help="random_state of the model (default 0)")
    m.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="any other estimator parameter (repeatable)")
    s = p.add_argument_group("evaluation and output")
    ex = s.add_mutually_exclusive_group()
    ex.add_argument("--test-size", type=float, default=0.25,
                    help="holdout fraction (default 0.25; 0: train on every row)")
    ex.add_argument("--test", help="separate test CSV file (instead of a holdout)")
    s.add_argument("--split-seed", type=int, default=0, help="seed of the holdout split")
    s.add_argument("--out", "-o", help="write the model file here (.rwm)")
    s.add_argument("--no-posterior", action="store_true",
                   help="leave the posterior factor of an exact least-squares regressor out of "
                        "the model file (8 T^2 bytes: 8 MB at T = 1000); the loaded model "
                        "predicts the same values but gives no standard deviation")
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    s.add_argument("--stream", default="auto", choices=["auto", "yes", "no"],
                   help="read the file in blocks and learn from running sums, in memory "
                        "bounded by --block-mb and T (rw lstsq, rks ridge, lasso); auto: when "
                        "the file would not fit in memory (docs/SCALE.md)")
    s.add_argument("--block-mb", type=float, default=4.0,
                   help="MiB of CSV read at a time when streaming (default 4; memory is about "
                        "25 times this)")
    s.add_argument("--no-bounds", action="store_true",
                   help="skip the generalisation-bound values (they cost a T x T Gram matrix)")
    _add_data_options(p)

    p = command("predict", cmd_predict, "apply a model file to a CSV file",
                "Encode DATA.csv as the training data was and write one prediction per row "
                "(columns: row = line in the input file, prediction).",
                "examples:\n  rwtool predict model.rwm new.csv --out predictions.csv\n"
                "  rwtool predict model.rwm new.csv --decision")
    p.add_argument("model", help="model file written by 'rwtool train --out'")
    p.add_argument("data", help="CSV file with the training columns (the target may be absent)")
    p.add_argument("--out", "-o", help="write the predictions CSV here (default: stdout)")
    p.add_argument("--decision", action="store_true",
                   help="add the decision function value(s) of classifiers")
    _add_model_limit(p)
    _add_dialect_options(p)

    p = command("evaluate", cmd_evaluate, "score a model file on labelled CSV",
                "Error (classification, with the confusion matrix) or R^2/MSE (regression) of "
                "a model on a CSV file holding the target.",
                "example:\n  rwtool evaluate model.rwm test.csv --json")
    p.add_argument("model")
    p.add_argument("data")
    _add_model_limit(p)
    _add_dialect_options(p)

    p = command("info", cmd_info, "describe a model file",
                "Class, parameters, versions, preprocessing and training metrics of a model "
                "file (the file is loaded and checked as predict would).",
                "example:\n  rwtool info model.rwm")
    p.add_argument("model")
    _add_model_limit(p)

    p = command("export-onnx", cmd_export_onnx, "write a model file as an ONNX graph",
                "Write the prediction of a model file as a standard ONNX graph (opset 17), "
                "which any ONNX runtime runs without Python; a model trained on a CSV takes "
                "the CSV's columns as its inputs (docs/DEPLOY.md). Needs the onnx package "
                "(pip install \"rwtool[onnx]\").",
                "examples:\n  rwtool export-onnx model.rwm model.onnx\n"
                "  rwtool export-onnx model.rwm model32.onnx --dtype float32")
    p.add_argument("model", help="model file written by 'rwtool train --out'")
    p.add_argument("out", help="the ONNX file to write (replaced atomically)")
    p.add_argument("--dtype", choices=["float64", "float32"],
                   help="the graph's floats (default: the model's, float64)")
    _add_model_limit(p)

    p = command("inspect", cmd_inspect, "column types of a CSV file, or a model's importance",
                "Detected dialect, per-column type, missing count and range, and the "
                "suggested target. With --importance MODEL: the permutation importance of each "
                "column of the labelled CSV for that model (how much its score drops when the "
                "column is shuffled), and the model's exact share per column when it has one.",
                "examples:\n  rwtool inspect data.csv\n"
                "  rwtool inspect test.csv --importance model.rwm --n-repeats 10")
    p.add_argument("data")
    p.add_argument("--head", type=int, default=5, help="rows kept in the JSON preview")
    g = p.add_argument_group("importance")
    g.add_argument("--importance", metavar="MODEL",
                   help="model file: measure its permutation importance on DATA's rows")
    g.add_argument("--n-repeats", type=int, default=5,
                   help="shuffles per column (default 5)")
    g.add_argument("--seed", type=int, default=0, help="seed of the shuffles (default 0)")
    g.add_argument("--scoring", choices=list(SCORING_WORDS)[1:],
                   help="score to measure (default: accuracy, or R^2 for regression)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _add_model_limit(g)
    p.add_argument("--no-header", action="store_true", help="the file has no header line")
    _add_dialect_options(p)

    p = command("samples", cmd_samples, "list the bundled sample CSV files",
                "List the sample CSV files shipped with rwtool.",
                "examples:\n  rwtool samples\n  rwtool samples --copy ./data")
    p.add_argument("--copy", metavar="DIR", help="copy the sample files into DIR")
    return parser


# ============================================================================ entry point

def _one_line(exc: BaseException) -> str:
    """The error in one line; a data or report error phrases its fix with the CLI's options."""
    text = " ".join(phrase(exc, CLI_TERMS).split())
    return text or type(exc).__name__


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage, 130 cancelled)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:             # --help, --version, usage errors
        return int(exc.code or 0)

    def show_warning(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(f"rwtool: warning: {' '.join(str(message).split())}\n")

    code, err, kind = EXIT_OK, None, None
    old_show = warnings.showwarning
    warnings.showwarning = show_warning
    try:
        code = args.func(args)
    except (DataError, ModelFileError, CLIError) as exc:
        code, err, kind = getattr(exc, "exit_code", EXIT_ERROR), exc, type(exc).__name__
    except FitCancelled as exc:
        code, err, kind = EXIT_CANCELLED, exc, "FitCancelled"
    except KeyboardInterrupt:
        code, err, kind = EXIT_CANCELLED, "interrupted", "KeyboardInterrupt"
    except BrokenPipeError:
        # The reader went away (rwtool ... | head): stop quietly, and keep the interpreter's
        # final flush from complaining about the closed pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except (ValueError, TypeError, OSError, MemoryError, NumericalError, ImportError) as exc:
        # NumericalError: the fit diverged or a metric would come from non-finite scores; it
        # is raised before any model file is written. ImportError: an optional package
        # (onnx for export-onnx) is missing, and the message says how to install it
        code, err, kind = EXIT_ERROR, exc, type(exc).__name__
    except Exception as exc:              # a bug: still one line, with how to see more
        if os.environ.get("RWTOOL_DEBUG"):
            raise
        code, err, kind = EXIT_ERROR, f"internal error ({type(exc).__name__}: " \
                                      f"{_one_line(exc)}); rerun with RWTOOL_DEBUG=1 for " \
                                      f"details", type(exc).__name__
    finally:
        warnings.showwarning = old_show
    if err is not None:
        if os.environ.get("RWTOOL_DEBUG") and isinstance(err, BaseException):
            import traceback
            traceback.print_exception(err)
        msg = err if isinstance(err, str) else _one_line(err)
        if getattr(args, "json", False):
            payload = {"ok": False, "error": msg, "type": kind}
            if hasattr(err, "to_dict"):
                payload["detail"] = err.to_dict()
            _emit_json(payload)
        sys.stderr.write(f"rwtool: error: {msg}\n")
    return code


def run() -> None:
    """The ``rwtool`` command (and ``python -m rwtool``): :func:`main`, then :func:`exit_process`
    with its status."""
    exit_process(main())


def exit_process(code: int) -> None:
    """End the process with ``code`` once Python's own exit work is done, without the native
    libraries' teardown.

    The command's work is over when main returns, but an ordinary interpreter exit then
    finalizes Python and runs the C++ static destructors of the libraries it loaded while their
    threads may still be winding down: about 3 runs in 2,300 aborted there with "terminate
    called without an active exception" (exit 134) after a complete, correct result (the cause
    found: a pyarrow thread freeing CSV bytes asked for the GIL during finalization, which
    rwtool.data's exit hook now prevents; this ending stays as a second guard). Here Python's
    atexit handlers run (logging, temporary files), stdout and stderr are flushed, and
    ``os._exit`` ends the process, so no destructor runs and the status is the command's.
    """
    import atexit
    atexit._run_exitfuncs()                   # what Python's exit would run, in its order
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):         # a reader that went away, a closed stream
            pass
    os._exit(int(code))


if __name__ == "__main__":  # pragma: no cover
    run()
