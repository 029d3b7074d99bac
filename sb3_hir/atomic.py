"""Crash-safe file writing: collected data and run artefacts are never seen half-written.

Everything sb3-hir persists (DAgger round files and checkpoints, models, plots, tables) goes through a temporary
file in the target's directory that is flushed to disk and then renamed over the target with ``os.replace``,
which is atomic on POSIX and Windows. A crash leaves either the old file or the new one, never a torn one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = ["atomic_path", "atomic_write"]


def _fsync(path: Path, flags: int) -> None:
    try:
        fd = os.open(path, flags)
    except OSError:  # pragma: no cover - e.g. platforms without directory file descriptors
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    """The process umask: from /proc on Linux, else by setting it and restoring it at once (the portable way,
    which other threads could observe for an instant)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | os.PathLike[str], *, fsync: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; it replaces ``path`` only when the block finishes.

    The temporary name keeps ``path``'s suffix, because some writers (SB3's ``save``) add a suffix otherwise.
    It starts with a dot, so directory listings that skip hidden files never pick it up.

    :param fsync: also flush the file and its directory to the disk, so the file survives a power loss; without
        it the rename is still atomic and the file survives a crash of the process (``kill -9``), at a tenth of
        the cost (0.6 ms instead of 6 ms for a small file on the development machine).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=target.parent)
    # mkstemp makes the file 0600; the result is an ordinary output file, so it gets the mode open() would give
    # it (0666 minus the umask: 0644 by default), which lets other users of a shared machine read results.
    os.fchmod(fd, 0o666 & ~_umask())
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if fsync:
            _fsync(tmp, os.O_RDONLY)
        os.replace(tmp, target)
        if fsync:
            _fsync(target.parent, os.O_RDONLY)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object], *, fsync: bool = True) -> Path:
    """Call ``write`` on a binary file object whose content replaces ``path`` atomically (see :func:`atomic_path`)."""
    with atomic_path(path, fsync=fsync) as tmp, open(tmp, "wb") as f:
        write(f)
    return Path(path)
