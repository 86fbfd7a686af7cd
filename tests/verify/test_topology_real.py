"""verify topology on real public ibnetdiscover dumps (fixtures/real/public, provenance in its
README): hosts swapped, degraded links, tool noise and output variants, partial discovery,
loopback cables and repeated descriptions (issue 8, items 1, 4, 5, 6, 7).

The base files are real; every fault is made by the test code on a copy.
"""

import json
import re

import pytest

from support import FIXTURES, ibtool
from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.formats import ibnetdiscover, node_name_map
from ibtool.verify.topology import compare

PUB = FIXTURES / "real" / "public"
FDR = PUB / "fdr10-sx6036-8sw.ibnetdiscover"  # 8 Mellanox SX6036 (FDR10 ISLs), 144 QDR HCAs
UFM = PUB / "switchib-ufm-lab.ibnetdiscover"  # SwitchIB + SX6012 lab: tool noise, loopback cables
VOLTAIRE = PUB / "voltaire-manpage-g.ibnetdiscover"  # -g output, repeated descriptions, 1x ends
PORTS = PUB / "osc-edr-ports.ibnetdiscover-p"  # `ibnetdiscover -p`, a partial excerpt


# ------------------------------------------------------------------------- mutations of real text

_CA_PORT = re.compile(r'^(\[\d+\]\([0-9a-f]+\)\s*)("S-[0-9a-f]+"\[\d+\])(\s*#\s*lid \d+ lmc \d+ )("[^"]*" lid \d+)(.*)$')


def swap_hosts(text: str, a: str, b: str) -> str:
    """Swap the cables of the hosts whose descriptions are a and b (each a one-port CA): at the
    switch ports, and in each CA's own record."""
    lines = text.split("\n")
    sw = {d: next(k for k, ln in enumerate(lines) if ln.startswith("[") and f'# "{d}"' in ln) for d in (a, b)}
    ca = {}
    for d in (a, b):
        head = next(k for k, ln in enumerate(lines) if ln.startswith("Ca") and ln.rstrip().endswith(f'# "{d}"'))
        ca[d] = head + 1
    pa, ra = lines[sw[a]].split("]", 1)
    pb, rb = lines[sw[b]].split("]", 1)
    lines[sw[a]], lines[sw[b]] = pa + "]" + rb, pb + "]" + ra
    ma, mb = _CA_PORT.match(lines[ca[a]]), _CA_PORT.match(lines[ca[b]])
    lines[ca[a]] = ma.group(1) + mb.group(2) + ma.group(3) + mb.group(4) + ma.group(5)
    lines[ca[b]] = mb.group(1) + ma.group(2) + mb.group(3) + ma.group(4) + mb.group(5)
    return "\n".join(lines)


def set_rate(text: str, desc: str, rate: str, switch_end=True, ca_end=True) -> str:
    """Give the cable of host `desc` another rate, at either or both ends."""
    lines = text.split("\n")
    for k, ln in enumerate(lines):
        if switch_end and ln.startswith("[") and f'# "{desc}"' in ln:
            lines[k] = re.sub(r"\d+x[A-Z0-9]+$", rate, ln.rstrip())
        if ca_end and ln.startswith("Ca") and ln.rstrip().endswith(f'# "{desc}"'):
            lines[k + 1] = re.sub(r"\d+x[A-Z0-9]+$", rate, lines[k + 1].rstrip())
    return "\n".join(lines)


def set_isl_rate(text: str, sw_desc: str, port: int, rate: str) -> str:
    """Give the inter-switch cable at port `port` of switch `sw_desc` another rate at both ends."""
    f = ibnetdiscover.read(FDR)
    i = f.index(sw_desc)
    j, q = f.peer(i, port)
    ids = {n: f"S-{f.guids[n]:016x}" for n in (i, j)}
    lines, cur = text.split("\n"), None
    for k, ln in enumerate(lines):
        m = re.match(r'^Switch\s+\d+\s+"([^"]+)"', ln)
        if m:
            cur = m.group(1)
        if (cur, ln.split("]", 1)[0]) in ((ids[i], f"[{port}"), (ids[j], f"[{q}")):
            lines[k] = re.sub(r"\d+x[A-Z0-9]+$", rate, ln.rstrip())
    return "\n".join(lines)


