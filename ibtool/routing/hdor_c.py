"""hdor's C engine on a discovered fabric, without OpenSM: the offline front end of
opensm_plugin (libhdorcore.so, opensm_plugin/hdor_offline.h) through ctypes.

    res = hdor_c.compute(fabric)                               # as hdor.compute, in C
    res = hdor_c.compute(now, baseline=complete)               # the degraded pass after a fault
    res.tables, res.sl2vl, res.path_sls, res.dump_lines

The same core the plugin runs inside OpenSM (docs/plugin.md, "The offline front end"): one
`Engine` remembers the KNS across passes as a long-running OpenSM does, so routing the complete
fabric and then the fabric of now gives the tables, SL2VL rows and path SLs the plugin programs
after that fault. For many failure sets of one fabric (what-if), load it once and ask
`Engine.route_failures(nodes, links)` per set: the fault-free state stays in C, nothing is parsed
or copied again.

The library is found as `$IBTOOL_HDOR_CORE`, else beside the sources (`make -C opensm_plugin`,
`ibtool plugin build`), else on the loader's path (a package's).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ibtool.errors import EnvironmentProblem
from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.formats.lft import Tables
from ibtool.formats.pathrecord import PathSLs
from ibtool.formats.sl2vl import SL2VL
from ibtool.errors import NotFamily
from ibtool.routing.hdor_result import _Declined, not_kns, spread_summary

LIB = "libhdorcore.so"
SOURCE_DIR = Path(__file__).resolve().parents[2] / "opensm_plugin"
# the decline codes of docs/plugin.md "Log lines" that mean "this KNS, but not routable": no other
# pass is tried (the Python reference's _Declined)
KNS_DECLINES = {0x30, 0x31, 0x32, 0x33}


class Declined(NotFamily):
    """The C engine declined the pass; `code` is its HDxx code (docs/plugin.md "Log lines")."""

    def __init__(self, reason: str, code: int):
        NotFamily.__init__(self, "hdor", "KNS", reason)  # not super(): _DeclinedKNS's MRO has _Declined next
        self.code = code


class _DeclinedKNS(Declined, _Declined):
    pass


def library_path() -> Path | None:
    """libhdorcore.so: $IBTOOL_HDOR_CORE, the one built beside the sources, or the loader's."""
    env = os.environ.get("IBTOOL_HDOR_CORE")
    if env:
        return Path(env)
    built = SOURCE_DIR / LIB
    if built.is_file():
        return built
    found = ctypes.util.find_library("hdorcore")
    return Path(found) if found else None


_lib = None
_U8, _U16, _U32, _U64 = (ctypes.POINTER(t) for t in (ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32,
                                                        ctypes.c_uint64))


