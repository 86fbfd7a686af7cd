"""MADs in bulk, from one process: what one infiniband-diags run per item would ask, asked all at
once — the SA's PathRecord of every pair of HCA ports (the SL the routing engine gives each path,
which the deadlock check per VL needs), one LinearForwardingTable block of every switch, and
multicast joins (SubnAdmSet(MCMemberRecord); no diags tool joins a group).

Why not the tools: one `saquery -p --slid S --dlid D` (or `smpdump -D PATH 0x19 BLOCK`) per item
costs ~0.1 s (a process, the umad port opened, under ibsim the attach to the simulator): 702
pairs of a KNS 3^3 about 20 s, the 261,632 of a KNS 8^3 hours. One `saquery -p --slid S` (a
GetTable of every path from S) needs RMPP for its many-MAD answer, and ibsim's umad2sim carries
one MAD (256 bytes) a message: the answer is cut to its first three records. So one process sends,
through libibumad (the library the diags use; umad2sim intercepts it under ibsim), exactly the
MAD the tool would — SubnAdmGetTable(PathRecord) with component mask SLID|DLID for a pair,
SubnGet(LinearForwardingTable) by directed route for a block — WINDOW in flight, matched by
transaction ID. Every item gets an answer, a "no record", or, after TRIES sends, a failure: all
counted in the result, none left out.

    from ibtool.mad import path_sls, lft_blocks
    path_sls(clients, Path("saquery-paths.out"), fabric, timeout=60)
    lft_blocks(clients, ["0,1,3", "0,2"], block=19, timeout=60)   # {path: 64 ports}
    mcast_join(clients, "ff12:601b:ffff::1", port_guids, timeout=60)  # {GUID: MLID}

run `python -m ibtool.mad paths|lft|join` under the clients' environment (LD_PRELOAD=umad2sim and
IBSIM_SOCKNAME under ibsim; nothing on a host of a real fabric). The child reads LIDs, directed
routes or port GUIDs on stdin and prints one line per item; it imports nothing beyond the standard library, so
it starts fast. path_sls writes the records as saquery prints them (formats.pathrecord).
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

WINDOW = 64  # queries in flight (perf/path_sls_bench.py: more buys nothing on ibsim)
TRIES = 4  # unanswered sends of one query before its pair is a failure
BUSY_S = 30.0  # how long an SA that answers "busy" (OpenSM not ready, mid-sweep) is asked again
ANSWER_MS = 2000  # an unanswered query is sent again after this long
PROGRESS_EVERY = 50_000  # pairs between progress lines

# MAD layout (IBA 13.4, 15.2): common header, RMPP header, SA header, then the PathRecord
_SA_CLASS, _SA_CLASS_VERSION, _GET_TABLE, _PATH_RECORD = 0x03, 2, 0x12, 0x0035
_COMP_DLID, _COMP_SLID = 1 << 4, 1 << 5
_PR = 56  # the first record's offset in the MAD
_SMI_DR_CLASS, _LFT = 0x81, 0x0019  # directed-route SMP, LinearForwardingTable
_SET, _MCMEMBER_RECORD = 0x02, 0x0038  # SubnAdmSet(MCMemberRecord): a multicast join (IBA 15.2.5.17)
# what OpenSM requires to create a group: MGID, PortGID, Q_Key, TClass, P_Key, SL, FlowLabel, JoinState
_MCR_CREATE = sum(1 << b for b in (0, 1, 2, 6, 7, 12, 13, 16))
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


def _open(ca: str | None, port: int, mgmt_class: int, version: int, rmpp: int):
    """libibumad, the local port's umad_port_t, its umad fd and an agent of `mgmt_class`."""
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
    fd = lib.umad_open_port(cab, port)
    if fd < 0:
        raise SystemExit(f"cannot open the umad device of {info.ca_name.decode()}:{info.portnum} "
                         f"({os.strerror(ctypes.get_errno())}; root, like the diags?)")
    agent = lib.umad_register(fd, mgmt_class, version, rmpp, None)
    if agent < 0:
        raise SystemExit(f"cannot register a class {mgmt_class:#x} agent on the umad device")
    return lib, info, fd, agent