def drop_record(text: str, desc: str) -> str:
    """Remove a device's record (a partial discovery): its peers still name it."""
    blocks = text.split("\n\n")
    return "\n\n".join(b for b in blocks if f'# "{desc}" enhanced port 0' not in b and
                       not re.search(rf'^(Ca|Switch).*# "{re.escape(desc)}"\s*$', b, re.MULTILINE))


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def plan_names(f: Fabric) -> dict[int, str]:
    """How a site plan names this fabric: switches SW-ib5, hosts H[ib5,1] (leaf, port)."""
    out = {}
    for i in range(f.num_nodes):
        if f.types[i] == SWITCH:
            out[i] = "SW-" + f.names[i].split(";")[1].split(":")[0]
    for i in range(f.num_nodes):
        if f.types[i] == CA:
            p, j, q = f.neighbors(i)[0]
            out[i] = f"H[{out[j][3:]},{q}]" + (f"p{p}" if p != 1 else "")
    return out


def site_plan(tmp_path, keep_guids=False, rate="4xQDR"):
    """The real fabric as its site plan would describe it: plan names, and (unless keep_guids)
    GUIDs of its own, written as `ibtool topo` writes plans."""
    f = ibnetdiscover.read(FDR)
    names = plan_names(f)
    p = Fabric("site-plan")
    for i in range(f.num_nodes):
        keep = keep_guids is True or (keep_guids and i in keep_guids)
        p.add_node(f.types[i], names[i], f.nports[i], f.roles[i], guid=f.guids[i] if keep else None)
    for a, pa, b, pb, r in zip(f.link_a, f.link_pa, f.link_b, f.link_pb, f.link_rate):
        p.add_link(a, b, pa, pb, rate=r if rate == "dump" else None)
    out = tmp_path / "site-plan.net"
    ibnetdiscover.write(p, out, rate=None if rate == "dump" else rate)
    return out, f, names


def topo(*args, code):
    r = ibtool("verify", "topology", *args, "--json")
    assert r.returncode == code, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout), r.stderr


# ------------------------------------------------------------------------- 1. hosts swapped

@pytest.mark.parametrize("a,b,where", [
    ("stage114 mlx4_0", "stage112 mlx4_0", ("MF0;ib5:SX6036/U1 port 2", "MF0;ib5:SX6036/U1 port 1")),  # same leaf
    ("stage114 mlx4_0", "stage66 mlx4_0", ("MF0;ib3:SX6036/U1 port 1", "MF0;ib5:SX6036/U1 port 1")),  # two leaves
])
def test_two_hosts_swapped_are_miswired_by_their_descriptions(tmp_path, a, b, where):
    disc = write(tmp_path, "swapped.ibnetdiscover", swap_hosts(FDR.read_text(), a, b))
    rep, _ = topo("--plan", FDR, "--discovered", disc, code=1)
    assert rep["verdict"] == "MISWIRED" and rep["matching"]["identities"] == {"names": 152}
    assert rep["correct_cables"] == 190 and rep["counts"]["miswired_cables"] == 2
    # one fault, one action: the swap of their cables, naming both hosts (no 'move device' rows that
    # would undo it)
    assert rep["misplaced_devices"] == [] and [fx["kind"] for fx in rep["fixes"]] == ["swap"]
    fx = rep["fixes"][0]
    assert sorted(fx["hosts"]) == sorted([a, b]) and f"{a} is on {where[0]}" in fx["text"]
    assert fx["text"].startswith(f"hosts ") and " are swapped " in fx["text"]
    human = ibtool("verify", "topology", "--plan", FDR, "--discovered", disc)
    assert "devices matched by names (152) and structure" in human.stdout
    assert f"{a} is on {where[0]}" in human.stdout and "hosts not where planned" not in human.stdout


