"""Many PathRecords from the SA in one process: the SL the routing engine gave each path.

`saquery -p --slid S --dlid D` answers one pair per process (0.2 s each under ibsim, mostly the
process and umad2sim starting), so a fabric's every HCA pair took minutes. This asks the same
SubnAdmGet(PathRecord) with the same component mask (SLID, DLID) for every pair through
libibmad, the MAD library saquery itself is built on, from one process, and prints the answers
in saquery's `PathRecord dump:` format, which `ibtool.formats.pathrecord` reads.

    python -m ibtool.sim.sa_paths [-C CA] [-P PORT] < pairs     # "SLID DLID" per line

Run it as saquery would be run: under ibsim with LD_PRELOAD=umad2sim and the fabric's
IBSIM_SOCKNAME. Exit 0 all answered; 1 a pair not answered after retries (the line names it);
3 libibmad missing (the caller falls back to saquery).
"""

from __future__ import annotations

import argparse
import ctypes as C
import sys
import time

SA_ATTR_PATHRECORD = 0x35
METHOD_GET = 1
COMP_DLID, COMP_SLID = 1 << 4, 1 << 5  # PathRecord component mask bits (IBA 15.2.5.16)
CLASSES = (0x01, 0x81, 0x03)  # SMI (LID routed), SMI directed route (to find the SM), SA
TRIES = 4


class _DRPath(C.Structure):  # libibmad's ib_dr_path_t
    _fields_ = [("cnt", C.c_int), ("p", C.c_uint8 * 64), ("drslid", C.c_uint16), ("drdlid", C.c_uint16)]


class _PortId(C.Structure):  # ib_portid_t
    _fields_ = [("lid", C.c_int), ("drpath", _DRPath), ("grh_present", C.c_int), ("gid", C.c_uint8 * 16),
                ("qp", C.c_uint32), ("qkey", C.c_uint32), ("sl", C.c_uint8), ("pkey_idx", C.c_uint)]


class _Rmpp(C.Structure):  # ib_rmpp_hdr_t
    _fields_ = [("type", C.c_uint), ("flags", C.c_uint), ("status", C.c_uint), ("d1", C.c_uint32),
                ("d2", C.c_uint32)]


class _SaCall(C.Structure):  # ib_sa_call_t
    _fields_ = [("attrid", C.c_uint), ("mod", C.c_uint), ("mask", C.c_uint64), ("method", C.c_uint),
                ("trid", C.c_uint64), ("recsz", C.c_uint), ("rmpp", _Rmpp)]


def _u(b, off: int, n: int) -> int:
    return int.from_bytes(bytes(b[off:off + n]), "big")


def _gid(b, off: int) -> str:
    g = bytes(b[off:off + 16])
    return ":".join(f"{int.from_bytes(g[i:i + 2], 'big'):x}" for i in range(0, 16, 2))


def dump(rec) -> str:
    """One PathRecord (its 64 bytes, IBA 15.2.5.16) as saquery prints it."""
    return ("PathRecord dump:\n"
            f"\t\tservice_id..............0x{_u(rec, 0, 8):016x}\n"
            f"\t\tdgid....................{_gid(rec, 8)}\n"
            f"\t\tsgid....................{_gid(rec, 24)}\n"
            f"\t\tdlid....................{_u(rec, 40, 2)}\n"
            f"\t\tslid....................{_u(rec, 42, 2)}\n"
            f"\t\thop_limit...............{rec[47]}\n"
            f"\t\ttclass..................0x{rec[48]:x}\n"
            f"\t\tnum_path_revers.........0x{rec[49]:x}\n"
            f"\t\tpkey....................0x{_u(rec, 50, 2):04x}\n"
            f"\t\tqos_class...............0x{_u(rec, 52, 2) >> 4:x}\n"
            f"\t\tsl......................0x{rec[53] & 0xF:x}\n"
            f"\t\tmtu.....................0x{rec[54]:x}\n"
            f"\t\trate....................0x{rec[55]:x}\n"
            f"\t\tpkt_life................0x{rec[56]:x}\n"
            f"\t\tpreference..............0x{rec[57]:x}\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-C", dest="ca", default=None, help="the CA to query from (as saquery -C)")
    ap.add_argument("-P", dest="port", type=int, default=0, help="its port (as saquery -P)")
    a = ap.parse_args(argv)
    try:
        lib = C.CDLL("libibmad.so.5")
    except OSError:
        print("libibmad.so.5 not found (Debian package libibmad5)", file=sys.stderr)
        return 3
    lib.mad_rpc_open_port.restype = C.c_void_p
    lib.sa_rpc_call.restype = C.c_void_p
    classes = (C.c_int * len(CLASSES))(*CLASSES)
    port = lib.mad_rpc_open_port(a.ca.encode() if a.ca else None, a.port, classes, len(CLASSES))
    if not port:
        print(f"cannot open the umad port ({a.ca or 'first CA'} port {a.port or 'first active'})", file=sys.stderr)
        return 1
    port = C.c_void_p(port)
    sm = _PortId()
    if lib.ib_resolve_smlid_via(C.byref(sm), 0, port) < 0 or not sm.lid:
        print("no SM LID: is a subnet manager running?", file=sys.stderr)
        return 1
    buf = (C.c_uint8 * 256)()
    out = sys.stdout
    for ln, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        slid, dlid = (int(x) for x in line.split())
        for attempt in range(TRIES):  # the SA may not answer while OpenSM sweeps again (a fault step)
            C.memset(buf, 0, len(buf))
            buf[40:42] = dlid.to_bytes(2, "big")
            buf[42:44] = slid.to_bytes(2, "big")
            sa = _SaCall(attrid=SA_ATTR_PATHRECORD, method=METHOD_GET, mask=COMP_DLID | COMP_SLID)
            p = lib.sa_rpc_call(port, buf, C.byref(sm), C.byref(sa), 0)
            if p:
                out.write(dump((C.c_uint8 * 64).from_address(p)))
                break
            time.sleep(0.5 * (attempt + 1))
        else:
            print(f"PathRecord --slid {slid} --dlid {dlid}: no answer from the SA (LID {sm.lid}) after {TRIES} tries",
                  file=sys.stderr)
            return 1
    out.flush()
    lib.mad_rpc_close_port(port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
