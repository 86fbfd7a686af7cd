"""The subnet administrator's PathRecords of every pair of HCA ports, in bulk: the SL the routing
engine gives each path (OpenSM's path_sl hook), which the deadlock check per VL needs.

Why not `saquery`: one `saquery -p --slid S --dlid D` per pair costs ~0.1 s (a process, the umad
port opened, under ibsim the attach to the simulator), 702 pairs of a KNS 3^3 about 20 s, 262,144
pairs of a KNS 8^3 hours. One `saquery -p --slid S` (a GetTable of every path from S) needs RMPP
for its many-MAD answer, and ibsim's umad2sim carries one MAD (256 bytes) a message: the answer is
cut to its first three records. So one process asks the SA, through libibumad (the library
saquery uses; umad2sim intercepts it under ibsim), exactly the query `saquery -p --slid S --dlid D`
sends — SubnAdmGetTable(PathRecord), component mask SLID|DLID — for every ordered pair, WINDOW
queries in flight. Every pair gets an answer, a "no record", or, after TRIES sends, a failure: all
counted in the result, none left out.

    from ibtool.sa import path_sls
    path_sls(clients, Path("saquery-paths.out"), fabric, timeout=60)

runs `python -m ibtool.sa` under the clients' environment (LD_PRELOAD=umad2sim and
IBSIM_SOCKNAME under ibsim; nothing on a host of a real fabric) and writes the records as saquery
prints them (formats.pathrecord: slid, dlid, sl). The child reads the LIDs on stdin and prints
"SLID DLID SL", "SLID DLID -" (no record) or "SLID DLID ! why" per pair; it imports nothing
beyond the standard library, so it starts fast.
"""

from __future__ import annotations

import ctypes
import os
import selectors
import struct
import subprocess
import sys
import time
from pathlib import Path

WINDOW = 64  # queries in flight (bench/path_sls_bench.py: more buys nothing on ibsim)
TRIES = 4  # unanswered sends of one query before its pair is a failure
BUSY_S = 30.0  # how long an SA that answers "busy" (OpenSM not ready, mid-sweep) is asked again
ANSWER_MS = 2000  # an unanswered query is sent again after this long
PROGRESS_EVERY = 50_000  # pairs between progress lines

# MAD layout (IBA 13.4, 15.2): common header, RMPP header, SA header, then the PathRecord
_SA_CLASS, _SA_CLASS_VERSION, _GET_TABLE, _PATH_RECORD = 0x03, 2, 0x12, 0x0035
_COMP_DLID, _COMP_SLID = 1 << 4, 1 << 5
_PR = 56  # the first record's offset in the MAD
_MAD = 256
_QP1_QKEY = 0x80010000
_BUSY = 0x0001  # MAD status: the SA is busy (OpenSM mid-sweep), ask again
_NO_RECORDS = 0x0300  # SA status ERR_NO_RECORDS


class _Port(ctypes.Structure):  # umad_port_t, <infiniband/umad.h>
    _fields_ = [("ca_name", ctypes.c_char * 20), ("portnum", ctypes.c_int), ("base_lid", ctypes.c_uint),
                ("lmc", ctypes.c_uint), ("sm_lid", ctypes.c_uint), ("sm_sl", ctypes.c_uint),
                ("state", ctypes.c_uint), ("phys_state", ctypes.c_uint), ("rate", ctypes.c_uint),
                ("capmask", ctypes.c_uint32), ("gid_prefix", ctypes.c_uint64), ("port_guid", ctypes.c_uint64),
                ("pkeys_size", ctypes.c_uint), ("pkeys", ctypes.c_void_p), ("link_layer", ctypes.c_char * 20)]