def _load():
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    if path is None:
        raise EnvironmentProblem(f"the hdor C engine ({LIB}) is not built: run `ibtool plugin build` "
                                 f"(make -C opensm_plugin), or set IBTOOL_HDOR_CORE")
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise EnvironmentProblem(f"cannot load the hdor C engine {path}: {e}") from None
    h = ctypes.c_void_p
    sig = {
        "hdor_off_new": (h, [ctypes.c_uint]),
        "hdor_off_free": (None, [h]),
        "hdor_off_fabric": (ctypes.c_int, [h, ctypes.c_uint32, _U8, _U8, _U64, ctypes.POINTER(ctypes.c_char_p)]),
        "hdor_off_links": (ctypes.c_int, [h, ctypes.c_uint32, _U32, _U8, _U32, _U8]),
        "hdor_off_lids": (ctypes.c_int, [h, ctypes.c_uint32, _U32, _U8, _U16, _U8, _U64]),
        "hdor_off_description": (ctypes.c_int, [h, ctypes.c_char_p]),
        "hdor_off_fail": (ctypes.c_int, [h, ctypes.c_uint32, ctypes.c_uint32, _U32, ctypes.c_uint32, _U32, _U8]),
        "hdor_off_repair": (None, [h]),
        "hdor_off_route": (ctypes.c_int, [h, ctypes.c_char_p]),
        "hdor_off_reason": (ctypes.c_char_p, [h, ctypes.POINTER(ctypes.c_int)]),
        "hdor_off_log": (ctypes.c_char_p, [h]),
        "hdor_off_summary": (ctypes.c_int, [h, _U32, ctypes.POINTER(ctypes.c_double)]),
        "hdor_off_lft": (_U8, [h, _U32]),
        "hdor_off_here": (ctypes.c_int, [h, _U8]),
        "hdor_off_write_lft": (ctypes.c_int, [h, ctypes.c_int, _U64, ctypes.c_uint32]),
        "hdor_off_path_sls": (ctypes.c_uint32, [h, ctypes.POINTER(_U64), ctypes.POINTER(_U8),
                                                ctypes.POINTER(_U64), _U32]),
        "hdor_off_sl2vl": (ctypes.c_uint32, [h, ctypes.POINTER(_U64), ctypes.POINTER(_U64), ctypes.POINTER(_U8)]),
        "hdor_off_changed": (ctypes.c_uint32, [h, ctypes.POINTER(_U32), ctypes.POINTER(_U32)]),
        "hdor_off_incremental": (None, [h, ctypes.c_int]),
        "hdor_off_paths": (_U32, [h]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    _lib = lib
    return lib


def _ptr(a: np.ndarray, t):
    return a.ctypes.data_as(t)


@dataclass
class CResult:
    """What a pass of the C engine gives, with the names of the Python reference's HdorResult
    where they mean the same (ibtool.routing.hdor_result). The roles, coordinates and spread are
    read from the coordinates dump when first asked (none with `route_failures(dump=False)`)."""
    k: int
    n: int
    s: int
    dump_lines: list[str]
    lids: int = 0
    vls: int = 1
    faults: dict = field(default_factory=dict)
    extra_hops: dict = field(default_factory=dict)
    degraded: bool = False
    log: str = ""
    # a degraded pass's pairs with an SL above 0 (keys dlid << 16 | source base LID, their SLs) and
    # the keys of the pairs not delivered: every other pair has SL 0 (path_sls spells them all out)
    detour_sls: tuple | None = None
    _fabric: Fabric | None = field(default=None, repr=False)
    _parsed: dict | None = field(default=None, repr=False)
    _tables: Tables | None = field(default=None, repr=False)
    _make_tables: object = field(default=None, repr=False)
    _raw: tuple | None = field(default=None, repr=False)  # the engine's tables copied out, their stride
    _sl2vl: SL2VL | None = field(default=None, repr=False)
    _make_sl2vl: object = field(default=None, repr=False)
    _path_sls: PathSLs | None = field(default=None, repr=False)
    _make_path_sls: object = field(default=None, repr=False)
    _changed: tuple | None = field(default=None, repr=False)

    @property
    def path_sls(self) -> PathSLs | None:
        """A degraded pass's SL of every CA-to-CA pair (built when first asked: millions of pairs on
        a large fabric, which a what-if loop over failure sets rarely wants)."""
        if self._path_sls is None and self._make_path_sls is not None:
            self._path_sls, self._make_path_sls = self._make_path_sls(), None
        return self._path_sls

    @property
    def tables(self) -> Tables:
        """Every switch's table (read from the engine when first asked: the command line writes
        the LFT file from C and never needs them)."""
        if self._tables is None:
            self._tables, self._make_tables, self._raw = self._make_tables(self._raw), None, None
        return self._tables

    @property
    def sl2vl(self) -> SL2VL | None:
        """A degraded pass's SL2VL rows (built when first asked)."""
        if self._sl2vl is None and self._make_sl2vl is not None:
            self._sl2vl, self._make_sl2vl = self._make_sl2vl(), None
        return self._sl2vl

    @property
    def changed(self) -> tuple[np.ndarray, np.ndarray]:
        """The entries a degraded pass recomputed (its affected entries, docs/hdor.md section 6):
        (switch node indices, LIDs), by LID then node. Every other entry of a switch that is there
        is the fault-free table's, or 255 for a LID whose port is gone; empty after a complete
        pass."""
        return self._changed if self._changed is not None else (np.zeros(0, np.uint32), np.zeros(0, np.uint32))

    def _dump(self) -> dict:
        if self._parsed is None:
            self._parsed = _parse_dump(self.dump_lines, self._fabric)
        return self._parsed

    role = property(lambda self: self._dump()["role"], doc="every node's role word (hca when not listed)")
    dim = property(lambda self: self._dump()["dim"], doc="indirect switch -> its dimension")
    coords = property(lambda self: self._dump()["coords"], doc="node -> its coordinates in the dump")
    spread = property(lambda self: self._dump()["spread"], doc="(router, dim) -> {port: LIDs}")
    routers = property(lambda self: self._dump()["routers"])
    switches = property(lambda self: self._dump()["switches"])
    hcas = property(lambda self: self._dump()["hcas"])

    def spread_summary(self) -> dict:
        return spread_summary(self.spread)


def _parse_dump(lines: list[str], f: Fabric) -> dict:
    """The roles, dimensions, coordinates and spread lines of a coordinates dump (docs/hdor.md
    section 5), by the fabric's node indices."""
    out = {"role": ["hca"] * f.num_nodes, "dim": {}, "coords": {}, "spread": {}, "routers": [], "switches": [],
           "hcas": []}
    by_guid = {g: i for i, g in enumerate(f.guids)}
    for ln in lines[1:]:
        m = _NODE.match(ln)
        if m:
            x = by_guid[int(m.group(2), 16)]
            out["role"][x] = m.group(1)
            out["coords"][x] = tuple(int(v) for v in m.group(4).split(",")) if m.group(4) else ()
            out[m.group(1) + "s" if m.group(1) != "switch" else "switches"].append(x)
            if m.group(3) is not None:
                out["dim"][x] = int(m.group(3))
            continue
        m = _SPREAD.match(ln)
        if m:
            out["spread"][(by_guid[int(m.group(1), 16)], int(m.group(2)))] = {
                int(p): int(c) for p, c in (x.split(":") for x in m.group(3).split(","))}
    return out


_NODE = re.compile(r'^(router|switch|hca) +0x([0-9a-f]{16}) (?:dim=(\d+) )?\[([0-9,]*)\] ')
_SPREAD = re.compile(r"^spread 0x([0-9a-f]{16}) dim=(\d+) ports=(\S+)$")
_SIGHT = re.compile(r"identified at first sight: (\d+) router\(s\), (\d+) indirect switch\(es\), (\d+) router "
                    r"cable\(s\) missing")


class Engine:
    """One C engine (it remembers the KNS across passes) and the fabric it routes. incremental=False:
    each degraded pass looks at every LID and pair and writes whole tables, as before issue 39 (the
    same results, slower: tests compare the two)."""

    def __init__(self, vls: int = 8, incremental: bool = True):
        self._lib = _load()
        self._h = self._lib.hdor_off_new(vls)
        if not self._h:
            raise MemoryError("hdor_off_new")
        self._lib.hdor_off_incremental(self._h, int(incremental))
        self.fabric: Fabric | None = None
        self._down: set = set()  # the cable ends of route_failures
        self._last = None  # a weak reference to the last pass's result

    def _settle(self) -> None:
        """The last result's tables copied out before the engine's are written over (unless nothing
        holds that result any more), as one block: the Tables are built when first asked."""
        last = self._last() if self._last is not None else None
        if last is not None and last._tables is None and last._raw is None:
            stride = ctypes.c_uint32(0)
            p = self._lib.hdor_off_lft(self._h, ctypes.byref(stride))
            nsw = int(np.count_nonzero(np.asarray(self.fabric.types) == SWITCH))
            last._raw = (np.ctypeslib.as_array(p, shape=(nsw * stride.value,)).copy(), stride.value) \
                if p and nsw else (np.zeros(0, np.uint8), 0)
        self._last = None

    def close(self) -> None:
        self._settle()
        if self._h:
            self._lib.hdor_off_free(self._h)
            self._h = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        # unreachable, and so is the last result (its lazy parts hold the engine): nothing to read
        # out (which at interpreter exit could no longer import numpy), only the C side to free
        if getattr(self, "_h", None):
            self._lib.hdor_off_free(self._h)
            self._h = None

    def _check(self, rc: int, what: str) -> None:
        if rc == -2:
            code = ctypes.c_int(0)
            reason = self._lib.hdor_off_reason(self._h, ctypes.byref(code)).decode(errors="replace")
            if reason == "out of memory":
                raise MemoryError(f"hdor C engine: {what}: out of memory")
            raise ValueError(f"hdor C engine: {what}: {reason}")

    def load(self, f: Fabric) -> None:
        """Hand the fabric (nodes, cables, LIDs) to the engine; what it remembers stays."""
        self._settle()
        nn = f.num_nodes
        types = np.asarray(f.types, dtype=np.uint8)
        nports = np.asarray(f.nports, dtype=np.uint8)
        guids = np.asarray(f.guids, dtype=np.uint64)
        names = (ctypes.c_char_p * max(nn, 1))(*[s.encode() for s in f.names])
        self._check(self._lib.hdor_off_fabric(self._h, nn, _ptr(types, _U8), _ptr(nports, _U8),
                                              _ptr(guids, _U64), names), "fabric")
        a = np.asarray(f.link_a, dtype=np.uint32)
        b = np.asarray(f.link_b, dtype=np.uint32)
        pa = np.asarray(f.link_pa, dtype=np.uint8)
        pb = np.asarray(f.link_pb, dtype=np.uint8)
        self._check(self._lib.hdor_off_links(self._h, f.num_links, _ptr(a, _U32), _ptr(pa, _U8), _ptr(b, _U32),
                                             _ptr(pb, _U8)), "links")
        keys = list(f.port_lids)
        node = np.asarray([x for x, _ in keys], dtype=np.uint32)
        port = np.asarray([p for _, p in keys], dtype=np.uint8)
        lid = np.asarray([f.port_lids[k][0] for k in keys], dtype=np.uint16)
        lmc = np.asarray([f.port_lids[k][1] for k in keys], dtype=np.uint8)
        pg = np.asarray([f.port_guid(x, p) for x, p in keys], dtype=np.uint64)
        self._check(self._lib.hdor_off_lids(self._h, len(keys), _ptr(node, _U32), _ptr(port, _U8), _ptr(lid, _U16),
                                            _ptr(lmc, _U8), _ptr(pg, _U64)), "LIDs")
        self.fabric = f

    def describe(self, path: Path | None) -> None:
        """A description (hdor.conf) the engine reads at its next pass."""
        self._lib.hdor_off_description(self._h, str(path or "").encode())

    def route(self, dump: Path | None | bool = None, baseline: Fabric | None = None) -> CResult:
        """One pass over the loaded fabric (raises Declined with the engine's code and reason).
        dump: where the coordinates dump goes (None: a temporary file, read back); False: none is
        written (the result has no dump lines, roles, coordinates or spread)."""
        self._settle()
        if dump is False:
            rc = self._lib.hdor_off_route(self._h, None)
            self._declined(rc)
            return self._result([], baseline)
        own = dump is None
        tmp = None
        if own:
            tmp = tempfile.NamedTemporaryFile(prefix="hdor-", suffix=".dump", delete=False)
            tmp.close()
            dump = Path(tmp.name)
        try:
            rc = self._lib.hdor_off_route(self._h, str(dump).encode())
            self._declined(rc)
            lines = dump.read_text().splitlines()
        finally:
            if tmp is not None:
                os.unlink(tmp.name)
        return self._result(lines, baseline)

    def _declined(self, rc: int) -> None:
        self._check(rc, "route")
        if rc < 0:
            code = ctypes.c_int(0)
            reason = self._lib.hdor_off_reason(self._h, ctypes.byref(code)).decode(errors="replace")
            cls = _DeclinedKNS if code.value in KNS_DECLINES else Declined
            raise cls(reason, code.value)

    def route_failures(self, nodes=(), links=(), sm: int | None = None, dump: Path | None | bool = None) -> CResult:
        """What-if: the loaded fabric with `nodes` and `links` ((node, port) of either end) failed,
        routed against the KNS the engine remembers; what the SM's node (`sm`) no longer reaches
        goes too. The fabric is repaired after. The pass recomputes only what the failures touch
        (docs/plugin.md, "The degraded pass"); `dump=False` skips the coordinates dump (the roles
        and coordinates are the fault-free pass's for the nodes still there), and the result's
        `changed` lists the entries recomputed."""
        nn = np.asarray(list(nodes), dtype=np.uint32)
        ln = np.asarray([x for x, _ in links], dtype=np.uint32)
        lp = np.asarray([p for _, p in links], dtype=np.uint8)
        self._check(self._lib.hdor_off_fail(self._h, 0xFFFFFFFF if sm is None else sm, len(nn), _ptr(nn, _U32),
                                            len(ln), _ptr(ln, _U32), _ptr(lp, _U8)), "failures")
        f = self.fabric
        self._down = {(x, p) for x, p in links} | {f.peer(x, p) for x, p in links if f.peer(x, p)}
        try:
            return self.route(dump)
        finally:
            self._lib.hdor_off_repair(self._h)
            self._down = set()

    def matrix(self, width: int) -> np.ndarray:
        """The last pass's tables as one matrix, a row per switch of the loaded fabric by node index
        (a failed switch's row as the engine left it), `width` LIDs: a view of the engine's buffer,
        valid until the next pass, when the buffer is that wide (else a copy, 255 past its width).
        For a loop over failure sets that reads the tables, not `CResult.tables`' dict of rows."""
        stride = ctypes.c_uint32(0)
        p = self._lib.hdor_off_lft(self._h, ctypes.byref(stride))
        nsw = int(np.count_nonzero(np.asarray(self.fabric.types) == SWITCH))
        if not p or not nsw or not stride.value:
            return np.full((nsw, width), 255, dtype=np.uint8)
        buf = np.ctypeslib.as_array(p, shape=(nsw * stride.value,)).reshape(nsw, stride.value)
        if stride.value >= width:
            return buf[:, :width]
        out = np.full((nsw, width), 255, dtype=np.uint8)
        out[:, :stride.value] = buf
        return out

    def write_lft(self, path: Path, port_guids: dict[int, int]) -> None:
        """The last pass's tables as OpenSM's file engine reads them, byte for byte what
        formats.lft.write_file_engine writes of them (in C: 43 M lines on KNS 16^3)."""
        from ibtool.formats import atomic_write
        top = max(port_guids, default=0)
        pg = np.zeros(top + 1, dtype=np.uint64)
        for lid, g in port_guids.items():
            pg[lid] = g
        with atomic_write(path, "wb") as fh:
            fh.flush()
            if self._lib.hdor_off_write_lft(self._h, fh.fileno(), _ptr(pg, _U64), top + 1):
                err = ctypes.get_errno() or 5
                raise OSError(err, os.strerror(err), str(path))

    @property
    def log(self) -> str:
        return self._lib.hdor_off_log(self._h).decode(errors="replace")

    def _result(self, lines: list[str], baseline: Fabric | None) -> CResult:
        f = self.fabric
        out = (ctypes.c_uint32 * 13)()
        mean = ctypes.c_double(0)
        self._lib.hdor_off_summary(self._h, out, ctypes.byref(mean))
        kind, k, n, s, _switches, lids, vls, _cap, dead_links, dead_nodes, detoured, xmax, _maxsl = list(out)
        here = self._here()  # as it is now: route_failures repairs the fabric after this pass
        res = CResult(k=k, n=n, s=s, dump_lines=lines, lids=lids, vls=vls, log=self.log, _fabric=f,
                      _make_tables=lambda raw: self._tables(f, here, raw))
        self._last = weakref.ref(res)
        res.degraded = kind == 2
        if dead_links or dead_nodes:
            res._make_sl2vl = self._sl2vl()
            res.detour_sls = self._detour_sls()
            res._make_path_sls = self._path_sls(here, res.detour_sls)
            res._changed = self._changed()
            res.extra_hops = {"detoured": detoured, "max": xmax, "mean": round(mean.value, 3)}
            res.faults = _faults(baseline, f) if baseline is not None else {
                "nodes": [f"{dead_nodes} node(s)"] if dead_nodes else [],
                "links": [f"{dead_links} link(s)"] if dead_links else []}
            m = _SIGHT.search(res.log)
            if m:
                res.faults["first_sight"] = dict(zip(("routers", "switches", "cables"), map(int, m.groups())))
        return res

    def _here(self) -> np.ndarray:
        """Which nodes of the loaded fabric are there (not failed, nor cut off from the SM)."""
        here = np.zeros(self.fabric.num_nodes, dtype=np.uint8)
        self._lib.hdor_off_here(self._h, _ptr(here, _U8))
        return here

    def _tables(self, f: Fabric, here: np.ndarray, raw: tuple | None = None) -> Tables:
        """The tables of fabric f from the engine's buffer, or from `raw`: a copy of it and its
        stride (_settle)."""
        if raw is None:
            stride = ctypes.c_uint32(0)
            p = self._lib.hdor_off_lft(self._h, ctypes.byref(stride))
            nsw = sum(1 for x in range(f.num_nodes) if f.types[x] == SWITCH)
            raw = (np.ctypeslib.as_array(p, shape=(nsw * stride.value,)) if p and nsw else np.zeros(0, np.uint8),
                   stride.value)
        buf, stride = raw
        sw = [x for x in range(f.num_nodes) if f.types[x] == SWITCH]
        t = Tables()
        if not sw or not len(buf):
            return t
        # the rows as long as the reference's: the highest LID a port there owns, + 1
        owned = [lid + (1 << lmc) - 1 for (x, _), (lid, lmc) in f.port_lids.items() if here[x]]
        width = min(max(owned, default=0) + 1, stride)
        m = buf.reshape(len(sw), stride)[:, :width].copy()
        for r, x in enumerate(sw):
            if here[x]:  # (not failed, nor cut off from the SM)
                t.lft[f.guids[x]] = m[r]
                t.names[f.guids[x]] = f.names[x]
        return t

    def _sl2vl(self):
        """What makes this pass's SL2VL rows (copied now: the next pass replaces them)."""
        g, io, vl = _U64(), _U64(), _U8()
        n = self._lib.hdor_off_sl2vl(self._h, ctypes.byref(g), ctypes.byref(io), ctypes.byref(vl))
        if not n:
            return lambda: _sl2vl_rows(np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros((0, 16), np.uint8))
        ga = np.ctypeslib.as_array(g, shape=(n,)).copy()
        ia = np.ctypeslib.as_array(io, shape=(n,)).copy()
        va = np.ctypeslib.as_array(vl, shape=(n * 16,)).reshape(n, 16).copy()
        return lambda: _sl2vl_rows(ga, ia, va)

    def _changed(self) -> tuple[np.ndarray, np.ndarray]:
        node, lid = _U32(), _U32()
        n = self._lib.hdor_off_changed(self._h, ctypes.byref(node), ctypes.byref(lid))
        if not n:
            return np.zeros(0, np.uint32), np.zeros(0, np.uint32)
        return (np.ctypeslib.as_array(node, shape=(n,)).copy(), np.ctypeslib.as_array(lid, shape=(n,)).copy())

    def _detour_sls(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This pass's pairs with an SL above 0 (keys dlid << 16 | source base LID, ascending, and
        their SLs) and the pairs not delivered (keys), copied: the next pass replaces them."""
        key, sl, lost, nlost = _U64(), _U8(), _U64(), ctypes.c_uint32(0)
        n = self._lib.hdor_off_path_sls(self._h, ctypes.byref(key), ctypes.byref(sl), ctypes.byref(lost),
                                        ctypes.byref(nlost))
        keys = np.ctypeslib.as_array(key, shape=(n,)).copy() if n else np.zeros(0, np.uint64)
        sls = np.ctypeslib.as_array(sl, shape=(n,)).copy() if n else np.zeros(0, np.uint8)
        gone = np.ctypeslib.as_array(lost, shape=(nlost.value,)).copy() if nlost.value else np.zeros(0, np.uint64)
        return keys, sls, gone

    def _path_sls(self, here: np.ndarray, detour: tuple):
        """What makes every CA-to-CA pair's SL (source base LID, destination LID) as the reference
        lists them -- the pairs of linked CA ports but a port's own, less those not delivered --
        from this pass's pairs with an SL above 0."""
        f, down = self.fabric, set(self._down)
        keys, sls, gone = detour
        return lambda: _all_path_sls(f, here, down, keys, sls, set(gone.tolist()))


def _sl2vl_rows(guids: np.ndarray, ios: np.ndarray, vls: np.ndarray) -> SL2VL:
    """The rows (switch GUID, input << 8 | output port, 16 VLs) as an SL2VL. A pass programs
    thousands of rows of a few distinct contents: each content becomes one tuple, shared."""
    out = SL2VL()
    out.path = "hdor (C engine)"
    if not len(guids):
        return out
    raw, contents = np.ascontiguousarray(vls, dtype=np.uint8).tobytes(), {}
    for j, (guid, key) in enumerate(zip(guids.tolist(), ios.tolist())):
        b = raw[16 * j:16 * j + 16]
        row = contents.get(b)
        if row is None:
            row = contents[b] = tuple(b)
        t = out.get(guid)
        if t is None:
            t = out[guid] = {}
            out.kind[guid] = "Switch"
        t[(key >> 8, key & 0xFF)] = row
    return out


def _all_path_sls(f: Fabric, here, down: set, keys, sls, gone: set) -> PathSLs:
    def linked(x, p) -> bool:  # a CA port there, cabled to a node there, its cable up
        peer = f.peer(x, p)
        return bool(here[x] and peer and here[peer[0]] and (x, p) not in down)
    ca = [(f.port_lids[(x, p)], (x, p)) for (x, p) in f.port_lids if f.types[x] == CA and linked(x, p)]
    out = PathSLs()
    out.path = "hdor (C engine)"
    for (s_lid, _), src in ca:
        for (d_lid, lmc), dst in ca:
            if src == dst:
                continue
            for d in range(d_lid, d_lid + (1 << lmc)):
                if (d << 16 | s_lid) not in gone:
                    out[(s_lid, d)] = 0
    for k_, v in zip(keys.tolist(), sls.tolist()):
        out[(k_ & 0xFFFF, k_ >> 16)] = v
    return out


def _faults(bf: Fabric, f: Fabric) -> dict:
    """The failed nodes and links of the baseline `bf` in `f`, as the reference names them."""
    b2c = [f.by_guid(g) for g in bf.guids]
    nodes = [bf.names[b] for b in range(bf.num_nodes) if b2c[b] is None]
    links = []
    for li in range(bf.num_links):
        a, pa, b, pb = bf.link_a[li], bf.link_pa[li], bf.link_b[li], bf.link_pb[li]
        if b2c[a] is None or b2c[b] is None or f.peer(b2c[a], pa) != (b2c[b], pb):
            links.append(f"{bf.names[a]}[{pa}]-{bf.names[b]}[{pb}]")
    return {"nodes": nodes, "links": links}


def compute(fabric: Fabric, baseline: Fabric | None = None, vls: int = 8, dump: Path | None = None,
            description: Path | None = None) -> CResult:
    """The C engine's pass over `fabric`, as the plugin routes it inside OpenSM: after a pass over
    `baseline` (the KNS while complete) when it is given (raising Declined when hdor declines)."""
    with Engine(vls) as e:
        if description is not None:
            e.describe(description)
        if baseline is not None:
            e.load(baseline)
            first = e.route()
            if first.degraded:
                raise not_kns("the baseline is not a complete KNS (the C engine routed it as a degraded one)")
            e.load(fabric)
            return e.route(dump, baseline=baseline)
        e.load(fabric)
        return e.route(dump)
