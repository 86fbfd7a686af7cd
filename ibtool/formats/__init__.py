"""External file formats: one module per format, each a reader and/or a writer."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from ibtool.errors import InputError


def open_input(path: str | Path, binary: bool = False):
    """Open an input file for reading; a missing, unreadable or directory path is an InputError
    naming it (the one-line message every reader gives)."""
    try:
        if binary:
            return open(path, "rb")
        return open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=str(path)) from None


@contextmanager
def atomic_write(path: str | Path, mode: str = "w"):
    """Write to PATH.tmp and rename on success, so a failure never leaves a partial file."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    fh = open(tmp, mode, encoding=None if "b" in mode else "utf-8")
    try:
        yield fh
        fh.close()
        os.replace(tmp, path)
    except BaseException:
        fh.close()
        tmp.unlink(missing_ok=True)
        raise


def output_dir(path: str | Path, option: str = "--out") -> Path:
    """Create (if needed) and return the absolute directory `path`; an unusable path (under a
    file, not writable) is an InputError naming the option, not a traceback."""
    path = Path(path).resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{option} {path}: cannot create directory: {e.strerror}") from None
    return path
