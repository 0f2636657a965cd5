"""A process's memory and a thread's wait for a core as Linux's /proc reports them, for the
benchmarks that measure the app's two processes. Reads only; returns NaN (or the value asked
for) where the file or a field is missing (not Linux, or the process has ended), so a sampler
never stops a benchmark."""

from __future__ import annotations

import os
import threading


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


class ThreadWait:
    """The calling thread's time runnable but waiting for a core so far (Linux's schedstat, its
    second field), read from a file kept open, in seconds; ``missing`` where there is none."""

    def __init__(self, missing: float = float("nan")):
        self.missing = missing
        try:
            self._fd = os.open(f"/proc/self/task/{threading.get_native_id()}/schedstat",
                               os.O_RDONLY)
        except (OSError, AttributeError):
            self._fd = None

    def seconds(self) -> float:
        if self._fd is None:
            return self.missing
        try:
            return int(os.pread(self._fd, 128, 0).split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return self.missing

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
