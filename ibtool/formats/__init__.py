"""External file formats: one module per format, each a reader and/or a writer."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path


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