def _pipeline(lib, fd, agent, keys, write, read, window: int, emit, say, what: str, queue=None,
              answer_ms: int = ANSWER_MS, tries: int = TRIES) -> int:
    """Send one MAD per key (write(buf, offset, key) fills it and may return the agent to send it
    with, else `agent`), WINDOW in flight, matched by transaction ID; read(buf, offset, key) -> a
    result, or ("again", why) to ask once more. emit(key, result | "! why"). `queue` (a deque):
    keys that emit adds while the pipeline runs (a discovery's next hops), sent before `keys`.
    Returns how many MADs it sent (retries included)."""
    us = lib.umad_size()
    send = ctypes.create_string_buffer(us + _MAD)
    recv = ctypes.create_string_buffer(us + 4096)
    length = ctypes.c_int()
    flight: dict[int, tuple[object, int, float]] = {}  # tid -> key, sends, deadline
    again: list[tuple[object, int]] = []
    state = {"tid": 0, "done": 0, "busy_until": None, "sent": 0, "scan": 0.0}
    keys = iter(keys)
    exhausted = False
    started = time.monotonic()

    def put(key, sends: int) -> None:
        state["tid"] = (state["tid"] + 1) & 0xFFFFFFFF
        ag = write(send, us, key)
        struct.pack_into(">I", send, us + 12, state["tid"])  # the low half: the kernel/umad2sim owns the high
        if lib.umad_send(fd, agent if ag is None else ag, send, _MAD, answer_ms, 0) < 0:
            raise SystemExit(f"umad_send failed: {os.strerror(ctypes.get_errno())}")
        state["sent"] += 1
        flight[state["tid"]] = (key, sends + 1, time.monotonic() + answer_ms / 1000)

    def finish(key, result) -> None:
        emit(key, result)
        state["done"] += 1
        if state["done"] % PROGRESS_EVERY == 0:
            say(f"{state['done']} {what} ({time.monotonic() - started:.1f} s)")

    def retry(key, sends: int, why: str) -> None:
        if sends >= tries:
            finish(key, f"! {why} after {sends} queries")
        else:
            again.append((key, sends))

    while True:
        while len(flight) < window and (again or queue or not exhausted):
            if again:
                put(*again.pop())
                continue
            if queue:
                put(queue.popleft(), 0)
                continue
            key = next(keys, None)
            if key is None:
                exhausted = True
                break
            put(key, 0)
        if not flight:
            break
        length.value = us + 4096
        got = lib.umad_recv(fd, recv, ctypes.byref(length), 50)
        now = time.monotonic()
        if got >= 0:
            (rtid,) = struct.unpack_from(">I", recv, us + 12)
            entry = flight.pop(rtid, None)
            if entry is not None:
                key, sends, _ = entry
                (status,) = struct.unpack_from(">H", recv, us + 4)
                if lib.umad_status(recv):  # the kernel timed the send out (a real HCA's umad)
                    retry(key, sends, "no answer")
                elif status & _BUSY:  # OpenSM not ready (mid-sweep): a busy answer is an answer
                    state["busy_until"] = state["busy_until"] or now + BUSY_S
                    if now > state["busy_until"]:
                        finish(key, f"! busy for {BUSY_S:g} s")
                    else:
                        time.sleep(0.05)
                        again.append((key, sends - 1))
                else:
                    state["busy_until"] = None
                    r = read(recv, us, key, status & 0x7FFF)
                    if isinstance(r, tuple) and r and r[0] == "again":
                        retry(key, sends, r[1])
                    else:
                        finish(key, r)
        if got < 0 or now >= state["scan"]:  # umad2sim reports no timeouts: ours (looked for every 0.1 s)
            state["scan"] = now + 0.1
            for t in [t for t, e in flight.items() if e[2] < now]:
                key, sends, _ = flight.pop(t)
                retry(key, sends, "no answer")
    lib.umad_unregister(fd, agent)
    lib.umad_close_port(fd)
    return state["sent"]


def _paths(ports: list[tuple[int, int]], ca: str | None, port: int, window: int, out, say) -> None:
    """The SA's PathRecord from every port's base LID to every LID of every other port (with LMC > 0
    each LID of its range: a path of its own, with its own SL), `ports` as (base LID, LMC):
    "SLID DLID SL" ("-": no record)."""
    lib, info, fd, agent = _open(ca, port, _SA_CLASS, _SA_CLASS_VERSION, 1)  # RMPP version 1, as saquery
    if not info.sm_lid:
        raise SystemExit(f"port {info.ca_name.decode()}:{info.portnum} knows no SM (SM LID 0): is an SM running?")
    us = lib.umad_size()
    send = ctypes.create_string_buffer(us + _MAD)
    lib.umad_set_addr(send, info.sm_lid, 1, info.sm_sl, _QP1_QKEY)
    lib.umad_set_pkey(send, 0)
    struct.pack_into(">BBBB", send, us, 1, _SA_CLASS, _SA_CLASS_VERSION, _GET_TABLE)
    struct.pack_into(">H", send, us + 16, _PATH_RECORD)
    struct.pack_into(">Q", send, us + 48, _COMP_DLID | _COMP_SLID)
    head = send.raw[:us + 56]

    def write(buf, us, pair):
        ctypes.memmove(buf, head, len(head))
        struct.pack_into(">HH", buf, us + _PR + 40, pair[1], pair[0])

    def read(buf, us, pair, status):
        if status == _NO_RECORDS:
            return None
        if status:
            return f"! SA status {status:#06x}"
        rd, rs = struct.unpack_from(">HH", buf, us + _PR + 40)
        (qos_sl,) = struct.unpack_from(">H", buf, us + _PR + 52)
        return qos_sl & 0xF if (rs, rd) == pair else None  # an empty table: no path

    def emit(pair, what):
        out.write(f"{pair[0]} {pair[1]} {'-' if what is None else what}\n")

    pairs = ((s, d) for s, _ in ports for b, lmc in ports if b != s for d in range(b, b + (1 << lmc)))
    _pipeline(lib, fd, agent, pairs, write, read, window, emit, say, "PathRecords")