def _query_all(lids: list[int], ca: str | None, port: int, window: int, emit, say) -> int:
    """Ask the SA for the PathRecord of every ordered pair of `lids`; emit(slid, dlid, sl | None | why)."""
    try:
        lib = ctypes.CDLL("libibumad.so.3", use_errno=True)
    except OSError:
        raise SystemExit("libibumad.so.3 not found; install the Debian package libibumad3 (infiniband-diags needs it)")
    lib.umad_size.restype = ctypes.c_size_t
    if lib.umad_init() < 0:
        raise SystemExit("umad_init failed: no InfiniBand user MAD support (ib_umad) on this host")
    cab = ca.encode() if ca else None
    info = _Port()
    if lib.umad_get_port(cab, port, ctypes.byref(info)) < 0:
        raise SystemExit(f"no local InfiniBand port {ca or '(default)'}:{port or '(default)'}")
    if not info.sm_lid:
        raise SystemExit(f"port {info.ca_name.decode()}:{info.portnum} knows no SM (SM LID 0): is an SM running?")
    fd = lib.umad_open_port(cab, port)
    if fd < 0:
        raise SystemExit(f"cannot open the umad device of {info.ca_name.decode()}:{info.portnum} "
                         f"({os.strerror(ctypes.get_errno())}; root, like the diags?)")
    agent = lib.umad_register(fd, _SA_CLASS, _SA_CLASS_VERSION, 1, None)  # RMPP version 1, as saquery
    if agent < 0:
        raise SystemExit("cannot register an SA agent on the umad device")
    us = lib.umad_size()
    send = ctypes.create_string_buffer(us + _MAD)
    lib.umad_set_addr(send, info.sm_lid, 1, info.sm_sl, _QP1_QKEY)
    lib.umad_set_pkey(send, 0)
    struct.pack_into(">BBBB", send, us, 1, _SA_CLASS, _SA_CLASS_VERSION, _GET_TABLE)
    struct.pack_into(">H", send, us + 16, _PATH_RECORD)
    struct.pack_into(">Q", send, us + 48, _COMP_DLID | _COMP_SLID)
    recv = ctypes.create_string_buffer(us + 4096)
    length = ctypes.c_int()
    pairs = ((s, d) for s in lids for d in lids if s != d)
    total = len(lids) * (len(lids) - 1)
    flight: dict[int, tuple[int, int, int, float]] = {}  # tid -> slid, dlid, sends, deadline
    again: list[tuple[int, int, int]] = []  # (slid, dlid, sends) to send again
    busy_until = None  # the SA said busy: ask again until then
    tid = done = 0
    exhausted = False
    started = time.monotonic()

    def put(s: int, d: int, sends: int) -> None:
        nonlocal tid
        tid = (tid + 1) & 0xFFFFFFFF
        struct.pack_into(">I", send, us + 12, tid)  # the low half: the kernel/umad2sim owns the high half
        struct.pack_into(">HH", send, us + _PR + 40, d, s)
        if lib.umad_send(fd, agent, send, _MAD, ANSWER_MS, 0) < 0:
            raise SystemExit(f"umad_send failed: {os.strerror(ctypes.get_errno())}")
        flight[tid] = (s, d, sends + 1, time.monotonic() + ANSWER_MS / 1000)

    def finish(s: int, d: int, what) -> None:
        nonlocal done
        emit(s, d, what)
        done += 1
        if done % PROGRESS_EVERY == 0:
            say(f"{done} of {total} PathRecords ({time.monotonic() - started:.1f} s)")

    def retry(s: int, d: int, sends: int, why: str) -> None:
        if sends >= TRIES:
            finish(s, d, f"! {why} after {sends} queries")
        else:
            again.append((s, d, sends))

    while True:
        while len(flight) < window and (again or not exhausted):
            if again:
                put(*again.pop())
                continue
            nxt = next(pairs, None)
            if nxt is None:
                exhausted = True
                break
            put(nxt[0], nxt[1], 0)
        if not flight:
            break
        length.value = us + 4096
        got = lib.umad_recv(fd, recv, ctypes.byref(length), 50)
        now = time.monotonic()
        if got >= 0:
            (rtid,) = struct.unpack_from(">I", recv, us + 12)
            entry = flight.pop(rtid, None)
            if entry is not None:
                s, d, sends, _ = entry
                (status,) = struct.unpack_from(">H", recv, us + 4)
                if lib.umad_status(recv):  # the kernel timed the send out (a real HCA's umad)
                    retry(s, d, sends, "no answer")
                elif status & _BUSY:
                    busy_until = busy_until or now + BUSY_S
                    if now > busy_until:
                        finish(s, d, f"! SA busy for {BUSY_S:g} s")
                    else:
                        time.sleep(0.05)
                        again.append((s, d, sends - 1))  # a busy answer is an answer: not a lost query
                elif status == _NO_RECORDS:
                    finish(s, d, None)
                elif status:
                    finish(s, d, f"! SA status {status:#06x}")
                else:
                    busy_until = None
                    rd, rs = struct.unpack_from(">HH", recv, us + _PR + 40)
                    (qos_sl,) = struct.unpack_from(">H", recv, us + _PR + 52)
                    finish(s, d, qos_sl & 0xF if (rs, rd) == (s, d) else None)  # an empty table: no path
        for t in [t for t, e in flight.items() if e[3] < now]:  # umad2sim reports no timeouts: ours
            s, d, sends, _ = flight.pop(t)
            retry(s, d, sends, "no answer")
    lib.umad_unregister(fd, agent)
    lib.umad_close_port(fd)
    return done


