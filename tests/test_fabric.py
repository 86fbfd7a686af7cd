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


def test_switch_graph_lists_switch_links_by_port_with_filters():
    """The one switch adjacency: every switch-switch link from both ends (a parallel cable
    twice), by port, HCAs left out; a node filter keeps the order given, a port mask drops links."""
    import numpy as np

    from ibtool.fabric import switch_graph
    f, s1, s2, h = small()
    s3 = f.add_switch("sw3", 4)
    f.add_link(s2, s3, 1, 2)
    f.add_link(s1, s2, 4, 4)  # parallel to port 3's cable
    g = switch_graph(f)
    assert g.nodes.tolist() == [s1, s2, s3] and g.vertex.tolist() == [0, 1, -1, 2]
    rows = [list(zip(g.port[a:b].tolist(), g.indices[a:b].tolist())) for a, b in zip(g.indptr[:-1], g.indptr[1:])]
    assert rows == [[(3, 1), (4, 1)], [(1, 2), (3, 0), (4, 0)], [(2, 1)]]
    g = switch_graph(f, [s3, s2])  # sw1 left out; vertices in the order given
    assert g.indptr.tolist() == [0, 1, 2] and g.indices.tolist() == [1, 0] and g.port.tolist() == [2, 1]
    working = np.ones(len(f.ports().peer), dtype=bool)
    working[f.ports().slot(s2, 1)] = False  # the sw2-sw3 cable down: both its slots
    working[f.ports().slot(s3, 2)] = False
    g = switch_graph(f, working=working)
    assert g.indptr.tolist() == [0, 2, 4, 4] and g.indices.tolist() == [1, 1, 0, 0]