def _lft_blocks(paths: list[str], block: int, ca: str | None, port: int, window: int, out, say) -> None:
    """One LinearForwardingTable block (64 LIDs) of every switch, by directed route (the query
    of `smpdump -D PATH 0x19 BLOCK`): "PATH HEX" (64 ports, 255 = no route)."""
    lib, info, fd, agent = _open(ca, port, _SMI_DR_CLASS, 1, 0)
    us = lib.umad_size()

    def write(buf, us, path):
        hops = [int(x) for x in path.split(",")][1:]  # dump_fts prints "0,3,2": 0 is this port
        ctypes.memset(buf, 0, us + _MAD)
        lib.umad_set_addr(buf, 0xFFFF, 0, 0, 0)  # the permissive LID: directed route
        struct.pack_into(">BBBBHBB", buf, us, 1, _SMI_DR_CLASS, 1, 0x01, 0, 0, len(hops))
        struct.pack_into(">HHI", buf, us + 16, _LFT, 0, block)
        struct.pack_into(">HH", buf, us + 32, 0xFFFF, 0xFFFF)  # DrSLID, DrDLID
        struct.pack_into(f">{len(hops)}B", buf, us + 129, *hops)  # InitialPath[1..]

    def read(buf, us, path, status):
        if status:
            return f"! SMP status {status:#06x}"
        return bytes(buf[us + 64:us + 128]).hex()

    def emit(path, what):
        out.write(f"{path} {what}\n")

    _pipeline(lib, fd, agent, paths, write, read, window, emit, say, "LFT blocks")


def _join(mgid: bytes, guids: list[int], ca: str | None, port: int, window: int, out, say) -> None:
    """SubnAdmSet(MCMemberRecord): each port GUID joins multicast group `mgid` as a full member
    (the first join creates it; the SA lets a port that shares a partition with them join for the
    others: a proxy join, o15-0.1.2): "GUID MLID" in hex."""
    lib, info, fd, agent = _open(ca, port, _SA_CLASS, _SA_CLASS_VERSION, 1)
    if not info.sm_lid:
        raise SystemExit(f"port {info.ca_name.decode()}:{info.portnum} knows no SM (SM LID 0): is an SM running?")
    us = lib.umad_size()
    prefix = struct.pack("=Q", info.gid_prefix)  # libibumad keeps it in network order

    def write(buf, us, guid):
        ctypes.memset(buf, 0, us + _MAD)
        lib.umad_set_addr(buf, info.sm_lid, 1, info.sm_sl, _QP1_QKEY)
        lib.umad_set_pkey(buf, 0)
        struct.pack_into(">BBBB", buf, us, 1, _SA_CLASS, _SA_CLASS_VERSION, _SET)
        struct.pack_into(">H", buf, us + 16, _MCMEMBER_RECORD)
        struct.pack_into(">Q", buf, us + 48, _MCR_CREATE)
        r = us + _PR
        struct.pack_into(">16s8sQ", buf, r, mgid, prefix, guid)  # MGID, PortGID (prefix, GUID)
        struct.pack_into(">I", buf, r + 32, 0x0B1B)  # Q_Key
        struct.pack_into(">H", buf, r + 40, 0xFFFF)  # P_Key: the default partition, full
        struct.pack_into(">B", buf, r + 48, 0x21)  # Scope 2 (link-local), JoinState 1 (full member)

    def read(buf, us, guid, status):
        if status:
            return f"! SA status {status:#06x}"
        (mlid,) = struct.unpack_from(">H", buf, us + _PR + 36)
        return f"{mlid:#06x}"

    def emit(guid, what):
        out.write(f"{guid:#018x} {what}\n")

    _pipeline(lib, fd, agent, guids, write, read, window, emit, say, "joins")


# A fabric round (the watcher's): attributes and their fields, as infiniband-diags names them
_SMI_LID_CLASS, _PMA_CLASS = 0x01, 0x04
_NODE_DESC, _NODE_INFO, _PORT_INFO, _SM_INFO = 0x0010, 0x0011, 0x0015, 0x0020
_CLASS_PORT_INFO, _PORT_COUNTERS, _PORT_COUNTERS_EXT = 0x0001, 0x0012, 0x001D
EXT_WIDTH, EXT_NOIETF = 1 << 9, 1 << 10  # ClassPortInfo CapabilityMask: 64-bit PortCountersExtended (all / 4)
# PortCounters (IBA 16.1.3.5): name, byte offset in the attribute, bits (libibmad's IB_PC_* fields);
# the two 4-bit counters share byte 19 (LocalLinkIntegrity in its high half)
PC_FIELDS = (("SymbolErrorCounter", 4, 16), ("LinkErrorRecoveryCounter", 6, 8), ("LinkDownedCounter", 7, 8),
             ("PortRcvErrors", 8, 16), ("PortRcvRemotePhysicalErrors", 10, 16), ("PortRcvSwitchRelayErrors", 12, 16),
             ("PortXmitDiscards", 14, 16), ("PortXmitConstraintErrors", 16, 8), ("PortRcvConstraintErrors", 17, 8),
             ("LocalLinkIntegrityErrors", 19, 4), ("ExcessiveBufferOverrunErrors", 19, 4), ("VL15Dropped", 22, 16),
             ("PortXmitData", 24, 32), ("PortRcvData", 28, 32), ("PortXmitPkts", 32, 32), ("PortRcvPkts", 36, 32),
             ("PortXmitWait", 40, 32))
