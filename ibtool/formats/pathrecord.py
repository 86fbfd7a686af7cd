"""Path SLs from `saquery -p` (infiniband-diags): the SA's PathRecords, one block each:

    PathRecord dump:
    		service_id..............0x0000000000000000
    		dlid....................20
    		slid....................5
    		...
    		sl......................0x6

Engines that spread routes over virtual lanes (dfsssp, lash, nue, torus-2QoS) hand each path its
SL through the SA; with the SL2VL tables that gives the VL of every hop. The result maps
(source LID, destination LID) to the SL.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ibtool.errors import InputError
from ibtool.formats import open_input

_FIELD = re.compile(r"^\s*(\w+)\.{2,}(\S+)\s*$")
# a record exactly as write() (so `ibtool.mad`, every `sim run --path-sls`) lays it out: a file of
# only those is read in bulk; anything else (saquery's own output: more fields) line by line
_LINES = (b"PathRecord dump:", b"\t\tdlid" + b"." * 20, b"\t\tslid" + b"." * 20, b"\t\tsl" + b"." * 22 + b"0x")
MAX_UNICAST_LID = 0xBFFF


class PathSLs(dict):
    """(slid, dlid) -> SL (0..15); `path` the file it came from."""

    path: str | None = None


class PathSLTable:
    """The same (slid, dlid) -> SL as sorted arrays (keys slid << 16 | dlid): what the route checks
    look up, millions of pairs at once (`lookup`), without a dict of 3 M tuples."""

    def __init__(self, slid: np.ndarray, dlid: np.ndarray, sl: np.ndarray, path: str | None):
        key = slid.astype(np.int64) << 16 | dlid.astype(np.int64)
        order = np.argsort(key, kind="stable")
        key, sl = key[order], np.asarray(sl, dtype=np.int8)[order]
        last = np.ones(len(key), dtype=bool)  # of a pair given twice the later record, as read()'s dict
        last[:-1] = key[1:] != key[:-1]
        self.keys, self.sls, self.path = key[last], sl[last], path

    @classmethod
    def of(cls, sls: dict) -> PathSLTable:
        pairs = np.array(list(sls), dtype=np.int64).reshape(-1, 2)
        return cls(pairs[:, 0], pairs[:, 1], np.fromiter(sls.values(), dtype=np.int8, count=len(sls)),
                   getattr(sls, "path", None))

    def __len__(self) -> int:
        return len(self.keys)

    def lookup(self, slid: np.ndarray, dlid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(SL of each pair, 0 where there is no record; whether there is one)."""
        key = slid.astype(np.int64) << 16 | dlid.astype(np.int64)
        at = np.minimum(np.searchsorted(self.keys, key), max(len(self.keys) - 1, 0))
        found = self.keys[at] == key if len(self.keys) else np.zeros(len(key), dtype=bool)
        return np.where(found, self.sls[at] if len(self.keys) else 0, 0).astype(np.int8), found

    def get(self, pair: tuple[int, int], default=None):
        sl, found = self.lookup(np.array([pair[0]]), np.array([pair[1]]))
        return int(sl[0]) if found[0] else default


def read_table(path: str | Path) -> PathSLTable:
    """read() as a PathSLTable (a file in write()'s layout never becomes a dict)."""
    path = str(path)
    arrays = _written_arrays(path)
    return PathSLTable(*arrays, path) if arrays is not None else PathSLTable.of(read(path))


def read(path: str | Path) -> PathSLs:
    path = str(path)
    arrays = _written_arrays(path)
    if arrays is not None:
        out = PathSLs()
        out.path = path
        out.update(zip(zip(arrays[0].tolist(), arrays[1].tolist()), arrays[2].tolist()))  # later records win
        return out
    out = PathSLs()
    out.path = path
    rec: dict[str, tuple[str, int]] = {}

    def close(ln: int) -> None:
        if not rec:
            return
        missing = [k for k in ("slid", "dlid", "sl") if k not in rec]
        if missing:
            raise InputError(f"PathRecord without {', '.join(missing)}", path=path, line=ln)
        vals = {}
        for k in ("slid", "dlid", "sl"):
            text, at = rec[k]
            try:
                vals[k] = int(text, 0)
            except ValueError:
                raise InputError(f"{k} {text!r} is not a number", path=path, line=at) from None
        if not 0 <= vals["sl"] <= 15:
            raise InputError(f"SL {vals['sl']} out of range 0..15", path=path, line=rec["sl"][1])
        for k in ("slid", "dlid"):
            if not 0 <= vals[k] <= MAX_UNICAST_LID:
                raise InputError(f"{k} {vals[k]} out of the unicast range", path=path, line=rec[k][1])
        if vals["slid"] and vals["dlid"]:  # the SA pads a table with empty records (LID 0)
            out[(vals["slid"], vals["dlid"])] = vals["sl"]
        rec.clear()

    fh = open_input(path)
    ln = 0
    with fh:
        for ln, raw in enumerate(fh, 1):
            s = raw.strip()
            if not s or s.startswith(("ibwarn", "#")):
                continue
            if s == "PathRecord dump:":
                close(ln)
                continue
            m = _FIELD.match(raw)
            if m and m.group(1) in ("slid", "dlid", "sl"):
                rec[m.group(1)] = (m.group(2), ln)
            elif not m:
                raise InputError(f"unrecognised line {s[:60]!r} (not `saquery -p` output?)", path=path, line=ln)
    close(ln)
    if not out:
        raise InputError("no PathRecords with LIDs found (not `saquery -p` output?)", path=path)
    return out