def test_swapped_hosts_against_a_site_plan_need_an_identity(tmp_path):
    """A plan with its own names and GUIDs: structure alone cannot see two hosts swapped (the
    fabric is the plan up to renaming); a host map, a node-name-map or shared GUIDs can."""
    plan, real, names = site_plan(tmp_path)
    disc = write(tmp_path, "swapped.ibnetdiscover", swap_hosts(FDR.read_text(), "stage114 mlx4_0", "stage112 mlx4_0"))
    rep, _ = topo("--plan", plan, "--discovered", disc, code=0)
    assert rep["matching"]["identities"] == {} and rep["matching"]["method"].startswith("structure")

    hosts = tmp_path / "hosts.txt"
    hosts.write_text("# plan name  host\n" + "".join(
        f'{names[i]} {real.names[i].split()[0]}\n' for i in range(real.num_nodes) if real.types[i] == CA))
    rep, _ = topo("--plan", plan, "--discovered", disc, "--host-map", hosts, code=1)
    assert rep["matching"]["identities"] == {"host map": 144}
    assert rep["misplaced_devices"] == [] and len(rep["fixes"]) == 1
    assert rep["fixes"][0]["text"].startswith(
        "hosts H[ib5,1] (stage114 mlx4_0) and H[ib5,2] (stage112 mlx4_0) are swapped (H[ib5,1] (stage114 mlx4_0) is "
        "on SW-ib5 port 2; H[ib5,2] (stage112 mlx4_0) is on SW-ib5 port 1); fix: ") or \
        rep["fixes"][0]["text"].startswith(
        "hosts H[ib5,2] (stage112 mlx4_0) and H[ib5,1] (stage114 mlx4_0) are swapped (H[ib5,2] (stage112 mlx4_0) is "
        "on SW-ib5 port 1; H[ib5,1] (stage114 mlx4_0) is on SW-ib5 port 2); fix: ")
    assert rep["warnings"] == []

    nnm = tmp_path / "node-name-map"
    nnm.write_text("".join(f'{real.guids[i]:#018x} "{names[i]}"\n' for i in range(real.num_nodes)))
    rep, _ = topo("--plan", plan, "--discovered", disc, "--node-name-map", nnm, code=1)
    assert rep["matching"]["method"] == "node-name-map + structure" and rep["counts"]["misplaced_devices"] == 0
    assert "H[ib5,1] is on SW-ib5 port 2" in rep["fixes"][0]["text"] and len(rep["fixes"]) == 1

    plan_g, _, _ = site_plan(tmp_path, keep_guids=True)
    rep, _ = topo("--plan", plan_g, "--discovered", disc, code=1)
    assert rep["matching"]["identities"] == {"GUIDs": 152} and rep["fixes"][0]["hosts"] == ["H[ib5,1]", "H[ib5,2]"]
    # a few GUIDs in common (made-up plan GUIDs that happen to exist) identify nothing
    plan_few, _, _ = site_plan(tmp_path, keep_guids={0, 1, 2})
    rep, _ = topo("--plan", plan_few, "--discovered", disc, code=0)
    assert rep["matching"]["identities"] == {}


def test_host_map_errors_name_file_and_line(tmp_path):
    plan, _, _ = site_plan(tmp_path)
    for text, msg in (('H[ib5,1] node1 extra\n', "expected '<plan name> <host, description or GUID>'"),
                      ('H[nowhere,1] stage114\n', "'H[nowhere,1]' is not a device of the plan"),
                      ('H[ib5,1] 0xZZ\n', "not a GUID: '0xZZ'"),
                      ('H[ib5,1] a\nH[ib5,1] b\n', "hosts.txt:3: H[ib5,1] mapped twice (first at line 2)")):
        hosts = write(tmp_path, "hosts.txt", "# site\n" + text)
        r = ibtool("verify", "topology", "--plan", plan, "--discovered", FDR, "--host-map", hosts)
        assert r.returncode == 2 and r.stdout == "", r.stderr
        assert r.stderr.count("\n") == 1 and msg in r.stderr and f"{hosts}:" in r.stderr


