"""Digests of hdor's routing output, and the fixture of the digests recorded before issue 28 made
the engine and the reference faster: the tables must not change.

Each case is a dict of SHA-256 digests, one per part, so a failure names the part that changed:

* `tables`: every switch's LFT (by switch GUID; trailing "no route" entries dropped, so an
  OpenSM dump and the reference's arrays of another length digest alike);
* `dump`: the lines of opensm-hdor.dump (coordinates, spread, the degraded header);
* `sl2vl`: on a degraded KNS, the switch SL2VL rows with any VL other than 0;
* `path_sls`: on a degraded KNS, the reference's path SL of every CA-to-CA pair (the C side
  answers them through the SA; the ibsim tests compare those with the reference already).

The same digest for the C engine (from a run's OpenSM dumps) and the Python reference (from its
result) when both route the same fabric with the same LIDs.

Recording (only to extend the fixture with new cases; never to make a failing case pass):
`IBTOOL_RECORD_DIGESTS=1 pytest ...` writes the digests it computes into the fixture instead of
comparing them."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "hdor" / "table-digests.json"
NO_ROUTE = 255


def _sha(parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\n")
    return h.hexdigest()


def tables_digest(tables) -> str:
    def rows():
        for g in sorted(tables.lft):
            row = np.asarray(tables.lft[g], dtype=np.uint8)
            used = np.flatnonzero(row != NO_ROUTE)
            yield f"{g:016x}"
            yield row[:int(used[-1]) + 1 if len(used) else 0].tobytes()
    return _sha(rows())


def lines_digest(lines) -> str:
    return _sha(lines)


def sl2vl_digest(sl2vl, kinds=None) -> str:
    """Switch rows with a VL other than 0 (rows not listed are VL 0 for every SL)."""
    kinds = kinds if kinds is not None else getattr(sl2vl, "kind", {})
    rows = sorted((g, io, tuple(vls)) for g, t in sl2vl.items() if kinds.get(g, "Switch") == "Switch"
                  for io, vls in t.items() if any(vls))
    return _sha(f"{g:016x} {i} {o} {' '.join(map(str, v))}" for g, (i, o), v in rows)


def path_sls_digest(path_sls) -> str:
    return _sha(f"{s} {d} {sl}" for (s, d), sl in sorted(path_sls.items()))


def of_result(res, fabric) -> dict:
    """The digests of a reference result (hdor.compute)."""
    from ibtool.routing import hdor

    out = {"tables": tables_digest(res.tables), "dump": lines_digest(hdor.dump_lines(res, fabric))}
    if res.sl2vl is not None:
        out["sl2vl"] = sl2vl_digest(res.sl2vl)
        out["path_sls"] = path_sls_digest(res.path_sls)
    return out


def of_run(osm: Path) -> dict:
    """The digests of what the C engine had OpenSM program (a run's OpenSM dump directory)."""
    from ibtool.formats import lft, sl2vl

    dump = (osm / "opensm-hdor.dump").read_text().splitlines()
    out = {"tables": tables_digest(lft.read(osm / "opensm-lfts.dump")), "dump": lines_digest(dump)}
    if dump and " vls=" in dump[0]:  # a degraded KNS: hdor's SL2VL rows
        out["sl2vl"] = sl2vl_digest(sl2vl.read(osm / "opensm-sl2vl.dump"))
    return out


def of_tables(tables) -> dict:
    return {"tables": tables_digest(tables)}


_cache: dict | None = None


def _load() -> dict:
    global _cache
    if _cache is None:
        _cache = json.loads(FIXTURE.read_text())["cases"] if FIXTURE.exists() else {}
    return _cache


def recording() -> bool:
    return bool(os.environ.get("IBTOOL_RECORD_DIGESTS"))


def known(key: str) -> bool:
    return key in _load()


def check(key: str, got: dict) -> None:
    """Assert the digests of case `key` are the recorded ones (every recorded part)."""
    if recording():
        data = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {"cases": {}}
        old = data["cases"].get(key)
        # a recorded case is never rewritten: recording adds cases, it cannot hide a change
        assert old is None or all(got.get(p) == old[p] for p in old), f"{key}: differs from the recorded digests"
        data["cases"][key] = got
        data["cases"] = dict(sorted(data["cases"].items()))
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        tmp = FIXTURE.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        tmp.replace(FIXTURE)
        global _cache
        _cache = None
        return
    want = _load().get(key)
    assert want is not None, f"no recorded digests for {key!r} in {FIXTURE}"
    changed = [part for part in want if got.get(part) != want[part]]
    assert not changed, f"{key}: {', '.join(changed)} changed against the recorded digests"


def added_since(test: str) -> bool:
    """A test (id with its parameters) of which no case was recorded: added after the fixture."""
    return not any(k.startswith(f"c/{test}/") or k == f"c/{test}" for k in _load())


def current_test() -> str:
    """The running test's id (tests/...py::name[param]), a key prefix for its cases."""
    return os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