def _written_arrays(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """read()'s records, as (slid, dlid, sl) arrays in file order, for a file entirely in write()'s
    layout, from numpy over its bytes (3 M pairs of a KNS 12^3 in about a second, not the ~20 s of
    the line-by-line reader); None for any other file (another layout, a number out of range, no
    record with LIDs), which read() then reads line by line, with its errors."""
    with open_input(path, binary=True) as fh:
        arr = np.frombuffer(fh.read(), dtype=np.uint8)
    nl = np.flatnonzero(arr == 10)
    if not len(nl) or len(nl) % 4 or nl[-1] != len(arr) - 1:
        return None
    start = np.concatenate(([0], nl[:-1] + 1)).reshape(-1, 4)
    length = nl.reshape(-1, 4) - start
    fixed = [len(t) for t in _LINES]
    # lines 1 and 2: the prefix and 1..5 digits (a LID is at most 0xbfff = 49151); line 3: one hex digit
    if ((length[:, 0] != fixed[0]).any() or (length[:, 3] != fixed[3] + 1).any()
            or (length[:, 1:3] <= np.array(fixed[1:3])).any() or (length[:, 1:3] > np.array(fixed[1:3]) + 5).any()):
        return None
    # every fixed byte compared in three gathers of whole runs (one per record each), by chunks:
    # the record's first line with the dlid prefix, the slid prefix, the sl line up to its digit
    runs = ((0, _LINES[0] + b"\n" + _LINES[1]), (2, _LINES[2]), (3, _LINES[3]))
    step = 1 << 18
    for k, text in runs:
        want = np.frombuffer(text, dtype=np.uint8)
        view = np.lib.stride_tricks.sliding_window_view(arr, len(want))
        for i in range(0, len(start), step):
            if (view[start[i:i + step, k]] != want).any():
                return None
    lids = []
    five = np.lib.stride_tricks.sliding_window_view(arr, 5)
    for k in (1, 2):
        digits = length[:, k] - fixed[k]
        c = five[start[:, k] + fixed[k]].astype(np.int64) - 0x30  # up to 5 bytes: the digits, then "\n\t..."
        has = np.arange(5)[None, :] < digits[:, None]
        if (((c < 0) | (c > 9)) & has).any() or ((c[:, 0] == 0) & (digits > 1)).any():
            return None  # not a number, or a leading zero: read() says "not a number"
        val = np.zeros(len(c), dtype=np.int64)
        for j in range(5):
            val = np.where(has[:, j], val * 10 + c[:, j], val)
        if val.max() > MAX_UNICAST_LID:
            return None
        lids.append(val)
    c = arr[start[:, 3] + fixed[3]].astype(np.int64)
    sl = np.where(c >= 0x61, c - 0x61 + 10, c - 0x30)
    if ((sl < 0) | (sl > 15) | ((c > 0x39) & (c < 0x61))).any():
        return None
    dl, sr = lids
    keep = (sr != 0) & (dl != 0)  # the SA pads a table with empty records (LID 0)
    if not keep.any():
        return None
    return sr[keep], dl[keep], sl[keep]


def write(sls: dict, path: str | Path) -> None:
    """(SLID, DLID) -> SL as `saquery -p` prints PathRecords (the fields the reader takes), by
    destination then source LID."""
    from ibtool.formats import atomic_write
    with atomic_write(path) as fh:
        for (s, d) in sorted(sls, key=lambda k: (k[1], k[0])):
            fh.write(f"PathRecord dump:\n\t\tdlid....................{d}\n\t\tslid....................{s}\n"
                     f"\t\tsl......................{sls[(s, d)]:#x}\n")
