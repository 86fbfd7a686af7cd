"""The C engine without OpenSM (issue 38): libhdorcore.so, the same core the plugin runs inside
OpenSM, on a discovered fabric (ibtool/routing/hdor_c.py, `route hdor --implementation c`).

Its tables, coordinates dump, SL2VL rows and path SLs are the Python reference's on every complete
KNS and fault step of tests/routing/test_hdor_digests.py: digest by digest against the fixture the
reference itself is held to (fixtures/hdor/table-digests.json), so the two implementations keep
being compared. The plugin's own outputs inside OpenSM are compared with it step by step in
tests/test_hdor_fault_matrix.py; the what-if entry point (one fabric, many failure sets) here."""

from __future__ import annotations

import random
import subprocess

import pytest
from hdor_digests import check, lines_digest, path_sls_digest, sl2vl_digest, tables_digest
from hdor_helpers import degrade, kns_with_lids
from support import ibtool
from test_hdor_digests import FAULT_SHAPES, REAL, complete_cases, fault_steps, link_name
from test_hdor_faults import indirect, router_switch_links, routers

from ibtool.fabric import Fabric
from ibtool.formats import ibnetdiscover
from ibtool.routing import hdor, hdor_c
from ibtool.routing.hdor_c import SOURCE_DIR
from ibtool.routing.lids import assign_lids
from ibtool.topologies.fattree import fattree


