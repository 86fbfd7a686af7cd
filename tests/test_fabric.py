import pytest

from ibtool.errors import InputError
from ibtool.fabric import Fabric


def small():
    f = Fabric("t")
    s1 = f.add_switch("sw1", 4)
    s2 = f.add_switch("sw2", 4)
    h = f.add_hca("h1", 2)
    f.add_link(s1, s2, 3, 3)
    f.add_link(s1, h, 1, 1)
    return f, s1, s2, h


def test_port_used_once():
    f, s1, s2, h = small()
    with pytest.raises(InputError, match=r"sw1 port 3 is already cabled \(to sw2\[3\]\)"):
        f.add_link(s1, h, 3, 2)


def test_port_must_exist():
    f, s1, s2, h = small()
    with pytest.raises(InputError, match="sw2 has 4 ports; port 5 does not exist"):
        f.add_link(s2, h, 5, 2)


def test_no_self_links_and_unique_names():
    f, s1, s2, h = small()
    with pytest.raises(InputError, match="to itself"):
        f.add_link(s1, s1)
    with pytest.raises(InputError, match="duplicate node name"):
        f.add_switch("sw1", 8)


def test_auto_ports_take_lowest_free():
    f, s1, s2, h = small()
    li = f.add_link(s2, h)
    assert (f.link_pa[li], f.link_pb[li]) == (1, 2)


def test_array_adjacency_agrees_with_links():
    f, s1, s2, h = small()
    p = f.ports()
    for node in range(f.num_nodes):
        for port in range(f.nports[node] + 1):
            peer = f.peer(node, port)
            slot = p.slot(node, port)
            if peer is None:
                assert p.peer[slot] == -1
            else:
                assert (p.peer[slot], p.peer_port[slot]) == peer
                assert f.peer(*peer) == (node, port)  # link ends agree
