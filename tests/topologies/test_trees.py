"""Tree families (fattree, clos, sft, mikant, kantc, mikantc): counts against the closed forms of
paper 001 (section II.B, Theorems 2-4 and 7-9), labels and port numbering as the docstrings state,
and one-line refusals."""

import pytest

from support import ibtool
from ibtool.errors import InputError
from ibtool.topologies.fattree import clos, fattree
from ibtool.topologies.kantc import intermediates, kantc, mikant, mikantc
from ibtool.topologies.sft import sft

SWEEP = [(k, n) for k in (2, 3, 4, 5) for n in (2, 3, 4)] + [(6, 2), (8, 2), (6, 3)]


def counts(f):
    s = f.summary()
    return s["hcas"], s["switches"], s["links"]


@pytest.mark.parametrize("k,n", SWEEP + [(3, 1), (2, 5)])
def test_k_ary_n_tree_counts(k, n):
    assert counts(fattree(k, n)) == (k ** n, n * k ** (n - 1), n * k ** n)


@pytest.mark.parametrize("k,n", SWEEP)
def test_mikant_counts(k, n):
    assert counts(mikant(k, n)) == (2 * k ** n, (2 * n - 2) * k ** (n - 1), (2 * n - 1) * k ** n)


@pytest.mark.parametrize("k,n", SWEEP)
def test_kantc_counts_theorems_2_to_4(k, n):
    f = kantc(k, n)
    assert counts(f) == ((2 ** k - k) * k ** (n - 1),                                    # Theorem 2
                         (n - 1) * k ** (n - 1) + 2 ** k * k ** (n - 2),                  # Theorem 3
                         (n - 1) * k ** n + (2 ** (k - 1) + 2 ** k - k) * k ** (n - 1))   # Theorem 4
    assert max(len(f.neighbors(i)) for i in range(f.num_nodes)) == 2 * k                # Theorem 1


@pytest.mark.parametrize("k,n", SWEEP)
def test_mikantc_counts_theorems_7_to_9(k, n):
    f = mikantc(k, n)
    assert counts(f) == (2 * (2 ** k - k) * k ** (n - 1),                                 # Theorem 7
                         (2 * n - 4) * k ** (n - 1) + 2 ** (k + 1) * k ** (n - 2),         # Theorem 8
                         (2 * n - 3) * k ** n + (3 * 2 ** k - 2 * k) * k ** (n - 1))       # Theorem 9
    assert all(len(f.neighbors(i)) == 2 * k for i in range(f.num_nodes) if f.is_switch(i))  # Theorem 6


def test_paper_examples():
    """Paper 001: a 3-ary 3-tree has 27 nodes, 27 switches, 81 links; MiKANT(3,3) 36 switches,
    54 nodes, 135 links; KANTC(3,4) 9 cubes and 135 nodes; MiKANTC(3,4) 18 cubes and 270 nodes."""
    assert counts(fattree(3, 3)) == (27, 27, 81)
    assert counts(mikant(3, 3)) == (54, 36, 135)
    f = kantc(3, 4)
    assert counts(f)[0] == 135 and len({lab["cube"] for lab in f.labels if "c" in lab}) == 9
    f = mikantc(3, 4)
    assert counts(f)[0] == 270 and len({(lab["group"], lab["cube"]) for lab in f.labels if "c" in lab}) == 18


def test_intermediate_switches():
    """Section III.A's example for k = 4, and k distinct labels for every k (odd k included)."""
    assert sorted(intermediates(4)) == [0b0000, 0b0110, 0b1001, 0b1111]
    assert intermediates(3) == [0b000, 0b010, 0b111]
    for k in range(2, 12):
        labels = intermediates(k)
        assert len(labels) == len(set(labels)) == k and labels[0] == 0 and (2 ** k - 1) in labels