# ------------------------------------------------------------------------- 4. degraded links

def test_degraded_against_the_plan_rate_is_its_own_verdict(tmp_path):
    slow = write(tmp_path, "slow.ibnetdiscover", set_rate(FDR.read_text(), "stage114 mlx4_0", "4xDDR"))
    rep, _ = topo("--plan", FDR, "--discovered", slow, code=4)
    assert rep["verdict"] == "DEGRADED" and rep["counts"]["miswired_cables"] == 0
    (d,) = rep["degraded_links"]
    assert d["rate"] == "4xDDR" and d["expected"] == "4xQDR" and "(the plan says 4xQDR)" in d["text"]
    assert "stage114 mlx4_0 port 1" in d["text"] and rep["rate_mismatches"] == []
    rep, _ = topo("--plan", FDR, "--discovered", slow, "--fail-on", "miswire,missing", code=0)
    assert rep["ok"] and rep["verdict"] == "PASS" and len(rep["degraded_links"]) == 1
    # a plan that lists that host at DDR: the DDR host is as planned
    rep, _ = topo("--plan", slow, "--discovered", slow, code=0)
    assert rep["degraded_links"] == []


def test_without_plan_rates_the_lower_capability_of_both_ends_counts(tmp_path):
    plan, _, _ = site_plan(tmp_path, rate=None)
    text = set_rate(FDR.read_text(), "stage114 mlx4_0", "4xDDR")  # a DDR host: its only link is DDR
    text = set_isl_rate(text, "MF0;ib5:SX6036/U1", 21, "4xQDR")  # an ISL between two FDR10 switches
    disc = write(tmp_path, "disc.ibnetdiscover", text)
    rep, _ = topo("--plan", plan, "--discovered", disc, code=4)
    (d,) = rep["degraded_links"]
    assert d["rate"] == "4xQDR" and d["expected"] == "4xFDR10" and "both ends run 4xFDR10 on other links" in d["text"]
    assert set(d["ends"]) == {"SW-ib5[21]", "SW-ib8[26]"}


def test_real_hosts_of_mixed_rates_are_not_degraded():
    """The real UFM lab runs SDR, QDR, FDR and EDR hosts on one fabric: with no plan rate, a host
    is not 'degraded' for running at what its own port runs (the old majority rule said so)."""
    f = ibnetdiscover.read(UFM)
    plan = ibnetdiscover.read(UFM)
    plan.link_rate[:] = [None] * plan.num_links
    rep = compare(plan, f).as_dict()
    assert sorted(set(f.link_rate)) == ["4xEDR", "4xFDR", "4xQDR", "4xSDR"]
    assert rep["degraded_links"] == []


def test_ends_that_disagree_are_a_finding(tmp_path):
    """Real: in the Voltaire man-page fabric two links run 4x at one end and 1x at the other."""
    rep, _ = topo("--plan", VOLTAIRE, "--discovered", VOLTAIRE, code=4)
    assert [m["rates"] for m in rep["rate_mismatches"]] == [["4xSDR", "1xSDR"], ["4xSDR", "1xSDR"]]
    assert {d["rate"] for d in rep["degraded_links"]} == {"1xSDR"}
    assert "SW-6IB4 Voltaire port 1 reports 1xSDR" in rep["rate_mismatches"][0]["text"]
    # and made on a copy of another real dump: one end of one host link trained 1x
    one = write(tmp_path, "one-end.ibnetdiscover",
                set_rate(FDR.read_text(), "stage66 mlx4_0", "1xQDR", switch_end=False))
    rep, _ = topo("--plan", FDR, "--discovered", one, code=4)
    (m,) = rep["rate_mismatches"]
    assert m["rates"] == ["4xQDR", "1xQDR"] and "stage66 mlx4_0 port 1 reports 1xQDR" in m["text"]
    assert rep["degraded_links"][0]["rate"] == "1xQDR"


