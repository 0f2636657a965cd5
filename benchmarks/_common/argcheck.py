"""Command-line options shared by the benchmark scripts: split a comma-separated option, reject
names outside a fixed set with argparse's own error, the options of the app drivers. Benchmarks
only, not the package.
"""

from __future__ import annotations


def csv_list(text: str) -> list[str]:
    """The non-empty items of a comma-separated option value."""
    return [s for s in text.split(",") if s]


def check_choices(ap, values, choices, what: str) -> None:
    """``ap.error`` (exit 2) on the first of ``values`` not in ``choices``, listing them all."""
    for s in values:
        if s not in choices:
            ap.error(f"unknown {what} {s!r}; choose among {', '.join(dict.fromkeys(choices))}")


def app_run_args(ap, configs) -> None:
    """The options of the scripts that drive the app on a CSV file: the file, its target column,
    which of ``configs`` (the methods measured) to run and where the table goes."""
    ap.add_argument("--csv", required=True)
    ap.add_argument("--target", default=None)
    ap.add_argument("--only", nargs="*", default=list(configs), choices=list(configs))
    ap.add_argument("--out", default=None, help="markdown file for the table")
