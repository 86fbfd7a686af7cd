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


def read_tagged_json(path: str | Path, fmt: str, what: str) -> dict:
    """A JSON object whose "format" is `fmt` (ibtool's own files: cabling.json, cable-ids.json);
    anything else is an InputError naming the file and `what` it should be."""
    import json
    with open_input(path) as fh:
        try:
            d = json.load(fh)
        except (json.JSONDecodeError, RecursionError) as e:
            raise InputError(f"not valid JSON: {getattr(e, 'msg', e)}", path=str(path)) from None
    if not isinstance(d, dict) or d.get("format") != fmt:
        raise InputError(f'not {what} (expected "format": "{fmt}")', path=str(path))
    return d


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
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"{option} {path}: directory is not writable")
    return path


# ------------------------------------------------------------------ InfiniBand field ranges
# Every reader checks a number against its field's range where it reads it (file:line), so no
# value beyond a field reaches an array size or a shift (a LID of 2**32 would allocate 96 GiB).
MAX_UNICAST_LID = 0xBFFF  # 0xC000..0xFFFE multicast, 0xFFFF permissive (IBA 4.1.3)
MAX_LMC = 7
MAX_PORT = 254  # port numbers are 8 bits and 255 is reserved; port 0 is a switch's management port
MAX_GUID = (1 << 64) - 1


def as_int(text: str | bytes, path: str | None = None, line: int | None = None, base: int = 10) -> int:
    """int(text) of a number a regex matched; one beyond Python's 4300-digit limit is an InputError."""
    try:
        return int(text, base)
    except ValueError:
        raise InputError(f"a number of {len(text)} digits", path=path, line=line) from None


def _check(value: int, lo: int, hi: int, what: str, path, line, fmt=str) -> int:
    if not lo <= value <= hi:
        shown = fmt(value) if value.bit_length() <= 128 else f"of {value.bit_length()} bits"
        raise InputError(f"{what} {shown} is outside {fmt(lo)}..{fmt(hi)}", path=path, line=line)
    return value


def check_lmc(value: int, path: str | None = None, line: int | None = None) -> int:
    return _check(value, 0, MAX_LMC, "LMC", path, line)


def check_lid(value: int, path: str | None = None, line: int | None = None, lmc: int = 0) -> int:
    """A unicast LID, 1..0xbfff; with an LMC its whole range lid..lid+2^lmc-1 must be unicast."""
    _check(value, 1, MAX_UNICAST_LID, "unicast LID", path, line, hex)
    check_lmc(lmc, path, line)
    if value + (1 << lmc) - 1 > MAX_UNICAST_LID:
        raise InputError(f"LID {value:#x} with LMC {lmc} runs past the last unicast LID {MAX_UNICAST_LID:#x}",
                         path=path, line=line)
    return value


def check_port(value: int, path: str | None = None, line: int | None = None, lo: int = 0,
               what: str = "port") -> int:
    return _check(value, lo, MAX_PORT, what, path, line)


def check_guid(value: int, path: str | None = None, line: int | None = None) -> int:
    return _check(value, 0, MAX_GUID, "GUID", path, line, lambda v: f"{v:#x}")
