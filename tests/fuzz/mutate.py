"""Mutations of real input files, drawn by hypothesis, for the bad-input suite.

A mutated input is a seed file (a real dump from fixtures/) and a short list of edits. Each edit
is a tuple of small integers, so hypothesis shrinks a failing input to the one or two edits that
matter, and the failing example printed is readable (which seed, which edit, where).

The edits are what a new user's file, a truncated copy or a tool of another version produce:
lines lost, repeated, swapped or moved; a number replaced by one beyond its field (0, -1, 255,
256, 0xc000, 2**32, 2**64, 5,000 digits, YAML's .inf ...); a file cut short; stray bytes (not UTF-8, NUL); a
token dropped; a quoted name emptied or unbalanced. JSON seeds also get values of the wrong type
and deep nesting.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"

# numbers beyond (or at the edge of) every field the readers see
EXTREMES = [b"0", b"1", b"-1", b"7", b"8", b"40", b"254", b"255", b"256", b"0xbfff", b"0xc000", b"0xffff",
            b"0x10000", b"100000000", b"4294967296", b"0x100000000", b"18446744073709551616",
            b"0x10000000000000000", b"99999999999999999999999999", b"9" * 5000, b"0x" + b"f" * 5000,
            b"nan", b"inf", b"-inf", b"1e309", b"0x", b"", b"00000000000000000000001", b".inf", b".nan"]
STRAY = [b"\xff\xfe", b"\x00", b"\t", b" ", b'"', b"[", b"]", b"(", b")", b"#", b"=", b":", b"{", b"}",
         b"\xc3\x28", b"\r", b"\n\n", b"lid ", b"[ext 1]", b"0x"]
_NUM = re.compile(rb"0x[0-9a-fA-F]+|\d+")
_QUOTED = re.compile(rb'"[^"\n]*"')

N_OPS = 12
edit = st.tuples(st.integers(0, N_OPS - 1), st.integers(0, 1 << 16), st.integers(0, 1 << 16),
                 st.integers(0, 1 << 16))


def apply(data: bytes, edits) -> bytes:
    """Apply `edits` (tuples from `edit`) to `data`, one after the other."""
    for op, a, b, c in edits:
        lines = data.split(b"\n")
        n = len(lines)
        i, j = a % n, b % n
        if op == 0:  # lose a line
            del lines[i]
        elif op == 1:  # repeat a line
            lines.insert(i, lines[i])
        elif op == 2:  # swap two lines
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:  # a number beyond its field
            nums = list(_NUM.finditer(lines[i]))
            if nums:
                m = nums[b % len(nums)]
                lines[i] = lines[i][:m.start()] + EXTREMES[c % len(EXTREMES)] + lines[i][m.end():]
        elif op == 4:  # cut short
            return b"\n".join(lines)[:(a * len(data)) >> 16]
        elif op == 5:  # stray bytes
            s = lines[i]
            k = b % (len(s) + 1)
            lines[i] = s[:k] + STRAY[c % len(STRAY)] + s[k:]
        elif op == 6:  # a line from elsewhere in the file, cut at a random point
            s = lines[j]
            lines.insert(i, s[:c % (len(s) + 1)])
        elif op == 7:  # drop a whitespace-separated token
            toks = lines[i].split()
            if toks:
                del toks[b % len(toks)]
                lines[i] = b" ".join(toks)
        elif op == 8:  # move a line
            s = lines.pop(i)
            lines.insert(j % max(len(lines), 1), s)
        elif op == 9:  # a quoted name emptied, or its closing quote lost
            qs = list(_QUOTED.finditer(lines[i]))
            if qs:
                m = qs[b % len(qs)]
                lines[i] = lines[i][:m.start()] + (b'""' if c % 2 else m.group(0)[:-1]) + lines[i][m.end():]
        elif op == 10:  # same number everywhere on a line (e.g. both ends of a cable)
            lines[i] = _NUM.sub(EXTREMES[c % len(EXTREMES)], lines[i], count=1 + b % 3)
        else:  # duplicate a block of lines at another place (records listed twice)
            k = 1 + c % 8
            lines[j:j] = lines[i:i + k]
        data = b"\n".join(lines)
    return data


def mutated(seeds: list[Path], max_edits: int = 4):
    """(seed path, edits, bytes) for one of `seeds`."""
    return st.tuples(st.sampled_from(seeds), st.lists(edit, min_size=1, max_size=max_edits)).map(
        lambda t: (t[0], t[1], apply(t[0].read_bytes(), t[1])))


# ------------------------------------------------------------------------------ JSON
_ODD = [float("nan"), float("inf"), -1, 0, 1, 2**64, "yes", "", None, True, False, [], {}, [1, 2],
        {"a": {}}, "../../../etc/passwd", "/nonexistent/plan.net", "\udcff"]


def _paths(x, here=()):
    yield here
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _paths(v, here + (k,))
    elif isinstance(x, list):
        for k, v in enumerate(x):
            yield from _paths(v, here + (k,))


def json_apply(data: bytes, edits) -> bytes:
    """JSON-aware edits: a value replaced by one of the wrong type, a key dropped, deep nesting;
    the rest falls through to the byte edits."""
    for op, a, b, c in edits:
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            data = apply(data, [(op, a, b, c)])
            continue
        paths = list(_paths(doc))
        p = paths[a % len(paths)]
        if op % 4 == 0 or not p:  # byte edits
            data = apply(data, [(op, a, b, c)])
            continue
        parent = doc
        for k in p[:-1]:
            parent = parent[k]
        if op % 4 == 1:
            parent[p[-1]] = _ODD[c % len(_ODD)]
        elif op % 4 == 2:
            del parent[p[-1]]
        else:  # nesting deeper than any parser's recursion limit
            depth = 1000 + (c % 4) * 20000
            parent[p[-1]] = "@@NEST@@"
            text = json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogateescape")
            data = text.replace(b'"@@NEST@@"', b"[" * depth + b"]" * depth)
            continue
        data = json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogateescape")
    return data


def mutated_json(seeds: list[Path], max_edits: int = 3):
    return st.tuples(st.sampled_from(seeds), st.lists(edit, min_size=1, max_size=max_edits)).map(
        lambda t: (t[0], t[1], json_apply(t[0].read_bytes(), t[1])))