# ------------------------------------------------------------------------- 5. real dump variants

def test_tool_noise_is_skipped_with_a_warning(tmp_path):
    r = ibtool("verify", "topology", "--plan", UFM, "--discovered", UFM, "--json")
    assert r.returncode == 1, r.stderr  # the loopbacks below, not a parse error
    assert "ibtool: warning: " in r.stderr and "skipped 1 line of tool noise (first at line 1: " \
                                                  "'src/query_smp.c:195; umad (DR path" in r.stderr
    assert any("tool noise" in w for w in json.loads(r.stdout)["warnings"])
    # stderr of a failing run saved with the dump (2>&1), at the top and between records
    lines = FDR.read_text().split("\n")
    noisy = (["ibwarn: [4150] mad_rpc_open_port: client_register for mgmt 1 failed",
              ("src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,21,31 Attr 0x11:0) bad status 110; "
               "Connection timed out")] + lines[:200]
             + ["ibwarn: [4150] smp_query_via: ignoring bad status"] + lines[200:])
    f = ibnetdiscover.read(write(tmp_path, "noisy.ibnetdiscover", "\n".join(noisy)))
    assert f.discovery["skipped_lines"] == 3 and "skipped 3 lines of tool noise (first at line 1: " \
                                                   "'ibwarn: [4150]" in f.discovery["warnings"][0]
    assert ibnetdiscover.read(FDR).link_set() == f.link_set()


def test_grouping_output_with_chassis_headers(tmp_path):
    """`ibnetdiscover -g`: the real Voltaire output (Non-Chassis Nodes), and the same fabric with
    its ISR9024 printed as a chassis the way infiniband-diags' dump_topology does."""
    plain = ibnetdiscover.read(VOLTAIRE)
    assert plain.count(kind=SWITCH) == 2 and plain.count(kind=CA) == 4 and plain.num_links == 7
    text = VOLTAIRE.read_text().replace("\nNon-Chassis Nodes\n", "\nChassis 1 (guid 0x5442ba00003000)\n\n# Spine Nodes\n"
                                        "\n# Line Nodes", 1)
    text = text.replace("sysimgguid=0x5442ba00003000\n", "sysimgguid=0x5442ba00003000\t\t# Chassis 1\n", 1)
    text = text.replace("switchguid=0x5442ba00003080(5442ba00003080)\n",
                        "switchguid=0x5442ba00003080(5442ba00003080)\t# ISR9024 Line 1\n", 1)
    text = text.replace('[22]    "H-0008f10403961354"[1]', '[22][ext 22]    "H-0008f10403961354"[1]', 1)
    text = text.replace("\nvendid=0x8f1\ndevid=0x5a05", "\n# Chassis Switches\n\n# Chassis CAs\n\nNon-Chassis Nodes\n"
                        "\nvendid=0x8f1\ndevid=0x5a05", 1)
    g = ibnetdiscover.read(write(tmp_path, "grouped.ibnetdiscover", text))
    assert g.link_set() == plain.link_set() and g.names == plain.names


def test_full_output_and_whitespace_lines(tmp_path):
    """`ibnetdiscover -f` appends ' s=.. w=.. v=..' to port lines; the real Sun DCS 36 dump has a
    line holding one space."""
    full = re.sub(r"(\d+x[A-Z0-9]+)$", r"\1 s=4 w=2 v=4", FDR.read_text(), flags=re.MULTILINE)
    f = ibnetdiscover.read(write(tmp_path, "full.ibnetdiscover", full))
    assert f.link_rate == ibnetdiscover.read(FDR).link_rate
    sun = ibnetdiscover.read(PUB / "sun-dcs36-qdr.ibnetdiscover")
    assert sun.names == ["Sun DCS 36 QDR switch localhost", "nsn33-43 HCA-1"] and sun.link_rate == ["4xQDR"]


