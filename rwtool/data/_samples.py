"""The sample CSV files bundled with rwtool: where they are installed and what each one is.

``samples_dir`` finds the folder (a source checkout, a pip install, or $RWTOOL_SAMPLES);
``list_samples`` reads its samples.json manifest, with the ``read_csv`` options each file needs.
This module must not read or encode the CSV files themselves (rwtool.data does).
"""

from __future__ import annotations

import json
import os
import sysconfig
from pathlib import Path

from ._errors import DataError

__all__ = ["samples_dir", "list_samples"]


def samples_dir():
    """Folder of the bundled sample CSVs: $RWTOOL_SAMPLES, samples/ next to the rwtool package
    (a source checkout), or <prefix>/share/rwtool/samples where pip installs them (the
    environment's prefix, then the user scheme). Raises DataError when none holds them."""
    env = os.environ.get("RWTOOL_SAMPLES")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "samples")
    schemes = [None] + [s for s in (f"{os.name}_user", "posix_user", "nt_user")
                        if s in sysconfig.get_scheme_names()]
    for scheme in schemes:
        try:
            base = sysconfig.get_path("data", scheme) if scheme else sysconfig.get_path("data")
        except KeyError:
            continue
        c = Path(base) / "share" / "rwtool" / "samples"
        if c not in candidates:
            candidates.append(c)
    for c in candidates:
        if (c / "samples.json").is_file():
            return c
    raise DataError("the bundled samples were not found (looked in "
                    + ", ".join(str(c) for c in candidates) + ")",
                    hint="set RWTOOL_SAMPLES to the folder holding samples.json")


def list_samples() -> list[dict]:
    """The bundled samples from samples.json: name, file, path, target, task, rows, columns,
    description and ``options`` (the read_csv options the sample needs, e.g. columns to
    ignore), so ``read_csv(s["path"], s["target"], **s["options"])`` reads any of them."""
    d = samples_dir()
    try:
        manifest = json.loads((d / "samples.json").read_text(encoding="utf-8"))
        out = []
        for s in manifest["samples"]:
            s = dict(s)
            s["path"] = str(d / s["file"])
            s.setdefault("options", {})
            out.append(s)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"unreadable sample manifest ({exc})",
                        file=str(d / "samples.json")) from None
    return out