def test_fattree_labels_and_ports():
    """<L,w> links to <L+1,w'> iff w, w' differ only in digit L; down port 1+u, up port k+1+v."""
    k, n = 3, 3
    f = fattree(k, n)
    s = f.index("S[1,2,0]")
    assert [f.names[b] for p, b, _ in f.neighbors(s)] == ["S[0,2,0]", "S[0,2,1]", "S[0,2,2]",
                                                           "S[2,0,0]", "S[2,1,0]", "S[2,2,0]"]
    assert [f.names[b] for _, b, _ in f.neighbors(f.index("S[0,1,2]"))] == [
        "H[1,2,0]", "H[1,2,1]", "H[1,2,2]", "S[1,1,0]", "S[1,1,1]", "S[1,1,2]"]
    # every link: levels differ by one and words only in the lower level's digit
    for a, b in zip(f.link_a, f.link_b):
        la, lb = f.labels[a], f.labels[b]
        if f.is_switch(a) and f.is_switch(b):
            lo, hi = sorted((la, lb), key=lambda x: x["level"])
            assert hi["level"] == lo["level"] + 1
            diff = [i for i in range(n - 1) if lo["word"][i] != hi["word"][i]]
            assert diff in ([], [n - 2 - lo["level"]])
    assert f.count(role="root") == k ** (n - 1)


def test_fattree_hcas_per_leaf_and_radix():
    f = fattree(4, 2, hcas_per_leaf=8, radix=16)
    assert counts(f) == (32, 8, 32 + 16)
    assert f.nports[f.index("S[0,0]")] == 16


def test_kantc_cube_and_intermediate_wiring():
    k, n = 3, 3
    f = kantc(k, n)
    I = intermediates(k)
    # a cube switch's port i+1 flips bit C_i
    c = f.index("C[1,101]")
    assert [f.names[b] for _, b, _ in f.neighbors(c)][:3] == ["C[1,100]", "C[1,111]", "C[1,001]"]
    assert [f.names[b] for _, b, _ in f.neighbors(c)][3:] == ["H[1,101,0]", "H[1,101,1]", "H[1,101,2]"]
    # I_j of cube (1) is the tree's leaf <0,(1,j)>: up port k+1+v to S[1,1,v], whose down port is j+1
    for j, x in enumerate(I):
        i = f.index(f"C[1,{x:03b}]")
        assert f.roles[i] == "intermediate" and f.labels[i]["word"] == (1, j)
        for v in range(k):
            assert f.peer(i, k + 1 + v) == (f.index(f"S[1,1,{v}]"), j + 1)


def test_mikant_mirror_links():
    """Paper 001 III.B's example, on MiKANT(3,4): <0,2,1,1,0> links to <1,2,*,1,0>."""
    f = mikant(3, 4)
    s = f.index("S[0,2,1,1,0]")
    assert [f.names[b] for p, b, _ in f.neighbors(s) if p > 3] == ["S[1,2,0,1,0]", "S[1,2,1,1,0]", "S[1,2,2,1,0]"]
    assert f.peer(s, 4) == (f.index("S[1,2,0,1,0]"), 3 + 1 + 1)


def test_mikantc_n2_joins_the_two_cubes():
    f = mikantc(3, 2)
    a = f.index("C[0,010]")  # I_1 of group 0
    assert [f.names[b] for p, b, _ in f.neighbors(a) if p > 3] == ["C[1,000]", "C[1,010]", "C[1,111]"]


def test_sft_cellia_presets():
    """Paper 000 Fig. 8: 21 switches in three stages, 3 groups x 3 subgroups x 5 nodes, parallel
    top links, 8-port switches; cellia36 one node fewer per subgroup."""
    f = sft(preset="cellia")
    assert counts(f) == (45, 21, 45 + 27 + 18)
    assert [f.count(role=r) for r in ("leaf", "middle", "root")] == [9, 9, 3]
    assert max(len(f.neighbors(i)) for i in range(f.num_nodes)) <= 8 == f.params["radix"]
    t = f.index("T[1,0]")
    assert [f.names[b] for _, b, _ in f.neighbors(t)] == ["M[0,1]", "M[0,1]", "M[1,1]", "M[1,1]", "M[2,1]", "M[2,1]"]
    assert counts(sft(preset="cellia36")) == (36, 21, 36 + 27 + 18)


def test_clos_two_and_three_levels():
    f = clos(8, 18, 18)
    assert counts(f) == (144, 26, 144 + 8 * 18)
    assert f.peer(f.index("L[3]"), 18 + 1 + 5) == (f.index("P[5]"), 4)
    f = clos(40, 18, 18, levels=3)  # pods of 18 leaves: 3 pods; 18 planes of 18 cores
    assert counts(f) == (720, 40 + 3 * 18 + 18 * 18, 720 + 40 * 18 + 3 * 18 * 18)
    assert f.peer(f.index("P[2,4]"), 18 + 1 + 7) == (f.index("C[4,7]"), 3)