def test_router_records_are_skipped_with_a_warning(tmp_path):
    """An IB router (Rt, as ibnetdiscover prints one for a Quantum-2 Q3400 router port) cabled to
    a free port of ib7: the subnet is verified, the router and its cable skipped with a warning."""
    text = FDR.read_text().replace(
        '[11]\t"H-f452140300067e10"[2]',
        '[10]\t"R-b8e924030000b928"[2](b8e924030000b929) \t\t# "MF0;mamba-2132:Q3400_RA/U2/RT" lid 9 4xQDR\n'
        '[11]\t"H-f452140300067e10"[2]', 1)
    text += ('\nvendid=0x2c9\ndevid=0xc839\nsysimgguid=0xb8e924030000b900\nrtguid=0xb8e924030000b928\n'
             'Rt\t8 "R-b8e924030000b928"\t\t# "MF0;mamba-2132:Q3400_RA/U2/RT"\n'
             '[2](b8e924030000b929) \t"S-f4521403007eaa70"[10]\t\t# lid 9 lmc 0 "MF0;ib7:SX6036/U1" lid 18 4xQDR\n')
    disc = write(tmp_path, "router.ibnetdiscover", text)
    assert '"R-b8e924030000b928"[2]' in text and text.count("\nRt\t") == 1
    rep, err = topo("--plan", FDR, "--discovered", disc, code=0)
    assert rep["correct_cables"] == 192 and "skipped 1 router record (Rt, first at line " in err


def test_ports_report_and_its_partial_discovery():
    """`ibnetdiscover -p` (real, an excerpt): read as a fabric; the switch seen only as a peer is
    a finding, not an error."""
    f = ibnetdiscover.read(PORTS)
    o1 = f.index("o0001 HCA-1")
    sw = f.index("ib-i1l1s01")
    assert f.peer(o1, 1) == (sw, 10) and f.port_lids[(o1, 1)] == (134, 0) and f.port_lids[(sw, 0)] == (1719, 0)
    assert f.port_guid(o1, 1) == 0x7CFE9003003B4BDE and f.link_rate[0] == "4xEDR"
    assert f.nports[f.index("ib-i7l2s01")] == 80  # a port with nothing cabled still names its switch
    rep, err = topo("--plan", PORTS, "--discovered", PORTS, code=1)
    assert rep["verdict"] == "MISWIRED" and [d["device"] for d in rep["partial_discovery"]] == ["ib-i1l2s01"]
    assert "only as the peer of ib-i1l1s01 port 1" in rep["partial_discovery"][0]["text"]
    assert "partial discovery: 1 device seen only as the peer" in err
    topo("--plan", PORTS, "--discovered", PORTS, "--fail-on", "miswire,degraded", code=0)


def test_a_partial_discovery_in_a_dump_is_a_finding(tmp_path):
    part = write(tmp_path, "partial.ibnetdiscover", drop_record(FDR.read_text(), "MF0;ib8:SX6036/U1"))
    assert "MF0;ib8:SX6036/U1\" enhanced" not in part.read_text()
    rep, _ = topo("--plan", FDR, "--discovered", part, code=1)
    assert rep["correct_cables"] == 192  # every cable of ib8 is known from its other end
    (p,) = rep["partial_discovery"]
    assert p["device"] == "MF0;ib8:SX6036/U1" and p["guid"] == "0xf4521403007ea570"
    assert rep["counts"]["miswired_cables"] == rep["counts"]["missing_cables"] == 0


def test_unknown_peer_in_a_hand_written_file_is_still_an_error(tmp_path):
    bad = write(tmp_path, "bad.net", 'Switch 8 "Switch1"\n[1] "Hca9"[1]\n')
    with pytest.raises(InputError, match=r"bad.net:2: port 1 of 'Switch1' links to unknown node 'Hca9'"):
        ibnetdiscover.read(bad)