# PortCountersExtended (IBA 16.1.4.8): 64 bits each from byte 8; a NOIETF port has the first four only
PCX_FIELDS = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortUnicastXmitPkts",
              "PortUnicastRcvPkts", "PortMulticastXmitPkts", "PortMulticastRcvPkts")
ROUND_ANSWER_MS, ROUND_TRIES = 1000, 2  # a device that does not answer costs a round 2 s, not 8


def _counters(data: bytes) -> list[int]:
    out = []
    for name, off, bits in PC_FIELDS:
        if bits == 4:
            v = data[off] >> 4 if name == "LocalLinkIntegrityErrors" else data[off] & 0xF
        else:
            v = int.from_bytes(data[off:off + bits // 8], "big")
        out.append(v)
    return out


def _round(known: dict[int, int | None], watch: set[tuple[int, int]], ca: str | None, port: int, window: int,
           out, say, answer_ms: int = ROUND_ANSWER_MS, tries: int = ROUND_TRIES,
           always: dict[int, set[int]] | None = None, phase: int = 0, every: int = 1) -> None:
    """One round of the watcher: the fabric discovered by directed route from this port (NodeInfo
    through every port whose link is up, PortInfo of every CA port reached and of the switches'
    ports: of a switch in `always`, its ports listed there and, of the others, those with
    port % every == phase, so every port is asked once in `every` rounds; of any other switch all
    its ports), NodeDescription of devices not in `known`, the counters of every port with a
    link up and of the ports in `watch` (GUID, port) whose link went down (PortCounters, and
    PortCountersExtended where ClassPortInfo says the port has them; `known` GUID ->
    CapabilityMask or None), and the master SM's SMInfo. All in one pipeline, WINDOW MADs in
    flight. Lines out:

        N GUID TYPE NPORTS LOCALPORT PATH     a device (TYPE 1 CA, 2 switch), reached by PATH (0,1,3)
        D GUID DESCRIPTION                    its NodeDescription (devices not known)
        P GUID PORT LID STATE PHYS WIDTH SPEED EXT   PortInfo: state, physical state, widths, speeds
        L GUID PORT GUID PORT                 a cable (from NodeInfo through that port)
        K GUID CAPMASK                        the PMA's ClassPortInfo capability mask
        G GUID PORTGUID                       a CA port's GUID (each CA port reached)
        C GUID PORT V...                      PortCounters (PC_FIELDS' order)
        X GUID PORT V...                      PortCountersExtended (PCX_FIELDS' order)
        S GUID PRIORITY STATE ACTCOUNT LID    the master SM (SMInfo from the SM LID this port knows)
        F WHAT WHERE REASON                   a query that failed (no answer, a bad status)
        T MADS SECONDS                        the MADs sent (retries included) and the time
    """
    from collections import deque
    t0 = time.monotonic()
    lib, info, fd, dr_agent = _open(ca, port, _SMI_DR_CLASS, 1, 0)
    lid_agent = lib.umad_register(fd, _SMI_LID_CLASS, 1, 0, None)
    pma_agent = lib.umad_register(fd, _PMA_CLASS, 1, 0, None)
    if lid_agent < 0 or pma_agent < 0:
        raise SystemExit("cannot register SMP and PMA agents on the umad device")
    nodes: dict[int, dict] = {}
    queue: deque = deque()
    w = out.write

    def node(guid: int) -> dict:
        return nodes.setdefault(guid, {"lids": {}, "want": set(), "caps": known.get(guid), "cpi": False})

    def write(buf, us, key):
        kind = key[0]
        ctypes.memset(buf, 0, us + _MAD)
        if kind in ("ni", "pi", "nd"):  # by directed route: key (kind, path, attribute modifier)
            path = key[1]
            lib.umad_set_addr(buf, 0xFFFF, 0, 0, 0)
            struct.pack_into(">BBBBHBB", buf, us, 1, _SMI_DR_CLASS, 1, 0x01, 0, 0, len(path))
            attr = _NODE_INFO if kind == "ni" else _PORT_INFO if kind == "pi" else _NODE_DESC
            struct.pack_into(">HHI", buf, us + 16, attr, 0, key[2])
            struct.pack_into(">HH", buf, us + 32, 0xFFFF, 0xFFFF)
            if path:
                struct.pack_into(f">{len(path)}B", buf, us + 129, *path)
            return dr_agent
        if kind == "sm":  # LID-routed SMP to the SM
            lib.umad_set_addr(buf, key[1], 0, 0, 0)
            struct.pack_into(">BBBB", buf, us, 1, _SMI_LID_CLASS, 1, 0x01)
            struct.pack_into(">H", buf, us + 16, _SM_INFO)
            return lid_agent
        # the PMA, on QP1: key (kind, LID, port, GUID)
        lib.umad_set_addr(buf, key[1], 1, 0, _QP1_QKEY)
        lib.umad_set_pkey(buf, 0)
        struct.pack_into(">BBBB", buf, us, 1, _PMA_CLASS, 1, 0x01)
        attr = {"cpi": _CLASS_PORT_INFO, "pc": _PORT_COUNTERS, "pcx": _PORT_COUNTERS_EXT}[kind]
        struct.pack_into(">H", buf, us + 16, attr)
        if kind != "cpi":
            struct.pack_into(">BB", buf, us + 64, 0, key[2])  # PortSelect
        return pma_agent

    def read(buf, us, key, status):
        if status:
            return f"! status {status:#06x}"
        return bytes(buf[us + 64:us + _MAD])

    def counters(guid: int) -> None:
        """Ask a device's counters once its LID and PMA capabilities are known."""
        n = nodes[guid]
        sw = n.get("type") == 2
        lid = n["lids"].get(0) if sw else next(iter(n["lids"].values()), None)
        if not n["want"] or not lid:
            return
        if n["caps"] is None:
            if not n["cpi"]:
                n["cpi"] = True
                queue.append(("cpi", lid, 0, guid))
            return
        ext = n["caps"] & (EXT_WIDTH | EXT_NOIETF)
        for p in sorted(n["want"]):
            plid = lid if sw else n["lids"].get(p)
            if plid:
                queue.append(("pc", plid, p, guid))
                if ext:
                    queue.append(("pcx", plid, p, guid))
        n["want"].clear()

    def emit(key, got):
        kind = key[0]
        if isinstance(got, str):  # F KIND GUID:PORT (ni: the port it was asked through) or F sm LID:
            if kind == "ni":
                where = f"{key[3][0]:#x}:{key[3][1]}" if key[3] else "local:"
            elif kind == "sm":
                where = f"{key[1]}:"
            else:
                guid = key[3][0] if kind == "pi" else key[3]
                where = f"{guid:#x}:{key[2] if kind != 'nd' else ''}"
            w(f"F {kind} {where} {got[2:]}\n")
            return
        if kind == "ni":
            path, _, frm = key[1], key[2], key[3]
            ntype, nports = got[2], got[3]
            (guid,) = struct.unpack_from(">Q", got, 12)
            local = got[36]
            if frm is not None:
                w(f"L {frm[0]:#x} {frm[1]} {guid:#x} {local}\n")
            fresh = guid not in nodes or "type" not in nodes[guid]
            n = node(guid)
            if fresh:
                n.update(type=ntype, nports=nports, path=path)
                w(f"N {guid:#x} {ntype} {nports} {local} {','.join(map(str, (0, *path)))}\n")
                if guid not in known:
                    queue.append(("nd", path, 0, guid))
                if ntype == 2:
                    mine = always.get(guid) if always else None
                    for p in range(nports + 1):
                        if mine is None or p == 0 or p in mine or p % every == phase % every:
                            queue.append(("pi", path, p, (guid, local)))
            if ntype != 2:  # a CA: the port reached (each port of a multi-port CA, as it is reached)
                queue.append(("pi", path, local, (guid, None if frm is None else local)))
                w(f"G {guid:#x} {struct.unpack_from('>Q', got, 20)[0]:#x}\n")  # its GUID (an SM's SMInfo names it)
        elif kind == "nd":
            desc = got[:64].split(b"\0", 1)[0].decode(errors="replace")
            w(f"D {key[3]:#x} {' '.join(desc.split())}\n")
        elif kind == "pi":
            path, p, (guid, entry) = key[1], key[2], key[3]
            lid = struct.unpack_from(">H", got, 16)[0]
            state, phys = got[32] & 0xF, got[33] >> 4
            width, speed, ext = got[31], got[35] >> 4, got[62] >> 4
            w(f"P {guid:#x} {p} {lid} {state} {phys} {width} {speed} {ext}\n")
            n = nodes[guid]
            sw = n["type"] == 2
            if p == 0 or not sw:
                n["lids"][p] = lid
            up = state >= 2 or phys == 5  # Init/Armed/Active, or LinkUp
            if p and (up or (guid, p) in watch):
                n["want"].add(p)
            if p and up and sw and p != entry:
                queue.append(("ni", path + (p,), 0, (guid, p)))
            elif p and up and not sw and not path:  # this host's own port: the way out
                queue.append(("ni", (p,), 0, (guid, p)))
            counters(guid)
        elif kind == "cpi":
            guid = key[3]
            caps = struct.unpack_from(">H", got, 2)[0]
            w(f"K {guid:#x} {caps:#x}\n")
            nodes[guid]["caps"] = caps
            counters(guid)
        elif kind == "pc":
            w(f"C {key[3]:#x} {key[2]} {' '.join(map(str, _counters(got)))}\n")
        elif kind == "pcx":
            vals = struct.unpack_from(">8Q", got, 8)
            w(f"X {key[3]:#x} {key[2]} {' '.join(map(str, vals))}\n")
        elif kind == "sm":
            (guid,) = struct.unpack_from(">Q", got, 0)
            (act,) = struct.unpack_from(">I", got, 16)
            w(f"S {guid:#x} {got[20] >> 4} {got[20] & 0xF} {act} {key[1]}\n")

    queue.append(("ni", (), 0, None))
    if info.sm_lid:
        queue.append(("sm", info.sm_lid))
    sent = _pipeline(lib, fd, dr_agent, iter(()), write, read, window, emit, say, "MADs", queue=queue,
                     answer_ms=answer_ms, tries=tries)
    w(f"T {sent} {time.monotonic() - t0:.3f}\n")


def _reset(ports: list[tuple[int, int]], ca: str | None, port: int, window: int, out, say) -> None:
    """Clear the counters of each (LID, port): PortCounters and PortCountersExtended Set with every
    counter selected (what `perfquery -R` and `perfquery -R -x` do): "LID:PORT ok" or "LID:PORT ! why"."""
    lib, info, fd, agent = _open(ca, port, _PMA_CLASS, 1, 0)

    def write(buf, us, key):
        lid, p, attr = key
        ctypes.memset(buf, 0, us + _MAD)
        lib.umad_set_addr(buf, lid, 1, 0, _QP1_QKEY)
        lib.umad_set_pkey(buf, 0)
        struct.pack_into(">BBBB", buf, us, 1, _PMA_CLASS, 1, _SET)
        struct.pack_into(">H", buf, us + 16, attr)
        struct.pack_into(">BBH", buf, us + 64, 0, p, 0xFFFF if attr == _PORT_COUNTERS else 0xFF)  # CounterSelect: all
        if attr == _PORT_COUNTERS:
            struct.pack_into(">B", buf, us + 64 + 18, 0xFF)  # CounterSelect2: PortXmitWait too

    def read(buf, us, key, status):
        return f"! status {status:#06x}" if status else "ok"

    def emit(key, what):
        if key[2] == _PORT_COUNTERS:
            out.write(f"{key[0]}:{key[1]} {what}\n")

    _pipeline(lib, fd, agent, ((lid, p, a) for lid, p in ports for a in (_PORT_COUNTERS, _PORT_COUNTERS_EXT)),
              write, read, window, emit, say, "resets", answer_ms=ROUND_ANSWER_MS, tries=ROUND_TRIES)


def _mgid(text: str) -> bytes:
    """--mgid: a multicast GID as IPv6 text (ff12:601b:ffff::1) -> its 16 bytes."""
    import argparse
    import ipaddress
    try:
        g = ipaddress.IPv6Address(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a GID in IPv6 notation: {text!r}") from None
    if not g.is_multicast:
        raise argparse.ArgumentTypeError(f"not a multicast GID (they start with ff): {text!r}")
    return g.packed


def main(argv: list[str] | None = None) -> int:
    """`python -m ibtool.mad paths|lft|join [--block B] [--mgid GID] [--ca CA] [--port N] [--window W]`:
    HCA port LIDs as LID or LID/LMC (paths), switches' directed routes as dump_fts prints them (lft),
    or port GUIDs to join multicast group --mgid (join) on stdin."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m ibtool.mad", description=main.__doc__)
    ap.add_argument("what", choices=["paths", "lft", "join", "round", "reset"])
    ap.add_argument("--block", type=int, default=0)
    ap.add_argument("--mgid", default="ff12:601b:ffff::1", type=_mgid)  # IPv6 all-nodes, default partition
    ap.add_argument("--ca", default=None)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--window", type=int, default=WINDOW)
    ap.add_argument("--phase", type=int, default=0)
    ap.add_argument("--every", type=int, default=1)
    a = ap.parse_args(argv)
    words = sys.stdin.read().split()

    def say(m):
        print(m, file=sys.stderr, flush=True)
    if a.what == "paths":
        ports = [(int(b), int(lmc or 0)) for b, _, lmc in (w.partition("/") for w in words)]
        _paths(ports, a.ca, a.port, max(1, a.window), sys.stdout, say)
    elif a.what == "round":  # stdin: "K GUID CAPMASK|-" (devices known), "W GUID PORT" (ports to read down),
        known: dict[int, int | None] = {}  # "U GUID P,P,..." (a switch's ports asked every round)
        watch: set[tuple[int, int]] = set()
        always: dict[int, set[int]] = {}
        for tag, x, y in zip(words[::3], words[1::3], words[2::3]):
            if tag == "K":
                known[int(x, 16)] = None if y == "-" else int(y, 16)
            elif tag == "W":
                watch.add((int(x, 16), int(y)))
            elif tag == "U":
                always[int(x, 16)] = {int(p) for p in y.split(",") if p.isdigit()}
        _round(known, watch, a.ca, a.port, max(1, a.window), sys.stdout, say, always=always, phase=a.phase,
               every=max(1, a.every))
    elif a.what == "reset":  # stdin: LID PORT pairs
        nums = [int(x) for x in words]
        _reset(list(zip(nums[::2], nums[1::2])), a.ca, a.port, max(1, a.window), sys.stdout, say)
    elif a.what == "join":
        try:
            guids = [int(w, 16) for w in words]
        except ValueError as e:
            raise SystemExit(f"join: a port GUID is hexadecimal ({e})") from None
        _join(a.mgid, guids, a.ca, a.port, max(1, a.window), sys.stdout, say)
    else:
        _lft_blocks(words, a.block, a.ca, a.port, max(1, a.window), sys.stdout, say)
    sys.stdout.flush()
    return 0


def _child(clients, args: list[str], items: list[str], timeout: float, say, what: str, line) -> None:
    """Run `python -m ibtool.mad ARGS` with `items` on stdin; line(bytes) for each line it prints.
    A child that prints nothing for `timeout` s is stopped."""
    from ibtool.errors import EnvironmentProblem
    from ibtool import children
    p = children.popen([sys.executable, "-m", "ibtool.mad", *args], cwd=clients.work, env=clients.env(),
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(" ".join(items).encode())
    p.stdin.close()
    err: list[str] = []
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    sel.register(p.stderr, selectors.EVENT_READ)
    tail = b""
    try:
        while sel.get_map():
            ready = sel.select(timeout)
            if not ready:
                raise EnvironmentProblem(f"the {what} query (python -m ibtool.mad) printed nothing for {timeout:g} s")
            for key, _ in ready:
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif key.fileobj is p.stderr:
                    for ln in chunk.decode(errors="replace").splitlines():
                        if ln.strip() and "sim_connect" not in ln:
                            (say if what in ln else err.append)(ln.strip())
                else:
                    lines = (tail + chunk).split(b"\n")
                    tail = lines.pop()
                    for ln in lines:
                        line(ln)
        rc = p.wait(timeout=timeout)
    finally:
        sel.close()
        if p.poll() is None:
            p.kill()
            p.wait()
    if rc != 0:
        raise EnvironmentProblem(f"the {what} query failed (exit {rc}): {err[-1] if err else 'no message'}")


def _local(local: tuple[str, ...]) -> list[str]:
    opts = dict(zip(local[::2], local[1::2]))
    return [*(["--ca", opts["-C"]] if "-C" in opts else []), *(["--port", opts["-P"]] if "-P" in opts else [])]


def path_sls(clients, out: Path, fabric, timeout: float, local: tuple[str, ...] = (), progress=None,
             window: int = WINDOW) -> dict:
    """The PathRecord from every HCA port's base LID to every LID of every other HCA port of
    `fabric` (each LID of an LMC range: it has its own path and SL), asked of the SA from
    the port `local` names (the diags' -C CA / -P PORT); written to `out` as saquery prints them.
    `clients`: .work (the child's cwd; umad2sim writes ./sys-<pid> there) and .env(). Raises
    EnvironmentProblem when the SA does not answer (no SM, or every query of some pair went
    unanswered)."""
    from ibtool.errors import EnvironmentProblem
    from ibtool.formats import pathrecord
    ports = sorted({(lid, lmc) for (node, _), (lid, lmc) in fabric.port_lids.items()
                    if not fabric.is_switch(node) and lid})
    sls: dict[tuple[int, int], int] = {}
    none: list[tuple[int, int]] = []
    failed: list[str] = []

    def line(ln: bytes) -> None:
        s, d, what = ln.split(b" ", 2)
        if what == b"-":
            none.append((int(s), int(d)))
        elif what.startswith(b"!"):
            failed.append(f"{int(s)}->{int(d)}: {what[1:].decode().strip()}")
        else:
            sls[int(s), int(d)] = int(what)

    t0 = time.monotonic()
    _child(clients, ["paths", "--window", str(window), *_local(local)],
           [f"{lid}/{lmc}" if lmc else str(lid) for lid, lmc in ports], timeout, progress or (lambda m: None),
           "PathRecords", line)
    dlids = sum(1 << lmc for _, lmc in ports)
    pairs = sum(dlids - (1 << lmc) for _, lmc in ports)
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


def _answers(clients, args: list[str], items: list[str], timeout: float, what: str, key, value) -> tuple[dict, list[str]]:
    """_child over `items` when it answers a line per item, "ITEM VALUE" or "ITEM !reason":
    ({key(ITEM): value(VALUE)}, ["ITEM: reason", ...])."""
    got: dict = {}
    failed: list[str] = []

    def line(ln: bytes) -> None:
        item, ans = ln.decode().split(" ", 1)
        if ans.startswith("!"):
            failed.append(f"{item}: {ans[1:].strip()}")
        else:
            got[key(item)] = value(ans)

    _child(clients, args, items, timeout, lambda m: None, what, line)
    return got, failed


def lft_blocks(clients, paths: list[str], block: int, timeout: float, local: tuple[str, ...] = (),
               window: int = WINDOW) -> dict[str, bytes]:
    """LinearForwardingTable block `block` (LIDs 64*block .. 64*block+63) of the switch at the end
    of each directed route ("0,3,2" as dump_fts prints it): {path: 64 port numbers}. Raises
    EnvironmentProblem naming a switch that did not answer."""
    from ibtool.errors import EnvironmentProblem
    got, failed = _answers(clients, ["lft", "--block", str(block), "--window", str(window), *_local(local)], paths,
                           timeout, "LFT blocks", str, bytes.fromhex)
    if failed:
        raise EnvironmentProblem(f"SubnGet(LinearForwardingTable) block {block} by directed route went unanswered "
                                 f"for {len(failed)} of {len(paths)} switches, e.g. {failed[0]}")
    return got


def mcast_join(clients, mgid: str, guids: list[int], timeout: float, local: tuple[str, ...] = ()) -> dict[int, int]:
    """Join each port GUID to multicast group `mgid` ("ff12:601b:ffff::1") through the SA, from the port
    `local` names (a proxy join for the others): {GUID: MLID}. Raises EnvironmentProblem naming a
    join the SA refused or left unanswered."""
    from ibtool.errors import EnvironmentProblem
    got, failed = _answers(clients, ["join", "--mgid", mgid, *_local(local)], [f"{g:#x}" for g in guids], timeout,
                           "joins", lambda g: int(g, 16), lambda v: int(v, 16))
    if failed:
        raise EnvironmentProblem(f"the SA refused or left unanswered {len(failed)} of {len(guids)} joins to {mgid}, "
                                 f"e.g. {failed[0]}")
    return got


def round_parser():
    """(result, line): feed `line` each line `python -m ibtool.mad round` prints (bytes); `result`
    fills as fabric_round describes. Also reads a round captured to a file (fixtures/watch/)."""
    r: dict = {"nodes": {}, "ports": {}, "links": {}, "caps": {}, "pc": {}, "pcx": {}, "sm": None, "failed": [],
               "port_guids": {}, "mads": 0, "seconds": 0.0}
    nodes, ports, links, pc, pcx = r["nodes"], r["ports"], r["links"], r["pc"], r["pcx"]

    def line(ln: bytes) -> None:
        tag = ln[:1]
        if tag and tag in b"PCXL":  # the many lines: numbers only, read as bytes (int() takes them)
            f = ln.split()
            if tag == b"P":
                ports[int(f[1], 16), int(f[2])] = tuple(map(int, f[3:9]))
            elif tag == b"C":
                pc[int(f[1], 16), int(f[2])] = list(map(int, f[3:]))
            elif tag == b"X":
                pcx[int(f[1], 16), int(f[2])] = list(map(int, f[3:]))
            else:
                a, b = (int(f[1], 16), int(f[2])), (int(f[3], 16), int(f[4]))
                links[a], links[b] = b, a
            return
        f = ln.decode(errors="replace").rstrip("\n").split(" ")
        tag = f[0]
        if tag == "N":
            nodes.setdefault(int(f[1], 16), {"desc": None}).update(
                type=int(f[2]), nports=int(f[3]), local=int(f[4]), path=f[5])
        elif tag == "D":
            nodes.setdefault(int(f[1], 16), {})["desc"] = " ".join(f[2:])
        elif tag == "K":
            r["caps"][int(f[1], 16)] = int(f[2], 16)
        elif tag == "G":
            r["port_guids"][int(f[2], 16)] = int(f[1], 16)
        elif tag == "S":
            r["sm"] = {"guid": int(f[1], 16), "priority": int(f[2]), "state": int(f[3]), "act": int(f[4]),
                       "lid": int(f[5])}
        elif tag == "F":
            who, _, port = f[2].partition(":")
            r["failed"].append((f[1], int(who, 16) if who.startswith("0x") else None,
                                int(port) if port.isdigit() else None, " ".join(f[3:])))
        elif tag == "T":
            r["mads"], r["seconds"] = int(f[1]), float(f[2])
    return r, line


def fabric_round(clients, known: dict[int, int | None], watch: set[tuple[int, int]], timeout: float,
                 local: tuple[str, ...] = (), window: int = WINDOW, always: dict[int, set[int]] | None = None,
                 phase: int = 0, every: int = 1) -> dict:
    """One watcher round from the port `local` names (`_round`): the devices, ports, cables,
    counters and master SM, as plain data:

        {"nodes": {GUID: {"type", "nports", "local", "path", "desc"}},
         "ports": {(GUID, PORT): (LID, STATE, PHYS, WIDTH, SPEED, EXT)},
         "links": {(GUID, PORT): (GUID, PORT)} (both directions), "caps": {GUID: CAPMASK},
         "pc": {(GUID, PORT): [PC_FIELDS' values]}, "pcx": {(GUID, PORT): [PCX_FIELDS' values]},
         "sm": {"guid", "priority", "state", "act", "lid"} or None, "failed": [(WHAT, GUID|None, PORT|None, REASON)],
         "port_guids": {CA PORT GUID: its node's GUID}, "mads": N, "seconds": S}

    `known`: devices whose NodeDescription is not asked again, with their PMA capability mask
    (None: ask it); `watch`: ports whose counters are read even with their link down; `always`:
    a switch's ports asked every round (its others once in `every` rounds, by `phase`). Raises
    EnvironmentProblem when the child cannot work (no local port, no umad)."""
    r, line = round_parser()
    items = [f"K {g:#x} {'-' if c is None else f'{c:#x}'}" for g, c in known.items()]
    items += [f"W {g:#x} {p}" for g, p in sorted(watch)]
    items += [f"U {g:#x} {','.join(map(str, sorted(ps))) or '-'}" for g, ps in (always or {}).items()]
    _child(clients, ["round", "--window", str(window), "--phase", str(phase), "--every", str(every), *_local(local)],
           items, timeout, lambda m: None, "round", line)
    return r


def reset_counters(clients, ports: list[tuple[int, int]], timeout: float, local: tuple[str, ...] = ()) -> list[str]:
    """Clear the counters (PortCounters and PortCountersExtended) of each (LID, port); the ones
    that failed, as "LID:PORT: reason"."""
    got, failed = _answers(clients, ["reset", *_local(local)], [f"{lid} {p}" for lid, p in ports], timeout, "resets",
                           str, str)
    return failed


if __name__ == "__main__":
    sys.exit(main())
