"""A process's memory as Linux's /proc reports it, for the benchmarks that measure the app's
two processes. Reads only; returns NaN where the file or a field is missing (not Linux, or the
process has ended), so a sampler never stops a benchmark."""

from __future__ import annotations


def proc_mb(pid: int | str, filename: str, *keys: str) -> tuple[float, ...]:
    """The fields ``keys`` (e.g. ``"VmRSS"`` of ``status``, ``"Pss"`` of ``smaps_rollup``) of
    ``/proc/<pid>/<filename>`` in MB, in the order asked; NaN for one that is not there."""
    out = {}
    try:
        with open(f"/proc/{pid}/{filename}") as fh:
            for line in fh:
                key = line.split(":", 1)[0]
                if key in keys:
                    out[key] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return tuple(out.get(k, float("nan")) for k in keys)