# ------------------------------------------------------------------------- 6. loopback cables

def test_real_loopback_cables_are_findings_and_the_rest_is_verified():
    rep, _ = topo("--plan", UFM, "--discovered", UFM, code=1)
    assert [lb["ports"] for lb in rep["loopbacks"]] == [[1, 2], [19, 21], [29, 30]]
    assert rep["loopbacks"][0]["text"].startswith("loopback cable: SwitchIB Mellanox Technologies port 1 is cabled "
                                                 "to its own port 2")
    assert rep["correct_cables"] == rep["plan"]["cables"] == 7 and rep["matching"]["matched_devices"] == 8


def test_a_loopback_made_on_a_leaf(tmp_path):
    """Two hosts' cables on ib5 ports 1 and 2 replaced by one cable from port 1 to port 2."""
    text = FDR.read_text()
    text = re.sub(r'^\[1\]\t"H-24be05ffff980030".*$', '[1]\t"S-f4521403001165a0"[2]\t\t# "MF0;ib5:SX6036/U1" lid 128 4xQDR',
                  text, count=1, flags=re.MULTILINE)
    text = re.sub(r'^\[2\]\t"H-24be05ffff982d50".*$', '[2]\t"S-f4521403001165a0"[1]\t\t# "MF0;ib5:SX6036/U1" lid 128 4xQDR',
                  text, count=1, flags=re.MULTILINE)
    text = drop_record(drop_record(text, "stage114 mlx4_0"), "stage112 mlx4_0")
    rep, _ = topo("--plan", FDR, "--discovered", write(tmp_path, "loop.ibnetdiscover", text), code=1)
    (lb,) = rep["loopbacks"]
    assert lb["ends"] == ["MF0;ib5:SX6036/U1[1]", "MF0;ib5:SX6036/U1[2]"]
    assert "the plan wants MF0;ib5:SX6036/U1 port 1 cabled to stage114 mlx4_0 port 1" in lb["text"]
    assert sorted(d["device"] for d in rep["missing_devices"]) == ["stage112 mlx4_0", "stage114 mlx4_0"]
    assert rep["correct_cables"] == 190


# ------------------------------------------------------------------------- 7. repeated descriptions

def test_repeated_descriptions_get_unique_names(tmp_path):
    f = ibnetdiscover.read(VOLTAIRE)
    hcas = sorted(f.names[i] for i in range(f.num_nodes) if f.types[i] == CA)
    assert hcas == [f"MT23108 InfiniHost Mellanox Technologies ({g})" for g in
                    ("0x0008f10403960558", "0x0008f10403960984", "0x0008f10403961354", "0x005442b100004900")]
    rep, _ = topo("--plan", VOLTAIRE, "--discovered", VOLTAIRE, code=4)
    assert "MT23108 InfiniHost Mellanox Technologies (0x0008f10403960558) port 1" in rep["degraded_links"][1]["text"]
    # names from a node-name-map win; where the map repeats a name, the GUID is added
    nnm = write(tmp_path, "map", '0x0008f10403960558 "node01"\n0x0008f10403960984 "node02"\n'
                                 '0x005442b100004900 "spare"\n0x0008f10403961354 "spare"\n')
    mapped = ibnetdiscover.read(VOLTAIRE, node_name_map.read(nnm))
    assert sorted(mapped.names[i] for i in range(mapped.num_nodes) if mapped.types[i] == CA) == [
        "node01", "node02", "spare (0x0008f10403961354)", "spare (0x005442b100004900)"]
    r = ibtool("verify", "topology", "--plan", VOLTAIRE, "--discovered", VOLTAIRE, "--node-name-map", nnm)
    assert r.returncode == 4 and "(found as 'node01', GUID 0x0008f10403960558) port 1 came up 1xSDR" in r.stdout
