import numpy as np
import pytest

from support import FIXTURES
from ibtool.errors import InputError
from ibtool.formats import ibnetdiscover, lft, node_name_map
from ibtool.topologies.kns import kns


@pytest.mark.parametrize("args", [dict(k=6, n=2, radix=8), dict(k=4, n=3, hcas_per_router=2, multiplicity=2),
                                  dict(k=8, n=2, s=2, radix=8)])
def test_net_round_trip(tmp_path, args):
    f = kns(**args)
    ibnetdiscover.write(f, tmp_path / "t.net")
    g = ibnetdiscover.read(tmp_path / "t.net")
    assert g.names == f.names
    assert g.guids == f.guids
    assert g.types == f.types and g.nports == f.nports
    assert g.link_set() == f.link_set()
    hca = f.index("H[0,1]" if args.get("hcas_per_router", 1) == 1 else "H[0,1,0]-1")
    assert g.port_guid(hca, 1) == f.port_guid(hca, 1)


def test_node_name_map_round_trip(tmp_path):
    f = kns(3, 2, radix=8)
    node_name_map.write(f, tmp_path / "map")
    m = node_name_map.read(tmp_path / "map")
    assert m == dict(zip(f.guids, f.names))
    # names from the map win over node descriptions
    ibnetdiscover.write(f, tmp_path / "t.net")
    renamed = {g: f"node{i:03d}" for i, g in enumerate(f.guids)}
    (tmp_path / "map2").write_text("".join(f'{g:#x} "{n}"\n' for g, n in renamed.items()))
    g = ibnetdiscover.read(tmp_path / "t.net", node_name_map.read(tmp_path / "map2"))
    assert g.names == [renamed[x] for x in f.guids]


def test_real_dump_details():
    f = ibnetdiscover.read(FIXTURES / "ibnetdiscover" / "edr-2switch.out")
    assert f.count(kind=2) == 2 and f.count(kind=1) == 3
    sw1 = f.index("MF0;ibsw01:MSB7800/U1")
    node01 = f.index("node01 HCA-1")
    assert f.nports[node01] == 2
    assert f.peer(node01, 1) == (sw1, 1) and f.peer(node01, 2) == (sw1, 2)
    assert f.port_guid(node01, 2) == 0x0C42A10300A1B2C1
    owners = f.lid_owners()
    node02 = f.index("node02 HCA-1")
    assert owners[5] == owners[6] == (node02, 1)  # LMC 1 gives two LIDs
    assert owners[1] == (sw1, 0)
    rates = sorted(r for r in f.link_rate)
    assert rates.count("4xDDR") == 1 and rates.count("4xEDR") == 5


def test_ibsim_plain_style(tmp_path):
    p = tmp_path / "plain.net"
    p.write_text('Switch\t8 "Switch1"\n[1]\t"Hca1"[1]\n[3]\t"Switch2"[3]\tw=4\n\n'
                 'Switch 8 "Switch2"\n[3]\t"Switch1"[3]\n\nHca\t2 "Hca1"\n[1]\t"Switch1"[1]\n')
    f = ibnetdiscover.read(p)
    assert f.names == ["Switch1", "Switch2", "Hca1"]
    assert f.num_links == 2


@pytest.mark.parametrize("text,line,needle", [
    ('Switch\t8 "S1"\n[9]\t"S2"[1]\n\nSwitch\t8 "S2"\n[1]\t"S1"[9]\n', 2, "port 9"),
    ('Switch\t8 "S1"\n[1]\t"S2"[1]\n\nSwitch\t8 "S2"\n[1]\t"S3"[1]\n\nSwitch\t8 "S3"\n[1]\t"S2"[1]\n', 2, "says it links"),
    ('Switch\t8 "S1"\n[1]\t"S9"[1]\n', 2, "unknown node"),
    ('Switch\t8 "S1"\nthis is not a port line\n', 2, "unrecognised line"),
    ('Switch\t999 "S1"\n', 1, "1..254"),
    ('[1]\t"S1"[1]\n', 1, "outside a node record"),
])
def test_malformed_net(tmp_path, text, line, needle):
    p = tmp_path / "bad.net"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        ibnetdiscover.read(p)
    assert f"bad.net:{line}:" in str(e.value) and needle in str(e.value)


def test_lft_dump_fts_and_file_engine_round_trip(tmp_path):
    src = FIXTURES / "lft" / "cellia-minhop.dump_fts"
    t = lft.read(src)
    assert len(t.lft) == 48
    assert all(len(a) == 85 for a in t.lft.values())
    lft.write_file_engine(t, tmp_path / "lfts")
    text = (tmp_path / "lfts").read_text()
    assert text.endswith("\n")
    u = lft.read(tmp_path / "lfts")
    assert t.lft.keys() == u.lft.keys()
    assert all(np.array_equal(t.lft[g], u.lft[g]) for g in t.lft)


