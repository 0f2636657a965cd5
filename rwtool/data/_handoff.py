"""Bytes handed to pyarrow's multi-threaded readers, and a clean interpreter exit after them.

pyarrow.csv reads on its own threads, and the last thread to let go of a block's memory frees
it. Memory exported by a Python object (what ``pa.py_buffer`` wraps) is freed by pyarrow with
the GIL taken. When a pyarrow thread still holds such a block as the interpreter finalizes
(a script or command that ends right after a read, on a busy machine), its request for the GIL
makes Python end the thread (pthread_exit), the unwinding passes pyarrow's C++ destructor and
the C++ runtime calls std::terminate: the process aborts at exit (status 134, "terminate
called without an active exception") after its work is done. Every buffer handed to pyarrow
here is a fresh view that only pyarrow refers to, tracked by a weak reference; an atexit hook
waits, with the GIL released, until pyarrow's threads have let go of all of them.

pyarrow itself is imported when first used (:class:`Deferred`), not with rwtool: importing it
costs about 0.2-0.4 s that a command which reads no file (``rwtool --help``) must not pay.

This module must not read files or parse anything: it only hands bytes over.
"""

from __future__ import annotations

import atexit
import importlib
import time
import weakref

import numpy as np

__all__ = ["arrow_input", "held", "wait_for_release", "Deferred"]


class Deferred:
    """The module ``name``, imported when one of its names is first used; it then takes this
    object's place in the importing module's ``scope`` (its globals) under ``alias``, so
    later uses cost nothing more."""

    def __init__(self, name: str, scope: dict, alias: str):
        self._name, self._scope, self._alias = name, scope, alias

    def __getattr__(self, attr):
        module = importlib.import_module(self._name)
        self._scope[self._alias] = module
        return getattr(module, attr)


pa = Deferred("pyarrow", globals(), "pa")

_HELD: dict[int, weakref.ref] = {}     # id of a view pyarrow holds -> its weak reference
_EXIT_WAIT_S = 10.0                    # a thread releases a block within microseconds of
                                       # getting the GIL; this bounds a pathological case


def arrow_input(data) -> pa.BufferReader:
    """A pyarrow reader over ``data`` (bytes or a contiguous uint8 array), without a copy."""
    view = data.view() if isinstance(data, np.ndarray) else np.frombuffer(data, np.uint8)
    key = id(view)
    # The callback runs, with the GIL, on whichever thread frees the view last.
    _HELD[key] = weakref.ref(view, lambda _ref, key=key: _HELD.pop(key, None))
    return pa.BufferReader(pa.py_buffer(view))


def held() -> int:
    """How many buffers handed to pyarrow it has not released yet."""
    return len(_HELD)


def wait_for_release(timeout: float = _EXIT_WAIT_S) -> bool:
    """Wait until pyarrow's threads have released every buffer handed to them (True), at most
    ``timeout`` seconds (False). Sleeping releases the GIL, which those threads need."""
    deadline = time.monotonic() + timeout
    while _HELD:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)
    return True


atexit.register(wait_for_release)
