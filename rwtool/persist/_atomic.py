"""Atomic file writes (model files, predictions, exports) and removal of their stale temporaries.

:func:`atomic_writer` writes ``.NAME.rwtool-HOST-PID-XXXXXXXX.tmp`` beside the target (HOST: a
hash of the machine's name, PID: the writing process), fsyncs it and renames it over the
target, so readers see the old file or the complete new one. A writer that is killed
(``kill -9``, power loss) cannot remove its temporary file; the next write into the same
folder does (:func:`remove_stale_temporaries`), but only files that are certainly dead
temporaries of rwtool: the name pattern, a regular file of this user, not locked -- every live
writer holds an exclusive ``flock`` on its temporary file until it is renamed, and the kernel
drops the lock of a killed process -- and either written on this machine by a process that is
gone (its pid no longer alive: removed at once, whatever its age) or untouched for
:data:`STALE_SECONDS` (another machine's, or a name without a pid). Where locks are not
available a file of a live or unknown writer must be a day old. :func:`removal_note` says
in a sentence what was removed (the CLI and the app show it).

This module must not know what is written; it only places bytes safely.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
import stat
import tempfile
import time
from contextlib import contextmanager

try:
    import fcntl
except ImportError:          # Windows: an open file cannot be deleted there anyway
    fcntl = None

__all__ = ["atomic_writer", "remove_stale_temporaries", "removal_note", "STALE_SECONDS"]

#: a temporary file untouched for this long whose writer holds no lock is a dead one's
STALE_SECONDS = 15 * 60
_UNLOCKABLE_STALE_SECONDS = 24 * 3600
_TAG = ".rwtool-"
#: ``.NAME.rwtool-HOST-PID-XXXXXXXX.tmp``; without HOST-PID, the names of rwtool before them
_OWN = re.compile(r"^\..+\.rwtool-(?:(?P<host>[0-9a-f]{8})-(?P<pid>[1-9][0-9]{0,9})-)?"
                  r"[a-z0-9_]{8}\.tmp$")
_log = logging.getLogger("rwtool.persist")


def _host_tag() -> str:
    """8 hex digits of the machine's name: the name may hold any character, the tag only
    needs to tell this machine from others sharing the folder."""
    name = socket.gethostname().encode("utf-8", "surrogateescape")
    return hashlib.sha256(name).hexdigest()[:8]


def _pid_gone(pid: int) -> bool:
    """Whether no process of this pid exists on this machine (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, OSError):
        return False
    return False


def _legacy(name: str) -> re.Pattern:
    # rwtool before the tag named its temporaries .NAME.XXXXXXXX.tmp: recognised only beside
    # the same target NAME
    return re.compile(r"^\." + re.escape(name) + r"\.[a-z0-9_]{8}\.tmp$")


def remove_stale_temporaries(directory, target_name: str | None = None, *,
                             now: float | None = None) -> list[str]:
    """Remove dead rwtool temporaries in ``directory``; returns the names removed.

    Never raises: a folder that cannot be listed, or a file that vanished or cannot be
    removed, is simply skipped (this runs before every atomic write).
    """
    now = time.time() if now is None else now
    legacy = _legacy(target_name) if target_name else None
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    host = _host_tag()
    for entry in entries:
        name = entry.name
        own = _OWN.match(name)
        if not (own or (legacy is not None and legacy.match(name))):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or (uid is not None and st.st_uid != uid):
            continue
        # a writer of this machine that is gone: removed at once (still only when unlocked,
        # in case its descriptor lives on in a child); any other: once it is STALE_SECONDS old
        gone = (own is not None and own["host"] == host and int(own["pid"]) != os.getpid()
                and _pid_gone(int(own["pid"])))
        if not gone and now - st.st_mtime < STALE_SECONDS:
            continue
        if _remove_if_unlocked(entry.path, now - st.st_mtime, gone):
            removed.append(name)
    if removed:
        _log.info("%s", removal_note(removed, directory))
    return removed


def removal_note(removed, directory=None) -> str | None:
    """A sentence for the user about the temporaries a write removed (None when none)."""
    if not removed:
        return None
    where = f" in {os.fspath(directory)}" if directory else ""
    shown = ", ".join(list(removed)[:3]) + (", ..." if len(removed) > 3 else "")
    return (f"removed {len(removed)} temporary file(s){where} left by earlier saves that were "
            f"killed ({shown})")


def _remove_if_unlocked(path: str, age: float, gone: bool = False) -> bool:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False                 # a live writer holds it
            except OSError:
                if age < _UNLOCKABLE_STALE_SECONDS and not gone:
                    return False
        elif age < _UNLOCKABLE_STALE_SECONDS and not gone:
            return False
        try:
            os.unlink(path)
        except OSError:
            return False
        return True
    finally:
        os.close(fd)


@contextmanager
def atomic_writer(path, mode: str = "wb", removed: list | None = None, **open_kwargs):
    """Open a temporary file next to ``path``; on success fsync it and rename it over ``path``.

    Readers see the old file or the complete new one, never a partial file; on error the
    temporary file is removed and ``path`` is untouched. Stale temporaries of earlier writes
    killed in that folder are removed first (:func:`remove_stale_temporaries`); their names
    are appended to ``removed`` when a list is given.
    """
    path = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"directory {directory} does not exist")
    cleaned = remove_stale_temporaries(directory, os.path.basename(path))
    if removed is not None:
        removed.extend(cleaned)
    name = os.path.basename(path)
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp",
                               prefix=f".{name}{_TAG}{_host_tag()}-{os.getpid()}-")
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:      # a file system without locks: the age rule protects us
                pass
        with os.fdopen(fd, mode, **open_kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        mode_bits = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o644
        os.chmod(tmp, mode_bits)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable (POSIX); harmless to skip where unsupported
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