def test_lft_opensm_dump_equals_dump_fts():
    a = lft.read(FIXTURES / "lft" / "cellia-minhop.dump_fts")
    b = lft.read(FIXTURES / "lft" / "cellia-minhop.opensm-lfts.dump")
    assert a.lft.keys() == b.lft.keys()
    assert all(np.array_equal(a.lft[g], b.lft[g]) for g in a.lft)


@pytest.mark.parametrize("text,line", [
    ("0x0001 001\n", 1),
    ("Unicast lids [0x0-0x2] of switch Lid 1 guid 0x1 ('a'):\n0x0001 001\n0xzz 1\n", 3),
    ("Unicast lids [0x0-0x2] of switch Lid 1 guid 0x1 ('a'):\n0x0001 999\n", 2),
])
def test_malformed_lft(tmp_path, text, line):
    p = tmp_path / "bad.lft"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        lft.read(p)
    assert f"bad.lft:{line}:" in str(e.value)


LFT_DUMPS = [FIXTURES / "real" / "ibsim-kns-k3-n2-minhop-run" / "dump_fts.out",
             FIXTURES / "real" / "ibsim-kns-k3-n2-minhop-run" / "osm" / "opensm-lfts.dump",
             FIXTURES / "real" / "ibsim-kns-k3-n2-minhop-run" / "osm" / "opensm.fdbs",
             FIXTURES / "real" / "ndr-2sw.dump_fts", FIXTURES / "lft" / "cellia-minhop.dump_fts"]


def _tables(t):
    return list(t.lft), t.names, t.lines, [a.tolist() for a in t.lft.values()]


@pytest.mark.parametrize("path", LFT_DUMPS, ids=lambda p: p.name)
def test_lft_tables_do_not_depend_on_where_chunks_end(monkeypatch, path):
    """The reader builds each table as it goes, chunk by chunk: a table, a header or a line cut by
    a chunk's end reads the same as in one piece (chunks of a few bytes put an end everywhere)."""
    want = _tables(lft.read(path))
    assert want[0] and all(len(a) == len(want[3][0]) for a in want[3])
    for size in (23, 61, 4096):
        monkeypatch.setattr(lft, "_CHUNK", size)
        assert _tables(lft.read(path)) == want, size


@pytest.mark.parametrize("size", [17, 1 << 20])
def test_lft_multicast_blocks_and_error_order(tmp_path, monkeypatch, size):
    """Entries of a multicast block are skipped even when out of the unicast range; of several
    problems the first bad entry of a unicast table is told before a switch listed twice, as
    before the one-pass reader (its errors are judged after the whole file)."""
    monkeypatch.setattr(lft, "_CHUNK", size)
    head = "Unicast lids [0x0-0x3] of switch Lid 1 guid {} ('sw'):\n  Lid  Out   Destination\n       Port     Info \n"
    mc = ("Multicast mlids [0xc000-0xc3ff] of switch Lid 1 guid 0x0000000000000001 ('sw'):\n"
          "0xc000 1 2 3\n0xc001 000 : (x)\n")
    text = (head.format("0x0000000000000001") + "0x0001 004 : (Switch portguid 0x1: 'a')\n0x0003 002\n"
            "2 valid lids dumped\n" + mc + head.format("0x0000000000000002") + "0x0002 001\n1 valid lids dumped\n")
    p = tmp_path / "dump_fts.out"
    p.write_text(text)
    t = lft.read(p)
    assert t.max_lid == 3 and t.lft[1].tolist() == [255, 4, 255, 2] and t.lft[2].tolist() == [255, 255, 1, 255]
    assert t.lines == {1: 1, 2: 10} and t.names == {1: "sw", 2: "sw"}
    p.write_text(text.replace("0x0000000000000002", "0x0000000000000001").replace("0x0002 001", "0x0002 255"))
    with pytest.raises(InputError) as e:
        lft.read(p)
    assert str(e.value).endswith("dump_fts.out:13: port 255 of LID 0x0002 is outside 0..254")


