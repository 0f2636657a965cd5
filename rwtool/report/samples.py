"""The bundled sample files as an app lists them: rwtool.data's discovery, or why there are none.

The command line lets rwtool.data.list_samples raise (``rwtool samples`` exits with the
message); a menu needs the list or the reason it is empty. The discovery itself (a checkout's
samples/, <prefix>/share/rwtool/samples after a pip install, $RWTOOL_SAMPLES) lives in
rwtool.data only; this module must not look for files itself.
"""

from __future__ import annotations

from ..data import DataError, list_samples

__all__ = ["available_samples"]


def available_samples() -> tuple[list[dict], str | None]:
    """``(samples, None)``, or ``([], reason)`` when no bundled samples are installed."""
    try:
        return list_samples(), None
    except DataError as exc:
        return [], str(exc)