@pytest.mark.parametrize("build,kw,needle", [
    (fattree, dict(k=4, n=3, radix=7), "leaf switch S[0,0,0] needs 8 ports (4 HCAs + 4 up-links) but the switch radix is 7"),
    (fattree, dict(k=4, n=3, hcas_per_leaf=6, radix=8), "S[0,0,0] needs 10 ports (6 HCAs + 4 up-links)"),
    (fattree, dict(k=1, n=3), "--k must be >= 2, got 1"),
    (fattree, dict(k=4, n=0), "--n must be >= 1, got 0"),
    (fattree, dict(k=64, n=9), "beyond what ibtool builds"),
    (kantc, dict(k=3, n=3, radix=5), "cube switch C[0,000] needs 6 ports (3 cube + 3 up-links) but the switch radix is 5"),
    (kantc, dict(k=3, n=1), "--n must be >= 2, got 1"),
    (kantc, dict(k=30, n=3), "beyond what ibtool builds"),
    (mikant, dict(k=4, n=3, radix=6), "leaf switch S[0,0,0,0] needs 8 ports (4 HCA + 4 up-links)"),
    (mikantc, dict(k=1, n=3), "--k must be >= 2"),
    (sft, dict(preset="cellia", radix=4), "--preset cellia sets every other option"),
    (sft, dict(preset="nope"), "--preset must be one of cellia, cellia36"),
    (sft, dict(groups=3, leaves=3, hcas_per_leaf=6, middle=3, radix=8), "leaf E[0,0] needs 9 ports (6 HCAs + 3 uplinks)"),
    (sft, dict(groups=5, leaves=3, hcas_per_leaf=4, middle=3, top_links=2, radix=8), "top T[0,0] needs 10 ports"),
    (sft, dict(groups=3), "--leaves is required"),
    (clos, dict(leaves=40, hcas_per_leaf=18, uplinks=18), "spine P[0] needs 40 ports (one link from each of 40 leaves) but the switch radix is 36; use --levels 3"),
    (clos, dict(leaves=8, hcas_per_leaf=20, uplinks=18), "leaf L[0] needs 38 ports"),
    (clos, dict(leaves=8, hcas_per_leaf=2, uplinks=2, levels=3, radix=7), "--radix must be even, got 7"),
    (clos, dict(leaves=8, hcas_per_leaf=2, uplinks=2, levels=4), "--levels must be 2 or 3"),
    (clos, dict(leaves=100, hcas_per_leaf=2, uplinks=2, levels=3, radix=8), "core C[0,0] needs 25 ports"),
])
def test_refusals(build, kw, needle):
    with pytest.raises(InputError) as e:
        build(**kw)
    assert needle in str(e.value)


def test_cli_refusal_is_one_line_exit_2_and_writes_nothing(tmp_path):
    out = tmp_path / "plan"
    r = ibtool("topo", "kantc", "--k", "4", "--n", "3", "--radix", "6", "--out", out, check=2)
    assert r.stderr.strip().count("\n") == 0 and "cube switch C[0,0000] needs 8 ports" in r.stderr
    assert "Traceback" not in r.stderr and not out.exists()


def test_cli_writes_plan_and_engine_files(tmp_path):
    out = tmp_path / "ft"
    ibtool("topo", "fattree", "--k", "3", "--n", "3", "--out", out, check=0)
    conf = (out / "opensm.conf").read_text()
    assert "routing_engine ftree" in conf
    # named relative to the plan, so it can be moved (sim run makes them absolute for OpenSM)
    assert "\nroot_guid_file root-guids\n" in conf and "\ncn_guid_file cn-guids\n" in conf
    assert len((out / "root-guids").read_text().split()) == 9 and len((out / "cn-guids").read_text().split()) == 27
    out = tmp_path / "mk"
    ibtool("topo", "mikantc", "--k", "3", "--n", "3", "--out", out, check=0)
    assert "routing_engine updn" in (out / "opensm.conf").read_text()
    assert len((out / "root-guids").read_text().split()) == 1