def test_lft_memory_does_not_grow_with_the_dump(tmp_path):
    """Numpy memory while reading a dump of 6 M entries (66 MB) stays at a chunk's work plus the
    table matrix (6 MB), far below the 16 bytes an entry that collecting every entry first took
    (the 557 MB dump of KNS 12-ary 3-direct needed 1.1 GiB that way)."""
    import tracemalloc
    switches, lids = 2000, 3000
    block = "".join(f"{lid:#06x} {lid % 36 + 1:03d}\n" for lid in range(1, lids + 1)).encode()
    p = tmp_path / "lfts"
    with open(p, "wb") as fh:
        for s in range(switches):
            fh.write(f"Unicast lids [0x0-{lids:#x}] of switch Lid 0 guid {s + 1:#018x} ('s{s}'):\n".encode())
            fh.write(block)
    tracemalloc.start()
    try:
        t = lft.read(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(t.lft) == switches and t.max_lid == lids and int(t.lft[switches][lids]) == lids % 36 + 1
    assert peak < 48 << 20, peak


def test_path_sls_in_bulk_as_line_by_line(tmp_path, monkeypatch):
    """A saquery-paths.out in pathrecord.write's layout (every `sim run --path-sls`) is read in bulk
    (numpy over its bytes): the same pairs and SLs as the line-by-line reader, a later record of a
    pair winning and the SA's LID-0 padding dropped; any other file (saquery's own layout, a leading
    zero) goes line by line, with that reader's verdicts and errors."""
    import random

    from ibtool.formats import pathrecord
    rnd = random.Random(7)
    sls = {(s, d): rnd.randrange(16) for s in range(1, 40) for d in (1, 2, 9, 10, 99, 100, 4095, 49151) if s != d}
    pathrecord.write(sls, tmp_path / "w.out")
    written = (tmp_path / "w.out").read_text()
    extra = ("PathRecord dump:\n\t\tdlid....................2\n\t\tslid....................1\n"
             "\t\tsl......................0xc\n"  # the pair again, later: it wins
             "PathRecord dump:\n\t\tdlid....................0\n\t\tslid....................0\n"
             "\t\tsl......................0x0\n")  # the SA's padding
    (tmp_path / "w.out").write_text(written + extra)
    fast = pathrecord.read(tmp_path / "w.out")
    table = pathrecord.read_table(tmp_path / "w.out")
    monkeypatch.setattr(pathrecord, "_written_arrays", lambda path: None)
    slow = pathrecord.read(tmp_path / "w.out")
    assert dict(fast) == dict(slow) == {**sls, (1, 2): 12} and fast.path == slow.path
    ref = pathrecord.PathSLTable.of(slow)
    assert (table.keys == ref.keys).all() and (table.sls == ref.sls).all() and len(table) == len(sls)
    got, found = table.lookup(np.array([1, 3, 1]), np.array([2, 49151, 1]))
    assert got.tolist() == [12, sls[(3, 49151)], 0] and found.tolist() == [True, True, False]
    assert table.get((1, 2)) == 12 and table.get((1, 1)) is None
    monkeypatch.undo()
    # saquery's own records (more fields, other padding) and a leading zero: line by line
    saquery = "".join(f"PathRecord dump:\n\t\tservice_id..............0x0000000000000000\n\t\tdlid....................{d}\n"
                      f"\t\tslid....................{s}\n\t\tsl......................{v:#x}\n\t\tmtu.....................0x4\n"
                      for (s, d), v in sls.items())
    (tmp_path / "s.out").write_text(saquery)
    assert pathrecord._written_arrays(str(tmp_path / "s.out")) is None
    assert dict(pathrecord.read(tmp_path / "s.out")) == sls
    (tmp_path / "z.out").write_text(written.replace("dlid....................9\n", "dlid....................09\n", 1))
    with pytest.raises(InputError, match="dlid '09' is not a number"):
        pathrecord.read(tmp_path / "z.out")
    with pytest.raises(InputError, match="dlid '09' is not a number"):
        pathrecord.read_table(tmp_path / "z.out")


def test_sl2vl_rows_shared_by_text_read_as_before(tmp_path):
    """The SL2VL reader keeps one tuple per distinct row text: every (in, out) row still maps to its
    16 VLs, and a bad row is still the one-line error at its line."""
    from ibtool.formats import sl2vl
    head = "#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15\n"
    rows = ["0   1   : 0  1  2  3  4  5  6  7  0  1  2  3  4  5  6  7 ", "1   2   : 0  0  0  0  0  0  0  0  0  0  0  0  0  0  0  0",
            "2   1   : 0  1  2  3  4  5  6  7  0  1  2  3  4  5  6  7"]
    text = ('Switch 0x0002c90000000010, base LID 1, "R[0,0]"\n' + head + "\n".join(rows) + "\n"
            'Switch 0x0002c90000000011, base LID 2, "R[0,1]"\n' + head + "\n".join(rows[:2]) + "\n")
    (tmp_path / "d").write_text(text)
    t = sl2vl.read(tmp_path / "d")
    assert t[0x2c90000000010][(0, 1)] == t[0x2c90000000010][(2, 1)] == t[0x2c90000000011][(0, 1)] == (0, 1, 2, 3, 4, 5, 6, 7) * 2
    assert t[0x2c90000000011][(1, 2)] == (0,) * 16 and t.lines == {0x2c90000000010: 1, 0x2c90000000011: 6}
    (tmp_path / "bad").write_text(text.replace("2   1   : 0  1", "2   1   : 0  17", 1))
    with pytest.raises(InputError, match="VL out of range") as e:
        sl2vl.read(tmp_path / "bad")
    assert e.value.line == 5