@pytest.fixture(scope="module", autouse=True)
def core():
    p = subprocess.run(["make", "-s", "-C", str(SOURCE_DIR), "libhdorcore.so"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def digests(r) -> dict:
    out = {"tables": tables_digest(r.tables), "dump": lines_digest(r.dump_lines)}
    if r.sl2vl is not None:
        out["sl2vl"] = sl2vl_digest(r.sl2vl)
        out["path_sls"] = path_sls_digest(r.path_sls)
    return out


@pytest.mark.parametrize("name,make", list(complete_cases()), ids=[c[0] for c in complete_cases()])
def test_complete_kns_as_the_reference(name, make):
    f = make()
    check(f"ref/complete/{name}", digests(hdor_c.compute(f)))


@pytest.mark.parametrize("shape", list(FAULT_SHAPES))
def test_fault_steps_as_the_reference(shape):
    f = kns_with_lids(*FAULT_SHAPES[shape])
    n = 0
    with hdor_c.Engine() as e:  # one engine remembers the complete KNS, as inside OpenSM
        e.load(f)
        e.route()
        for what, nodes, links in fault_steps(f):
            g = degrade(f, nodes=nodes, links=links)
            e.load(g)
            check(f"ref/fault/{shape}/{what}", digests(e.route(baseline=f)))
            n += 1
    assert n > 40


def test_parallel_links_lmc_and_the_real_fixture_as_the_reference():
    for s in (1, 2):
        f = kns_with_lids(4, 2, s, h=1, m=2, lmc=1)
        for li in router_switch_links(f)[::5]:
            g = degrade(f, links=[li])
            check(f"ref/fault/k4n2s{s}m2lmc1/link {link_name(f, li)}", digests(hdor_c.compute(g, baseline=f)))
    f = ibnetdiscover.read(REAL / "ibnetdiscover.out")
    r0 = hdor.compute(f)
    for li in router_switch_links(f, r0.role)[::3]:
        g = degrade(f, links=[li])
        check(f"ref/fault/real-ibsim-k3n2/link {link_name(f, li)}", digests(hdor_c.compute(g, baseline=f)))


def test_result_matches_the_reference_object():
    """Beyond the digests: the roles, coordinates, spread and path SLs the CLI reports."""
    f = kns_with_lids(4, 2, 1, h=1, m=2)
    r, c = hdor.compute(f), hdor_c.compute(f)
    assert (c.k, c.n, c.s, c.lids) == (r.k, r.n, r.s, r.lids)
    assert (c.routers, c.switches, c.hcas) == (r.routers, r.switches, r.hcas)
    assert c.coords == r.coords and c.dim == r.dim and c.spread == r.spread
    g = degrade(f, links=router_switch_links(f)[:2])
    r, c = hdor.compute(g, baseline=(f, r)), hdor_c.compute(g, baseline=f)
    assert c.vls == r.vls and c.extra_hops == r.extra_hops and c.faults == r.faults
    assert c.path_sls == r.path_sls and dict(c.sl2vl) == dict(r.sl2vl)


def fat_tree():
    f = fattree(4, 2, hcas_per_leaf=2)
    assign_lids(f)
    return f


def test_declines_with_the_code_and_reason():
    """A fat tree is no KNS: both decline; the C engine with its code and the plugin's reason."""
    f = fat_tree()
    with pytest.raises(hdor.NotFamily):
        hdor.compute(f)
    with pytest.raises(hdor_c.Declined) as c:
        hdor_c.compute(f)
    assert c.value.code == 0x10
    assert c.value.reason.startswith("4 routers, but k^n = 4^4; not identified at first sight (")


def unreached(g, sm: int) -> list[int]:
    seen, todo = {sm}, [sm]
    while todo:
        for _, y, _ in g.neighbors(todo.pop()):
            if y not in seen:
                seen.add(y)
                todo.append(y)
    return [x for x in range(g.num_nodes) if x not in seen]


def test_what_if_failure_sets_without_reloading():
    """One fabric loaded once, its complete pass kept: each failure set (nodes, cables by an end)
    is routed as the fabric degraded by it (the HCAs of a failed router go with it, as OpenSM no
    longer reaches them), and the fabric is whole again after each."""
    f = kns_with_lids(4, 2, 1)
    sm = next(x for x in range(f.num_nodes) if f.roles[x] == "hca")
    rnd = random.Random(5)
    sets = [((), (li,)) for li in router_switch_links(f)[:4]] + [((x,), ()) for x in indirect(f)[:2]]
    sets += [((routers(f)[-1],), ())]
    sets += [(tuple(rnd.sample(indirect(f), 1)), tuple(rnd.sample(router_switch_links(f), 2))) for _ in range(3)]
    with hdor_c.Engine() as e:
        e.load(f)
        whole = digests(e.route())
        for nodes, links in sets:
            ends = [(f.link_a[li], f.link_pa[li]) for li in links]
            got = digests(e.route_failures(nodes, ends, sm=sm))
            g = degrade(f, nodes=nodes, links=links)
            gone = unreached(g, g.by_guid(f.guids[sm]))  # what OpenSM no longer sees
            g = degrade(f, nodes=[*nodes, *(f.by_guid(g.guids[x]) for x in gone)], links=links)
            assert got == digests(hdor_c.compute(g, baseline=f)), (nodes, links)
        assert digests(e.route()) == whole  # repaired: the complete tables again


def without_cable(text: str, a: str, pa: int, b: str, pb: int) -> str:
    """An ibnetdiscover dump with the cable node a port pa - node b port pb gone (its two lines),
    as discovery reports a cable that is down."""
    out, node = [], None
    for ln in text.splitlines():
        if ln.startswith(("Switch", "Ca")):
            node = ln.split('"')[1]
        if (node, ln.split("]")[0]) in ((a, f"[{pa}"), (b, f"[{pb}")):
            continue
        out.append(ln)
    return "\n".join(out) + "\n"


def test_route_hdor_implementation_c_writes_the_same_files(tmp_path):
    """`route hdor --implementation c` and the reference write byte-identical files, fault-free and
    after a cable failure (--baseline), on the real ibsim fixture."""
    now = tmp_path / "now.out"
    now.write_text(without_cable((REAL / "ibnetdiscover.out").read_text(), "S-0002c90000000110", 2,
                                 "S-0002c90000000150", 3))
    assert len(ibnetdiscover.read(now).link_a) == len(ibnetdiscover.read(REAL / "ibnetdiscover.out").link_a) - 1
    outs = {}
    for impl in ("python", "c"):
        d = tmp_path / impl
        d.mkdir()
        for case, args in (("whole", []), ("fault", ["--baseline", REAL / "ibnetdiscover.out"])):
            fab = REAL / "ibnetdiscover.out" if case == "whole" else now
            ibtool("route", "hdor", "--fabric", fab, "--out", d / f"{case}.lft", "--dump", d / f"{case}.dump",
                   "--sl2vl", d / f"{case}.sl2vl", "--path-sls", d / f"{case}.paths", "--implementation", impl,
                   *args, check=0)
        outs[impl] = {p.name: p.read_bytes() for p in sorted(d.iterdir())}
    assert outs["c"] == outs["python"]
    assert len(outs["c"]) == 8


def test_tables_written_by_threads_at_offsets_or_into_a_pipe(tmp_path):
    """The LFT file is written by one thread per core, each at its blocks' offset, into a regular file
    (from the descriptor's offset on: what was written before stays, what comes after follows), and
    by one thread into a pipe: the same bytes as the reference's writer."""
    import os
    import threading

    import numpy as np

    from ibtool.formats import lft
    from ibtool.routing.hdor_c import _U64, _ptr

    f = ibnetdiscover.read(REAL / "ibnetdiscover.out")
    guids = hdor.port_guids(f)
    ref = tmp_path / "ref.lft"
    lft.write_file_engine(hdor.compute(f).tables, ref, guids)
    want = ref.read_bytes()
    with hdor_c.Engine() as e:
        e.load(f)
        e.route()
        e.write_lft(tmp_path / "c.lft", guids)
        assert (tmp_path / "c.lft").read_bytes() == want
        pg = np.zeros(max(guids) + 1, dtype=np.uint64)
        for lid, g in guids.items():
            pg[lid] = g
        fd = os.open(tmp_path / "framed.lft", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.write(fd, b"before\n")
        assert e._lib.hdor_off_write_lft(e._h, fd, _ptr(pg, _U64), len(pg)) == 0
        os.write(fd, b"after\n")
        os.close(fd)
        assert (tmp_path / "framed.lft").read_bytes() == b"before\n" + want + b"after\n"
        r, w = os.pipe()
        got = []
        reader = threading.Thread(target=lambda: got.append(b"".join(iter(lambda: os.read(r, 1 << 16), b""))))
        reader.start()
        assert e._lib.hdor_off_write_lft(e._h, w, _ptr(pg, _U64), len(pg)) == 0
        os.close(w)
        reader.join()
        os.close(r)
        assert got == [want]


def test_route_hdor_implementation_c_declines_like_the_reference(tmp_path):
    """A real two-switch NDR fabric is no KNS: one line naming the reason, exit 1, no file."""
    ndr = REAL.parent / "ndr-2sw.ibnetdiscover"
    for impl in ("python", "c"):
        r = ibtool("route", "hdor", "--fabric", ndr, "--out", tmp_path / "x.lft", "--implementation", impl, check=1)
        assert r.stderr.splitlines()[-1].startswith("ibtool: error: hdor: not a KNS fabric: "), r.stderr
        assert "Traceback" not in r.stderr
        assert not (tmp_path / "x.lft").exists()


# ------------------------------------------------------------------ decline codes (issue 38, item 4)

def star(arms: int) -> Fabric:
    """A router in `arms` single-switch networks, each with one more router: n beyond hdor's 16."""
    f = Fabric("star")
    r0 = f.add_switch("R0", 36, role="router")
    f.add_link(r0, f.add_hca("H0"))
    for i in range(arms):
        s = f.add_switch(f"S{i}", 36)
        r = f.add_switch(f"R{i + 1}", 36, role="router")
        f.add_link(r, f.add_hca(f"H{i + 1}"))
        f.add_link(r0, s)
        f.add_link(r, s)
    assign_lids(f)
    return f


def declined(f, vls: int = 8, baseline=None, description=None) -> hdor_c.Declined:
    with pytest.raises(hdor_c.Declined) as e:
        hdor_c.compute(f, baseline=baseline, vls=vls, description=description)
    return e.value


def test_every_decline_class_has_its_code(tmp_path):
    """docs/plugin.md "Log lines": a class of decline, a code of its own (not HD10 for all)."""
    f = kns_with_lids(4, 2)
    cases = {}
    cases[0x10] = declined(fat_tree())  # the structure is no KNS
    lines = [x for x in indirect(f) if f.names[x].startswith("S[0,")][:2]
    cases[0x11] = declined(degrade(f, nodes=lines))  # two lines of one dimension: which routers where?
    cases[0x12] = declined(star(17))  # a router in 17 networks: n beyond 16
    desc = tmp_path / "other.conf"  # a description of another KNS
    ibtool("route", "hdor", "--fabric", REAL / "ibnetdiscover.out", "--out", tmp_path / "x.lft", "--kns-conf", desc,
           check=0)
    cases[0x20] = declined(f, description=desc)
    bad = tmp_path / "bad.conf"
    bad.write_text(desc.read_text().replace("[0,0]", "[0,9]", 1))
    cases[0x05] = declined(f, description=bad)  # not in the format (coordinate 9 of k = 3)
    cases[0x04] = declined(f, description=desc / "hdor.conf")  # cannot be read (not a directory)
    swapped = tmp_path / "swapped.conf"  # a router's place given to another: not a KNS labelling
    text = desc.read_text().split("\n")
    r = [i for i, ln in enumerate(text) if ln.startswith("router ")]
    a, b = text[r[0]].split(" [")[1].split("]")[0], text[r[1]].split(" [")[1].split("]")[0]
    text[r[0]] = text[r[0]].replace(f"[{a}]", f"[{b}]")
    swapped.write_text("\n".join(text))
    g = ibnetdiscover.read(REAL / "ibnetdiscover.out")
    cases[0x21] = declined(g, description=swapped)
    rsl = router_switch_links(f)
    cases[0x31] = declined(degrade(f, links=rsl[:1]), vls=1, baseline=f)  # a detour needs 2 VLs, 1 offered
    for code, e in cases.items():
        assert e.code == code, (hex(code), hex(e.code), e.reason)
    assert len({e.reason for e in cases.values()}) == len(cases)


def test_a_device_hdor_does_not_route_has_its_code():
    """An InfiniBand router node (NodeType 3) in the subnet: HD13 (the offline API takes it as
    OpenSM's adapter hands it over)."""
    import ctypes
    import numpy as np
    f = kns_with_lids(3, 2)
    lib = hdor_c._load()
    h = lib.hdor_off_new(8)
    try:
        types = np.asarray([*f.types, 3], dtype=np.uint8)
        nports = np.asarray([*f.nports, 2], dtype=np.uint8)
        guids = np.asarray([*f.guids, 0x2c9000000fff0], dtype=np.uint64)
        names = (ctypes.c_char_p * len(types))(*[n.encode() for n in f.names], b"router")
        assert lib.hdor_off_fabric(h, len(types), hdor_c._ptr(types, hdor_c._U8), hdor_c._ptr(nports, hdor_c._U8),
                                   hdor_c._ptr(guids, hdor_c._U64), names) == 0
        assert lib.hdor_off_lids(h, 0, None, None, None, None, None) == 0
        assert lib.hdor_off_route(h, None) == -1
        code = ctypes.c_int(0)
        reason = lib.hdor_off_reason(h, ctypes.byref(code)).decode()
        assert code.value == 0x13 and "is neither a switch nor an HCA" in reason
    finally:
        lib.hdor_off_free(h)