def main(argv: list[str] | None = None) -> int:
    """`python -m ibtool.sa [--ca CA] [--port N] [--window W]`, HCA port LIDs on stdin."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m ibtool.sa", description=main.__doc__)
    ap.add_argument("--ca", default=None)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--window", type=int, default=WINDOW)
    a = ap.parse_args(argv)
    lids = [int(x) for x in sys.stdin.read().split()]
    out = sys.stdout
    text = {None: "-"}

    def emit(s, d, what):
        out.write(f"{s} {d} {text.get(what, what)}\n")

    _query_all(lids, a.ca, a.port, max(1, a.window), emit, lambda m: print(m, file=sys.stderr, flush=True))
    out.flush()
    return 0


def path_sls(clients, out: Path, fabric, timeout: float, local: tuple[str, ...] = (), progress=None,
             window: int = WINDOW) -> dict:
    """The PathRecord of every ordered pair of HCA port base LIDs of `fabric`, asked of the SA from
    the port `local` names (the diags' -C CA / -P PORT); written to `out` as saquery prints them.
    `clients`: .work (the child's cwd; umad2sim writes ./sys-<pid> there) and .env(). A child that
    prints nothing for `timeout` s is stopped. Raises EnvironmentProblem when the SA does not
    answer (no SM, or every query of some pair went unanswered)."""
    from ibtool.errors import EnvironmentProblem
    from ibtool.formats import pathrecord
    say = progress or (lambda m: None)
    lids = sorted({lid for (node, _), (lid, _) in fabric.port_lids.items() if not fabric.is_switch(node) and lid})
    opts = dict(zip(local[::2], local[1::2]))
    argv = [sys.executable, "-m", "ibtool.sa", "--window", str(window),
            *(["--ca", opts["-C"]] if "-C" in opts else []), *(["--port", opts["-P"]] if "-P" in opts else [])]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=clients.work, env=clients.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    p.stdin.write(" ".join(map(str, lids)).encode())
    p.stdin.close()
    sls: dict[tuple[int, int], int] = {}
    none: list[tuple[int, int]] = []
    failed: list[str] = []
    err: list[str] = []
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    sel.register(p.stderr, selectors.EVENT_READ)
    tail = b""
    try:
        while sel.get_map():
            ready = sel.select(timeout)
            if not ready:
                raise EnvironmentProblem(f"the SA query (python -m ibtool.sa) printed nothing for {timeout:g} s")
            for key, _ in ready:
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                if key.fileobj is p.stderr:
                    for line in chunk.decode(errors="replace").splitlines():
                        if line.strip() and "sim_connect" not in line:
                            err.append(line.strip())
                            if " of " in line and "PathRecords" in line:
                                say(line.strip())
                    continue
                lines = (tail + chunk).split(b"\n")
                tail = lines.pop()
                for line in lines:
                    s, d, what = line.split(b" ", 2)
                    if what == b"-":
                        none.append((int(s), int(d)))
                    elif what.startswith(b"!"):
                        failed.append(f"{int(s)}->{int(d)}: {what[1:].decode().strip()}")
                    else:
                        sls[int(s), int(d)] = int(what)
        rc = p.wait(timeout=timeout)
    finally:
        sel.close()
        if p.poll() is None:
            p.kill()
            p.wait()
    if rc != 0:
        why = [e for e in err if " of " not in e or "PathRecords" not in e]
        raise EnvironmentProblem(f"the SA query failed (exit {rc}): {why[-1] if why else 'no message'}")
    pairs = len(lids) * (len(lids) - 1)
    if failed:
        raise EnvironmentProblem(f"the SA answered no PathRecord query for {len(failed)} of {pairs} HCA pairs, "
                                 f"e.g. {failed[0]}")
    if pairs and not sls:
        raise EnvironmentProblem(f"the SA has no PathRecord for any of the {pairs} HCA pairs")
    if sls:
        pathrecord.write(sls, out)
    return {"file": Path(out).name, "pairs": pairs, "records": len(sls), "without_record": len(none),
            "examples_without_record": [f"{s}->{d}" for s, d in none[:5]], "queries": "SubnAdmGetTable(PathRecord) "
            "by SLID and DLID, one per pair, " + f"{window} in flight", "seconds": round(time.monotonic() - t0, 3)}


if __name__ == "__main__":
    sys.exit(main())
