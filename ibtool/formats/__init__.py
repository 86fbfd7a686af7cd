"""External file formats: one module per format, each a reader and/or a writer.

This package also holds the one place where ibtool touches a path a user named: `open_input`
and `read_input` for files it reads, `output_target`, `atomic_write`, `output_dir` and
`move_into` for what it writes. The rules (README "Files ibtool reads and writes"):

* an output replaces only a regular file (written to a temporary sibling and renamed, so a
  failure leaves the old file); a device, FIFO, socket or directory named as an output file is
  refused, naming it, and left as it is; a directory output must be a directory (or not exist);
* a symlink is followed: to a regular file for a file output (the file it points at is replaced,
  the link stays), to a directory for a directory output; a symlink to nothing or to anything
  else is refused;
* `-` is refused as an output (standard output carries the command's own report and --json);
* an input must be a regular file (or the directory a command reads): a FIFO would block for a
  writer that never comes, a device (/dev/zero) would be read forever, so both are refused;
* a path beyond the system's limits (a name over 255 bytes) is one line, with the path shortened.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from pathlib import Path

from ibtool.errors import InputError


def shown(path: str | Path) -> str:
    """A path as an error message shows it: whole, unless it is too long to read in one line."""
    s = str(path)
    return s if len(s) <= 160 else f"{s[:60]}...{s[-60:]} ({len(s):,} characters)"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISLNK, "a symlink"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _where(path, option: str | None) -> str:
    return f"{option} {shown(path)}" if option else shown(path)


def _os_error(path, option: str | None, e: OSError, doing: str = "") -> InputError:
    return InputError(f"{_where(path, option)}: {doing}{e.strerror or e}")


def output_target(path: str | Path, option: str | None = None, directory: bool = False) -> Path:
    """The path an output named `path` writes: itself, or the regular file (directory) a symlink
    leads to; nothing is written here. It must not exist yet or be a regular file (a directory,
    for a directory output), possibly through symlinks; anything else is an InputError naming the
    option and the path."""
    p = Path(path)
    if str(path) == "-":
        raise InputError(f"{_where(path, option)}: standard output is not an output file here (it carries the "
                         "command's report); name a file")
    want, word = (stat.S_ISDIR, "a directory") if directory else (stat.S_ISREG, "a regular file")
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p
    except OSError as e:  # ENAMETOOLONG, ENOTDIR (a parent is a file), ELOOP, EACCES
        raise _os_error(p, option, e, "cannot create directory: " if directory else "cannot write: ") from None
    target, via = p, ""
    if stat.S_ISLNK(st.st_mode):
        link = os.readlink(p)
        try:
            target = Path(os.path.realpath(p, strict=True))
            st = os.stat(target)
        except OSError:
            raise InputError(f"{_where(p, option)}: a symlink to {shown(link)}, which does not exist (ibtool follows "
                             f"a symlink only to {word}; nothing was written)") from None
        via = f"a symlink to {shown(target)}, "
    if not want(st.st_mode):
        why = "" if directory else ": ibtool replaces only regular files"
        raise InputError(f"{_where(p, option)}: {via}{_kind(st.st_mode)}, not {word}{why} (nothing was written)")
    return target


def output_dir(path: str | Path, option: str = "--out") -> Path:
    """Create (if needed) and return the absolute directory `path` (a symlink's directory); what
    is not a directory (a file, a FIFO, a device), a path under a file or not writable is an
    InputError naming the option, not a traceback."""
    path = output_target(path, option, directory=True).resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{option} {shown(path)}: cannot create directory: {e.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"{option} {shown(path)}: directory is not writable")
    return path


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", option: str | None = None, perm: int | None = None):
    """Write to a temporary sibling and rename it over the file on success, so a failure never
    leaves a partial file; `path` must be a regular file, a symlink to one, or new (output_target).
    `perm`: the file's mode bits (else the umask's); `option` names the path in errors."""
    path = output_target(path, option)
    tmp = path.with_name(path.name + ".tmp")
    fh = open(tmp, mode, encoding=None if "b" in mode else "utf-8")  # OSError: the caller says what it wrote
    try:
        yield fh
        fh.close()
        if perm is not None:
            os.chmod(tmp, perm)
        os.replace(tmp, path)
    except BaseException:
        fh.close()
        tmp.unlink(missing_ok=True)
        raise


def move_into(tmp: str | Path, out: Path) -> list[Path]:
    """Move every entry of the finished temporary directory `tmp` into the directory `out`,
    replacing ibtool's earlier outputs of the same names. Every destination is checked first (a
    file replaces a regular file, a directory a directory, each possibly through a symlink), so a
    FIFO or device where an output goes stops the move before anything is replaced."""
    import shutil
    moves = [(p, output_target(out / p.name, directory=p.is_dir())) for p in sorted(Path(tmp).iterdir())]
    for src, dest in moves:
        if src.is_dir() and dest.is_dir():
            shutil.rmtree(dest)
        os.replace(src, dest)
    return [out / src.name for src, _ in moves]


def _refuse_input(path, option: str | None, mode: int) -> InputError:
    return InputError(f"{_where(path, option)}: {_kind(mode)}, not a regular file: ibtool reads only regular files "
                      "(save the data to a file first)")


def check_input(path: str | Path, option: str | None = None, directory_ok: bool = True) -> None:
    """Refuse an input that names a FIFO (it blocks for a writer), a device (/dev/zero never ends)
    or a socket before anything is read; open_input refuses them too. A path that does not exist
    is left to the command, which says what it wanted there."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            raise _os_error(path, option, e) from None
        return  # the reader's open names the problem
    if not (stat.S_ISREG(st.st_mode) or (directory_ok and stat.S_ISDIR(st.st_mode))):
        raise _refuse_input(path, option, st.st_mode)


# The last input opened since the command started (cli.main clears it): an out-of-memory error names it.
READ: list[str] = []


def open_input(path: str | Path, binary: bool = False, option: str | None = None):
    """Open an input file for reading; a missing, unreadable or directory path, a FIFO, a device or
    a socket is an InputError naming it (the one-line message every reader gives). The file is
    opened without blocking and looked at, so a FIFO nobody writes to is refused, not waited for."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise _os_error(path, option, e, "cannot read: ") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{_where(path, option)}: cannot read: {os.strerror(errno.EISDIR)}")
        if not stat.S_ISREG(mode):
            raise _refuse_input(path, option, mode)
        os.set_blocking(fd, True)
        READ[:] = [str(path)]
        return os.fdopen(fd, "rb") if binary else os.fdopen(fd, encoding="utf-8", errors="replace")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: str | Path, binary: bool = False, option: str | None = None) -> str | bytes:
    """The whole of an input file (open_input's rules)."""
    with open_input(path, binary, option) as fh:
        return fh.read()


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
