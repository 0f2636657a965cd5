"""What every benchmark report carries and how it is written: the machine line, a results table
printed and saved, a marked section replaced in a docs page. Benchmarks only, not the package."""

import os
import platform
import re
from pathlib import Path


def machine() -> str:
    """CPU model, logical cores and Python version, for the header of a report."""
    try:
        with open("/proc/cpuinfo") as fh:
            model = next(l.split(":", 1)[1].strip() for l in fh if l.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor() or "unknown CPU"
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_results(text: str, path) -> None:
    """Print a results table and, when ``path`` is given, write it there (through a temporary
    file, so a run stopped while writing leaves the old page whole)."""
    print(text)
    if path:
        tmp = Path(f"{path}.tmp")
        tmp.write_text(text.rstrip("\n") + "\n")
        tmp.replace(path)


def write_section(path, name, text):
    """Replace (or append) the section between <!-- name:start --> and <!-- name:end -->."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.read_text() if path.exists() else "# Solver benchmarks (issue 8)\n"
    block = f"<!-- {name}:start -->\n{text}\n<!-- {name}:end -->"
    pat = re.compile(rf"<!-- {name}:start -->.*?<!-- {name}:end -->", re.S)
    if pat.search(old):
        new = pat.sub(lambda _m: block, old)
    else:
        new = old.rstrip() + "\n\n" + block + "\n"
    path.write_text(new)
